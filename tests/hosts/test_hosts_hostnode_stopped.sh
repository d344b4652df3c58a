#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_hostnode_stopped.sh: a host node (banyan-scheduler --host,
# doc/hosts.md) stopped with SIGSTOP, alive but silent, with two engines
# behind it: the hub loses them within the heartbeat bound, and requests
# to them through the broadcast tree and through the mux fail with
# EngineError naming each engine and the host node that stopped answering
# (its host and address; so for the stock client too), while the other
# host's engines answer;
# continued with SIGCONT, the host node registers its engines again under
# the same ids and uuids and they are served, through both paths.
. "$(dirname "$0")/hoststest.sh"
bin=${BN_BUILD_DIR:-$(dirname "$0")/../../build/dev}/bin
here=$(cd "$(dirname "$0")" && pwd)
hosts up 2 --no-ssh || fail "hosts up 2"
work=$(mktemp -d)
node= stock=
# a stopped node would keep its host from being torn down
trap '[ -n "$node" ] && kill -CONT "$node" 2> /dev/null
      [ -n "$stock" ] && kill "$stock" 2> /dev/null; hosts down; rm -rf "$work"' EXIT
ctl=$work/ctl
banyan () { "$bin/banyan" "$1" --profile-dir "$ctl" "${@:2}"; }
count () { banyan engines 2> /dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/' | wc -l; }
has () { [ "$(count)" = "$1" ]; }
on_h1 () { banyan px 'echo $BANYAN_ENGINE_ID $(hostname)' 2> /dev/null | awk '$3 == "h1" {print $2}' | sort -n | tr '\n' ' '; }

# the bound: more than 6 missed pings of 500 ms; an engine behind the
# stopped node waits 50 missed pings (engine.heartbeat_misses) before it
# leaves, far longer than the stop lasts
hosts start head ctl "$bin/banyan-controller" --profile-dir "$ctl" \
    --ip "$HOSTS_HEAD" --ping 500ms --heartbeat-misses 6 > /dev/null
hosts_poll 20 test -s "$ctl/security/ipcontroller-engine.json" \
    || fail "the controller wrote no engine file"
info=$(cat "$ctl/security/ipcontroller-engine.json")
for h in h1 h2; do
    pid=$(hosts start "$h" "node-$h" env BANYAN_CONNECTION_INFO="$info" \
              "$bin/banyan-scheduler" --host --profile-dir "$work/$h") \
        || fail "hosts start $h node"
    [ "$h" = h1 ] && node=$pid
done
for h in h1 h2; do
    hosts_poll 20 test -s "$work/$h/security/ipcontroller-engine.json" \
        || fail "the host node of $h wrote no connection file"
    hosts start "$h" "engines-$h" env -u BANYAN_CONNECTION_INFO \
        "$bin/banyan-engine" --count 2 --profile-dir "$work/$h" > /dev/null
done
hosts_poll 30 has 4 || fail "4 engines did not register (have $(count))"
[ "$(ps -o comm= -p "$node")" = banyan-schedule ] || fail "h1's host node is not pid $node"
before=$(banyan engines | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1, $2}' | sort)
h1_ids=$(on_h1)
[ "$(wc -w <<< "$h1_ids")" = 2 ] || fail "h1's engines: '$h1_ids'"
first=${h1_ids%% *}
echo "ok: 4 engines on two hosts, h1's ($h1_ids) behind its host node $node"

# The stock client, connected before, sends its requests once the node
# is stopped
why="host node on h1 ($HOSTS_NET.1) stopped answering"
if /usr/bin/python3 -c 'import ipyparallel' 2> /dev/null; then
    mkfifo "$work/go"
    /usr/bin/python3 "$here/stocklost.py" "$ctl/security/ipcontroller-client.json" \
        "$(tr ' ' ',' <<< "${h1_ids% }")" "$why" < "$work/go" > "$work/stock.out" 2>&1 &
    stock=$!
    exec 7> "$work/go"
    hosts_poll 60 grep -q '^ready$' "$work/stock.out" \
        || fail "the stock client did not connect: $(cat "$work/stock.out")"
else
    echo "skip: the stock client (no ipyparallel for /usr/bin/python3)"
fi

# h1's host node stopped, then a broadcast to every engine and a request
# through the mux to one of h1's
kill -STOP "$node" || fail "kill -STOP $node"
[ -n "$stock" ] && echo go >&7
t0=$EPOCHREALTIME
banyan px 'sleep 1; echo done' > "$work/px.out" 2> "$work/px.err" &
px=$!
banyan px --direct -t "$first" 'echo direct' > "$work/direct.out" 2> "$work/direct.err" &
direct=$!
hosts_poll 60 has 2 || fail "h1's engines were not lost (have $(count))"
lost=$(bc <<< "$EPOCHREALTIME - $t0")
wait "$px" && fail "px on every engine worked with h1's host node stopped: $(cat "$work/px.out")"
wait "$direct" && fail "px --direct on engine $first worked with its host node stopped: $(cat "$work/direct.out")"
took=$(bc <<< "$EPOCHREALTIME - $t0")
[ "$(grep -c 'done$' "$work/px.out")" = 2 ] || fail "the broadcast's h2 half: $(cat "$work/px.out") $(cat "$work/px.err")"
for id in $h1_ids; do
    grep -q "^\[status:$id\].*EngineError" "$work/px.err" \
        || fail "engine $id's slot of the broadcast did not fail with EngineError: $(cat "$work/px.err")"
done
grep -q "^\[status:$first\].*EngineError" "$work/direct.err" \
    || fail "engine $first's request through the mux did not fail with EngineError: $(cat "$work/direct.err")"
[ -s "$work/direct.out" ] && fail "px --direct printed: $(cat "$work/direct.out")"
echo "ok: h1's host node stopped: its engines lost after $lost s, both requests ended after $took s" \
     "(the bound: 3.5 s), EngineError for h1's engines, h2's answered"
sed 's/^/    /' "$work/px.err" "$work/direct.err" | head -n 3
for id in $h1_ids; do
    grep -qxF "[status:$id] EngineError: the engine was lost: $why" "$work/px.err" \
        || fail "engine $id's slot of the broadcast does not name h1's host node: $(cat "$work/px.err")"
done
grep -qxF "[status:$first] EngineError: the engine was lost: $why" "$work/direct.err" \
    || fail "engine $first's request through the mux does not name h1's host node: $(cat "$work/direct.err")"
echo "ok: both say: $why"
if [ -n "$stock" ]; then
    wait "$stock" || fail "the stock client: $(cat "$work/stock.out")"
    stock=
    exec 7>&-
    grep '^ok: stock client: [db]' "$work/stock.out"
fi

# continued: the node's next heartbeat finds its link lost, and it
# registers its engines again
kill -CONT "$node" || fail "kill -CONT $node"
t0=$EPOCHREALTIME
hosts_poll 60 has 4 || fail "h1's engines did not come back (have $(count))"
back=$(bc <<< "$EPOCHREALTIME - $t0")
after=$(banyan engines | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1, $2}' | sort)
[ "$after" = "$before" ] || fail "engines came back as $after, not $before"
hosts_poll 30 bash -c '[ "$("$0" px --profile-dir "$1" hostname | grep -c " h1$")" = 2 ]' \
    "$bin/banyan" "$ctl" || fail "h1's engines are not served again through the tree"
out=$(banyan px --direct -t "$first" hostname) || fail "px --direct -t $first: $out"
expect_lines "engine $first served again through the mux" "[stdout:$first] h1" "$out"
out=$(banyan px hostname | sed 's/^\[stdout:[0-9]*\] //')
expect_lines "px hostname: every engine again" "$(printf 'h1\nh1\nh2\nh2')" "$out"
echo "ok: h1's host node continued: its engines back after $back s under the same ids and uuids, served again"
