#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_launch_ssh.sh: banyan cluster start --launcher ssh on three test
# hosts, each a real sshd: one session a host, `banyan px hostname` prints
# each host's name for its engines, the stock Python client sees them all
# and runs direct, broadcast and load-balanced work, cluster list names the
# hosts, cluster stop leaves no process on any host; --host-node puts a
# host node in front of each host's engines (with --curve: a client on one
# host with another server key is refused, one on another host with the
# key is served; with --ports, it and the controller listen in the range); with --ip '*' the engines reach --location; a cut host is
# named and the start fails, or with --min-hosts goes on without it; a
# cluster whose supervisor was killed is still stopped (the hosts' process
# groups killed over ssh); stock ipengines with --engine-cmd.
. "$(dirname "$0")/hoststest.sh" ssh
hosts up 3 || fail "hosts up 3"
bin=${BN_BUILD_DIR:?}/bin
profile=$(mktemp -d /tmp/banyan-hosts-ssh.XXXXXX)
trap '"$bin/banyan" cluster stop --profile-dir "$profile" -q > /dev/null 2>&1
      hosts down; rm -rf "$profile"' EXIT
launch=(--launcher ssh --ssh-cmd "$HOSTS_SSH" --ip "$HOSTS_HEAD"
        --profile-dir "$profile")

# What runs on host H besides its sshd: "pid comm" lines.
on_host ()
{
    local sshd pid
    sshd=$(awk '$3 == "sshd-'"$1"'" {print $1}' "$HOSTS_DIR/pids")
    for pid in $(ip netns pids "bnh-$HOSTS_RUN-$1"); do
        [ "$pid" = "$sshd" ] && continue
        ps -o pid=,comm= -p "$pid"
    done
}
nothing_on () { local h; for h in "$@"; do [ -z "$(on_host "$h")" ] || return 1; done; }
expect_nothing_on ()
{
    hosts_poll 5 nothing_on "$@" \
        || fail "processes left on the hosts: $(for h in "$@"; do on_host "$h"; done | tr '\n' ' ')"
    echo "ok: nothing of the cluster runs on $*"
}

out=$("$bin/banyan" cluster start -n 6 --hosts h1,h2,h3 "${launch[@]}" 2>&1) \
    || fail "cluster start --launcher ssh: $out"
[[ "$out" == *"Cluster started: 6 engines registered in "*" on 3 hosts (ssh;"* ]] \
    || fail "cluster start said: $out"
echo "ok: cluster start -n 6 --launcher ssh --hosts h1,h2,h3"
out=$("$bin/banyan" px --profile-dir "$profile" hostname) || fail "px hostname: $out"
expect_lines "px hostname: each engine on its host" \
    $'[stdout:0] h1\n[stdout:1] h1\n[stdout:2] h2\n[stdout:3] h2\n[stdout:4] h3\n[stdout:5] h3' "$out"
stock_client "$profile/security/ipcontroller-client.json" h1,h1,h2,h2,h3,h3
for h in h1 h2 h3; do
    [ "$(on_host "$h" | grep -c banyan-engine)" = 1 ] \
        || fail "$h does not run one banyan-engine: $(on_host "$h" | tr '\n' ' ')"
done
echo "ok: one banyan-engine process on each host"
list=$("$bin/banyan" cluster list --profile-dir "$profile")
[ "$(tail -n 1 <<< "$list" | awk '{print $(NF-1), $NF}')" = "ssh h1,h2,h3" ] \
    || fail "cluster list: $list"
echo "ok: cluster list shows ssh h1,h2,h3"
out=$("$bin/banyan" cluster stop --profile-dir "$profile") || fail "cluster stop: $out"
expect_nothing_on h1 h2 h3

# --host-node: a host node on each host, its engines behind it; with
# --curve, the controller's public key travels with the connection info;
# with --ports, every port the controller and the host nodes listen on is
# in the range (above the ephemeral ports)
out=$("$bin/banyan" cluster start -n 6 --hosts h1,h2,h3 --host-node --curve \
          --ports 61700-61799 "${launch[@]}" 2>&1) \
    || fail "cluster start --host-node --curve --ports: $out"
grep -q '"curve_serverkey": *"[^"]' "$profile/security/ipcontroller-engine.json" \
    || fail "no curve_serverkey in $(cat "$profile/security/ipcontroller-engine.json")"
for h in h1 h2 h3; do
    [ "$(on_host "$h" | awk '{print $2}' | grep -c '^banyan-schedule')" = 1 ] \
        || fail "$h does not run one host node: $(on_host "$h" | tr '\n' ' ')"
done
ports=$(tr -d '\n' < "$profile/security/ipcontroller-engine.json" \
        | grep -o '"[a-z_]*": *\[* *[0-9][0-9, ]*' | grep -o '[0-9][0-9]*' \
        | sort -n | tr '\n' ' ')
[ -n "$ports" ] && ! tr ' ' '\n' <<< "$ports" | grep -qvE '^(617[0-9][0-9])?$' \
    || fail "the controller's engine ports are not all in 61700-61799: $ports"
for h in h1 h2 h3; do
    # what listens on the host but its sshd: the host node's 8 ports
    listening=$(hosts run "$h" ss -Htln | awk '{n = split($4, a, ":"); print a[n]}' \
                | grep -vx 22 | sort -n | tr '\n' ' ')
    [ "$(wc -w <<< "$listening")" = 8 ] \
        && ! tr ' ' '\n' <<< "$listening" | grep -qvE '^(617[0-9][0-9])?$' \
        || fail "$h listens on $listening, not on 8 ports of 61700-61799"
done
echo "ok: --ports 61700-61799: the controller's engine ports ($ports) and each host node's 8 ports in the range"
out=$("$bin/banyan" px --direct --profile-dir "$profile" hostname) || fail "px --direct: $out"
expect_lines "--host-node --curve: px --direct hostname through each host's node" \
    $'[stdout:0] h1\n[stdout:1] h1\n[stdout:2] h2\n[stdout:3] h2\n[stdout:4] h3\n[stdout:5] h3' "$out"
# a client on h1 with another server key gets no service, and the
# controller goes on serving the others, on h2 and here
wrong=$(mktemp -d /tmp/banyan-hosts-wrong.XXXXXX)
mkdir "$wrong/security"
info=$(cat "$profile/security/ipcontroller-client.json")
key=$(sed -n 's/.*"curve_serverkey": *"\([^"]*\)".*/\1/p' <<< "$info")
[ "${#key}" = 40 ] || fail "the client file's curve_serverkey: '$key'"
other=$([ "${key:0:1}" = 0 ] && echo 1 || echo 0)${key:1}
echo "${info/"$key"/"$other"}" > "$wrong/security/ipcontroller-client.json"
t0=${EPOCHREALTIME//[.,]/}
out=$(hosts run h1 "$bin/banyan" px --profile-dir "$wrong" --timeout 20 -t 0 'echo never' 2>&1) \
    && fail "px on h1 with another server key worked: $out"
took=$(( (${EPOCHREALTIME//[.,]/} - t0) / 1000 ))
rm -rf "$wrong"
[[ "$out" == *curve_serverkey* && "$out" != *never* ]] || fail "px with another server key said: $out"
echo "ok: px on h1 with another server key is refused in $took ms: ${out%%$'\n'*}"
out=$(hosts run h2 "$bin/banyan" px --direct --profile-dir "$profile" hostname) \
    || fail "px on h2 with the key: $out"
expect_lines "--curve: px on h2 with the server key is served" \
    $'[stdout:0] h1\n[stdout:1] h1\n[stdout:2] h2\n[stdout:3] h2\n[stdout:4] h3\n[stdout:5] h3' "$out"
out=$("$bin/banyan" px --profile-dir "$profile" hostname) || fail "px here: $out"
expect_lines "--curve: and here, through the tree" \
    $'[stdout:0] h1\n[stdout:1] h1\n[stdout:2] h2\n[stdout:3] h2\n[stdout:4] h3\n[stdout:5] h3' "$out"
out=$("$bin/banyan" cluster stop --profile-dir "$profile") || fail "cluster stop: $out"
expect_nothing_on h1 h2 h3

# --ip '*': the engines' connection info says tcp://*, which they take to
# --location; the programs found under --remote-prefix there; the hosts
# by address, reached by ssh with its options as ipcluster's ssh_args
addresses=$HOSTS_NET.1,$HOSTS_NET.2,$HOSTS_NET.3
ssh_cmd="ssh -i $HOSTS_KEY -l root -o BatchMode=yes -o StrictHostKeyChecking=no"
ssh_cmd+=" -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
out=$("$bin/banyan" cluster start -n 3 --hosts "$addresses" --location "$HOSTS_HEAD" \
          --remote-prefix "$BN_BUILD_DIR" "${launch[@]}" --ip '*' --ssh-cmd "$ssh_cmd" 2>&1) \
    || fail "cluster start --ip '*' --location $HOSTS_HEAD: $out"
grep -q '"interface": *"tcp://\*"' "$profile/security/ipcontroller-engine.json" \
    || fail "the engine file's interface: $(cat "$profile/security/ipcontroller-engine.json")"
out=$("$bin/banyan" px --profile-dir "$profile" hostname) || fail "px hostname: $out"
expect_lines "--ip '*' --location $HOSTS_HEAD: engines reach the controller" \
    $'[stdout:0] h1\n[stdout:1] h2\n[stdout:2] h3' "$out"
list=$("$bin/banyan" cluster list --profile-dir "$profile")
[ "$(tail -n 1 <<< "$list" | awk '{print $NF}')" = "$addresses" ] \
    || fail "cluster list: $list"
"$bin/banyan" cluster stop --profile-dir "$profile" -q || fail "cluster stop"
expect_nothing_on h1 h2 h3

# h3 cut off: named, and the start fails unless --min-hosts lets it go on
hosts link h3 down || fail "hosts link h3 down"
out=$("$bin/banyan" cluster start -n 6 --hosts h1,h2,h3 "${launch[@]}" 2>&1) \
    && fail "cluster start with h3 cut off worked: $out"
[[ "$out" == *"1 of 3 hosts failed, and 3 must start (--min-hosts): host h3: ssh: connect to host $HOSTS_NET.3 port 22: Connection timed out"* ]] \
    || fail "cluster start with h3 cut off said: $out"
echo "ok: h3 cut off: the start fails, naming h3 and why"
expect_nothing_on h1 h2
out=$("$bin/banyan" cluster start -n 6 --hosts h1,h2,h3 --min-hosts 2 "${launch[@]}" 2>&1) \
    || fail "cluster start --min-hosts 2: $out"
[[ "$out" == *"warning: host h3: ssh: connect to host $HOSTS_NET.3 port 22"* &&
   "$out" == *"4 engines registered in "*" on 2 hosts (ssh;"* ]] \
    || fail "cluster start --min-hosts 2 said: $out"
out=$("$bin/banyan" px --profile-dir "$profile" hostname) || fail "px hostname: $out"
expect_lines "--min-hosts 2: the engines of h1 and h2" \
    $'[stdout:0] h1\n[stdout:1] h1\n[stdout:2] h2\n[stdout:3] h2' "$out"
"$bin/banyan" cluster stop --profile-dir "$profile" -q || fail "cluster stop"
expect_nothing_on h1 h2
hosts link h3 up || fail "hosts link h3 up"

# The supervisor killed: cluster stop still ends everything it started
out=$("$bin/banyan" cluster start -n 3 --hosts h1,h2,h3 "${launch[@]}" 2>&1) \
    || fail "cluster start: $out"
pgid=$(sed -n 's/.*"pgid":\([0-9]*\).*/\1/p' "$profile"/pid/banyan-cluster.json)
kill -KILL "$pgid" || fail "kill the supervisor $pgid"
out=$("$bin/banyan" cluster stop --profile-dir "$profile" 2>&1) \
    || fail "cluster stop without its supervisor: $out"
expect_nothing_on h1 h2 h3
left=$(pgrep -f -- "$profile" | tr '\n' ' ')
[ -z "$left" ] || fail "processes of the cluster left here: $left"
echo "ok: no process of the cluster is left here either"

# Stock ipengines: --engine-cmd, a private copy of the info on each host
if command -v ipengine > /dev/null; then
    out=$("$bin/banyan" cluster start -n 3 --hosts h1,h2,h3 --engine-cmd ipengine \
              --timeout 90 "${launch[@]}" 2>&1) || fail "cluster start --engine-cmd ipengine: $out"
    #  Stock engines take the ids the hub gives them, in the order they
    #  come; a 7.1.0 ipengine connects its iopub only after it registered,
    #  and what it prints before that is lost, so ask until all three speak
    where () { "$bin/banyan" px --profile-dir "$profile" \
                   'import socket; print(socket.gethostname())' | sed 's/^\[stdout:[0-2]\] //' | sort; }
    all_three () { [ "$(where)" = $'h1\nh2\nh3' ]; }
    hosts_poll 20 all_three || fail "stock ipengines: px printed $(where | tr '\n' ' ')"
    echo "ok: stock ipengines run Python, one on each host"
    "$bin/banyan" cluster stop --profile-dir "$profile" -q || fail "cluster stop"
    expect_nothing_on h1 h2 h3
fi
