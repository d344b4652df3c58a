# SPDX-License-Identifier: BSD-3-Clause
# noderestart.sh: what test_hosts_node_restart_*.sh share, sourced after
# hoststest.sh and `hosts up 2` with bin and profile set. node_restart
# LAUNCHER-ARGS...: a cluster of 4 engines, two on each of h1 and h2, each
# host's behind its host node; the host node of h2 killed (kill -9) while
# its engines run a long command: that command fails within seconds
# naming both of h2's engines (EngineError) and their host node that
# closed its connection, not at the heartbeat bound nor at the command's
# end; the host script there starts the node and
# its engines again, and a later px reaches all four engines under the
# same ids, banyan engines naming their new process; cluster stop leaves
# nothing on the hosts.

# What runs on host H besides its sshd and slurmd: "pid comm" lines.
on_host ()
{
    ip netns pids "bnh-$HOSTS_RUN-$1" | xargs -r ps -o pid=,comm= -p \
        | grep -Ev ' (sshd|slurmd)$'
}
nothing_on () { local h; for h in "$@"; do [ -z "$(on_host "$h")" ] || return 1; done; }
host_node_of () { on_host "$1" | awk '$2 ~ /^banyan-schedul/ {print $1}'; }
banyan () { "$bin/banyan" "$1" --profile-dir "$profile" "${@:2}"; }
ids () { banyan engines 2> /dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}' | sort -n | tr '\n' ' '; }
# An engine's long command runs on h2 (its shell's sleep)
h2_busy () { ip netns pids "bnh-$HOSTS_RUN-h2" | xargs -r ps -o args= -p | grep -qx 'sleep 120'; }
all_served ()
{
    [ "$(banyan px hostname 2> /dev/null | sort)" \
        = $'[stdout:0] h1\n[stdout:1] h1\n[stdout:2] h2\n[stdout:3] h2' ]
}
ms_since () { echo $(( (${EPOCHREALTIME//[.,]/} - $1) / 1000 )); }
# "HOST PID" of engines 2-3 as banyan engines names them (the hosts'
# reports; a batch job's come through its output file, read as it grows)
h2_engines () { banyan engines 2> /dev/null | awk '$1 == 2 || $1 == 3 {print $3, $4}' | sort -u; }
# One process on h2 serves them, other than $1
h2_process ()
{
    local pids
    pids=$(h2_engines)
    [ "$(wc -l <<< "$pids")" = 1 ] && [ "${pids% *}" = h2 ] && [ "${pids#* }" != - ] \
        && [ "$pids" != "$1" ]
}

node_restart ()
{
    local out node again t0 lost back px_ms before
    out=$("$bin/banyan" cluster start -n 4 --host-node --profile-dir "$profile" "$@" 2>&1) \
        || fail "cluster start --host-node $*: $out"
    [[ "$out" == *"4 engines registered in "*" on 2 hosts"* ]] || fail "cluster start said: $out"
    all_served || fail "px hostname: $(banyan px hostname 2>&1)"
    echo "ok: cluster start -n 4 --host-node $1 $2: px hostname prints h1 for 0-1, h2 for 2-3"
    hosts_poll 20 h2_process || fail "banyan engines: engines 2-3 on '$(h2_engines)', not one process on h2"
    before=$(h2_engines)
    node=$(host_node_of h2)
    [ -n "$node" ] && [ "$(wc -w <<< "$node")" = 1 ] \
        || fail "one host node on h2: $(on_host h2 | tr '\n' ' ')"

    banyan px -t 2,3 'sleep 120; echo late' > "$profile/px.out" 2> "$profile/px.err" &
    local px=$!
    hosts_poll 30 h2_busy || fail "the command never ran on h2"
    t0=${EPOCHREALTIME//[.,]/}
    kill -KILL "$node" || fail "kill -9 the host node $node on h2"
    wait "$px" && fail "px on h2's engines worked with their host node killed: $(cat "$profile/px.out")"
    px_ms=$(ms_since "$t0")
    for id in 2 3; do
        grep -qxF "[status:$id] EngineError: the engine was lost: host node on h2 ($HOSTS_NET.2) closed its connection" \
            "$profile/px.err" || fail "engine $id's failure: $(cat "$profile/px.err")"
    done
    grep -q late "$profile/px.out" && fail "px printed: $(cat "$profile/px.out")"
    [ "$px_ms" -lt 10000 ] || fail "px failed only after $px_ms ms"
    echo "ok: h2's host node killed: px fails after $px_ms ms, EngineError for engines 2 and 3"
    sed 's/^/    /' "$profile/px.err" | head -n 4

    hosts_poll 90 all_served || fail "the engines are not all served again: $(banyan px hostname 2>&1 | tr '\n' ' ')"
    back=$(ms_since "$t0")
    [ "$(ids)" = "0 1 2 3 " ] || fail "engines after the restart: $(ids)"
    again=$(host_node_of h2)
    [ -n "$again" ] && [ "$again" != "$node" ] || fail "h2's host node: '$again' (was $node)"
    echo "ok: h2's host node started again (pid $again), px reaches engines 0-3 again after $back ms"
    # banyan engines names the new process on h2 (the record took it)
    local pids
    hosts_poll 20 h2_process "$before" \
        || fail "banyan engines: engines 2-3 on '$(h2_engines)' (was '$before'), not a new process on h2"
    pids=$(h2_engines)
    ip netns pids "bnh-$HOSTS_RUN-h2" | grep -qx "${pids#* }" \
        && [ "$(ps -o comm= -p "${pids#* }")" = banyan-engine ] \
        || fail "banyan engines: engines 2-3 on '$pids' (was '$before'), not a new banyan-engine on h2"
    echo "ok: banyan engines names h2 and the new engine process ${pids#* } for engines 2-3"

    out=$("$bin/banyan" cluster stop --profile-dir "$profile" 2>&1) || fail "cluster stop: $out"
    hosts_poll 20 nothing_on h1 h2 \
        || fail "processes left on the hosts: $(on_host h1; on_host h2 | tr '\n' ' ')"
    echo "ok: cluster stop leaves nothing on h1 and h2"
}
