#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_engine_killed.sh: engines on the test hosts that connect
# straight to the controller (--launcher ssh, no host node): the engine
# process of h2 killed (kill -9) while its engines run a long command: the
# command fails within seconds with EngineError for both of h2's engines,
# not at the heartbeat bound (33 s) nor at the command's end, as the
# controller sees their connections close; h1's engines go on serving.
. "$(dirname "$0")/hoststest.sh" ssh
hosts up 2 || fail "hosts up 2"
bin=${BN_BUILD_DIR:?}/bin
profile=$(mktemp -d /tmp/banyan-hosts-killed.XXXXXX)
trap '"$bin/banyan" cluster stop --profile-dir "$profile" -q > /dev/null 2>&1
      hosts down; rm -rf "$profile"' EXIT
banyan () { "$bin/banyan" "$1" --profile-dir "$profile" "${@:2}"; }
ids () { banyan engines 2> /dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}' | sort -n | tr '\n' ' '; }
h2_busy () { ip netns pids "bnh-$HOSTS_RUN-h2" | xargs -r ps -o args= -p | grep -qx 'sleep 120'; }

out=$("$bin/banyan" cluster start -n 4 --launcher ssh --hosts h1,h2 --ssh-cmd "$HOSTS_SSH" \
          --ip "$HOSTS_HEAD" --profile-dir "$profile" 2>&1) || fail "cluster start: $out"
out=$(banyan px hostname) || fail "px hostname: $out"
expect_lines "px hostname: engines 0-1 on h1, 2-3 on h2" \
    $'[stdout:0] h1\n[stdout:1] h1\n[stdout:2] h2\n[stdout:3] h2' "$out"
victim=$(ip netns pids "bnh-$HOSTS_RUN-h2" | xargs -r ps -o pid=,comm= -p \
             | awk '$2 == "banyan-engine" {print $1}')
[ -n "$victim" ] && [ "$(wc -w <<< "$victim")" = 1 ] || fail "h2's engine process: '$victim'"

banyan px -t 2,3 'sleep 120; echo late' > "$profile/px.out" 2> "$profile/px.err" &
px=$!
hosts_poll 30 h2_busy || fail "the command never ran on h2"
t0=${EPOCHREALTIME//[.,]/}
kill -KILL "$victim" || fail "kill -9 h2's engine process $victim"
wait "$px" && fail "px on h2's engines worked with their process killed: $(cat "$profile/px.out")"
took=$(( (${EPOCHREALTIME//[.,]/} - t0) / 1000 ))
for id in 2 3; do
    grep -q "^\[status:$id\].*EngineError" "$profile/px.err" \
        || fail "engine $id's failure: $(cat "$profile/px.err")"
done
grep -q late "$profile/px.out" && fail "px printed: $(cat "$profile/px.out")"
[ "$took" -lt 10000 ] || fail "px failed only after $took ms"
echo "ok: h2's engine process killed: px fails after $took ms, EngineError for engines 2 and 3"
sed 's/^/    /' "$profile/px.err" | head -n 2
hosts_poll 10 test "$(ids)" = "0 1 " || fail "engines after the kill: $(ids)"
out=$(banyan px hostname) || fail "px hostname: $out"
expect_lines "h1's engines go on" $'[stdout:0] h1\n[stdout:1] h1' "$out"
