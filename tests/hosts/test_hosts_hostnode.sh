#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_hostnode.sh: a controller on head and a host node with four
# banyan engines on each of two test hosts (doc/hosts.md), started by hand
# as a launcher would: every engine registers through its host node; a 1 MiB
# push through the broadcast tree crosses each host's link once, through
# the mux four times; a host whose link goes down loses its engines within
# the heartbeat bound (a broadcast's other half is answered, its half fails
# with EngineError naming the host node that stopped answering), and when
# the link comes back they are served again under the same ids.
. "$(dirname "$0")/hoststest.sh"
bin=${BN_BUILD_DIR:-$(dirname "$0")/../../build/dev}/bin
hosts up 2 --no-ssh || fail "hosts up 2"
work=$(mktemp -d)
trap 'hosts down; rm -rf "$work"' EXIT
ctl=$work/ctl
banyan () { "$bin/banyan" "$1" --profile-dir "$ctl" "${@:2}"; }
count () { banyan engines 2> /dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/' | wc -l; }
has () { [ "$(count)" = "$1" ]; }

# the bound: more than 6 missed pings of 500 ms
hosts start head ctl "$bin/banyan-controller" --profile-dir "$ctl" \
    --ip "$HOSTS_HEAD" --ping 500ms --heartbeat-misses 6 > /dev/null
hosts_poll 20 test -s "$ctl/security/ipcontroller-engine.json" \
    || fail "the controller wrote no engine file"
info=$(cat "$ctl/security/ipcontroller-engine.json")
for h in h1 h2; do
    hosts start "$h" "node-$h" env BANYAN_CONNECTION_INFO="$info" \
        "$bin/banyan-scheduler" --host --profile-dir "$work/$h" > /dev/null
done
for h in h1 h2; do
    hosts_poll 20 test -s "$work/$h/security/ipcontroller-engine.json" \
        || fail "the host node of $h wrote no connection file"
    hosts start "$h" "engines-$h" env -u BANYAN_CONNECTION_INFO \
        "$bin/banyan-engine" --count 4 --profile-dir "$work/$h" > /dev/null
done
hosts_poll 30 has 8 || fail "8 engines did not register (have $(count))"
echo "ok: 8 engines on two hosts registered through their host nodes"

out=$(banyan px hostname | sed 's/^\[stdout:[0-9]*\] //')
expect_lines "px hostname through the tree: each host's name for its engines" \
    "$(printf 'h1\nh1\nh1\nh1\nh2\nh2\nh2\nh2')" "$out"
out=$(banyan px --direct hostname | sed 's/^\[stdout:[0-9]*\] //')
expect_lines "px --direct hostname: the same" \
    "$(printf 'h1\nh1\nh1\nh1\nh2\nh2\nh2\nh2')" "$out"

# 1 MiB to all 8 engines: once per host through the tree
head -c 1048576 /dev/urandom > "$work/payload"
mib=1048576
b1=$(hosts bytes h1) b2=$(hosts bytes h2)
banyan push --broadcast -q blob "$work/payload" || fail "push --broadcast"
t1=$(($(hosts bytes h1) - b1)) t2=$(($(hosts bytes h2) - b2))
echo "push --broadcast: $t1 bytes into h1, $t2 into h2"
[ "$t1" -ge "$mib" ] && [ "$t1" -lt $((mib * 11 / 10)) ] \
    && [ "$t2" -ge "$mib" ] && [ "$t2" -lt $((mib * 11 / 10)) ] \
    || fail "a broadcast push moved $t1 and $t2 bytes into the hosts, not 1-1.1 MiB"
b1=$(hosts bytes h1) b2=$(hosts bytes h2)
banyan push -q blob "$work/payload" || fail "push"
m1=$(($(hosts bytes h1) - b1)) m2=$(($(hosts bytes h2) - b2))
echo "push through the mux: $m1 bytes into h1, $m2 into h2"
[ "$m1" -ge $((4 * mib)) ] && [ "$m2" -ge $((4 * mib)) ] \
    || fail "a push through the mux moved $m1 and $m2 bytes, not 4 MiB each"
echo "ok: 1 MiB crosses each host's link once through the tree, 4 times through the mux"

# h1's link goes down with a broadcast on its way: its engines are lost
# within the bound, the broadcast's h2 half is answered
before=$(banyan engines | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1, $2}' | sort)
h1_ids=$(banyan px 'echo $BANYAN_ENGINE_ID $(hostname)' \
             | awk '$3 == "h1" {print $2}' | sort -n | tr '\n' ' ')
[ "$(wc -w <<< "$h1_ids")" = 4 ] || fail "h1's engines: '$h1_ids'"
hosts link h1 down || fail "hosts link h1 down"
t0=$EPOCHREALTIME
banyan px 'sleep 1; echo done' > "$work/px.out" 2> "$work/px.err" &
px=$!
hosts_poll 20 has 4 || fail "h1's engines were not lost (have $(count))"
lost=$(bc <<< "$EPOCHREALTIME - $t0")
echo "h1's engines lost after $lost s (the bound: 3.5 s, then requests get 0.5 s)"
[ "$(bc <<< "$lost < 10")" = 1 ] || fail "h1's engines were lost only after $lost s"
wait "$px"
[ "$(grep -c 'done$' "$work/px.out")" = 4 ] || fail "the broadcast's h2 half: $(cat "$work/px.out")"
for id in $h1_ids; do
    grep -qxF "[status:$id] EngineError: the engine was lost: host node on h1 ($HOSTS_NET.1) stopped answering" \
        "$work/px.err" || fail "engine $id's slot did not fail with EngineError naming h1's host node: $(cat "$work/px.err")"
done
echo "ok: h1's link down: its engines lost in $lost s, their slots failed, h2's answered"

hosts link h1 up || fail "hosts link h1 up"
hosts_poll 60 has 8 || fail "h1's engines did not come back (have $(count))"
after=$(banyan engines | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1, $2}' | sort)
[ "$after" = "$before" ] || fail "engines came back as $after, not $before"
hosts_poll 20 bash -c '[ "$("$0" px --profile-dir "$1" hostname | grep -c " h1$")" = 4 ]' \
    "$bin/banyan" "$ctl" || fail "h1's engines are not served again"
echo "ok: h1's link up: its engines are served again under the same ids and uuids"
