#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_ssh.sh: three test hosts, each a real sshd: ssh to each prints
# its hostname, a host's byte counter grows by what is sent to it, a link
# set down cuts that host alone, and nothing a host sends can leave
# 198.18.0.0/15.
. "$(dirname "$0")/hoststest.sh" ssh
hosts up 3 || fail "hosts up 3"

# Containment, before anything talks to the hosts: a host's only route is
# the run's /24 and it has no IPv6 on its link; sending outside fails at
# once; the bridge forwards nothing and has only the run's links as ports.
# Not one byte has crossed a host's link yet, either way.
for h in h1 h2 h3; do
    routes=$(hosts run "$h" ip -4 route show table all | grep -v ' dev lo ')
    while read -r line; do
        case $line in
            "$HOSTS_NET.0/24 dev eth0 "*|"local $HOSTS_NET.${h#h} dev eth0 "*|"broadcast $HOSTS_NET.255 dev eth0 "*) ;;
            *) fail "$h has a route outside its /24: $line" ;;
        esac
    done <<< "$routes"
    [ -z "$(hosts run "$h" ip -6 route show dev eth0)" ] || fail "$h has IPv6 routes on eth0"
    [ -z "$(hosts run "$h" ip -6 addr show dev eth0)" ] || fail "$h has an IPv6 address on eth0"
    for dest in 192.0.2.2/22 8.8.8.8/53 10.0.0.1/80 198.20.0.1/22; do
        err=$(hosts run "$h" timeout 5 bash -c "exec 3<>/dev/tcp/${dest%/*}/${dest#*/}" 2>&1) \
            && fail "$h reached ${dest%/*}"
        [[ "$err" == *"Network is unreachable"* ]] || fail "$h to ${dest%/*}: $err"
    done
    [ "$(hosts bytes "$h")" = 0 ] && [ "$(hosts bytes "$h" out)" = 0 ] \
        || fail "$h's link carried $(hosts bytes "$h") bytes in and $(hosts bytes "$h" out) out"
done
echo "ok: every host's only route is $HOSTS_NET.0/24; outside addresses are unreachable; no byte on any link"
[ "$(cat "/proc/sys/net/ipv4/conf/$HOSTS_BRIDGE/forwarding")" = 0 ] || fail "the bridge forwards"
[ "$(cat "/proc/sys/net/ipv6/conf/$HOSTS_BRIDGE/disable_ipv6")" = 1 ] || fail "the bridge has IPv6"
[ "$(cat "/sys/class/net/$HOSTS_BRIDGE/bridge/multicast_snooping")" = 0 ] \
    || fail "the bridge snoops multicast (and so sends IGMP reports to 224.0.0.22)"
ports=$(ip -o link show master "$HOSTS_BRIDGE" | awk -F': ' '{print $2}' | sed 's/@.*//' | sort)
expect_lines "the bridge's ports are the hosts' links" \
    "$(printf 'bnh%sv%d\n' "$HOSTS_RUN" 1 "$HOSTS_RUN" 2 "$HOSTS_RUN" 3)" "$ports"
addrs=$(ip -o addr show dev "$HOSTS_BRIDGE" | awk '{print $3, $4}')
expect_lines "the bridge's only address" "inet $HOSTS_HEAD/24" "$addrs"

out=$(for h in h1 h2 h3; do hosts ssh "$h" hostname; done)
expect_lines "ssh by name prints each host's name" $'h1\nh2\nh3' "$out"
out=$(for i in 1 2 3; do
          ssh -i "$HOSTS_KEY" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
              -o BatchMode=yes -o LogLevel=ERROR "root@$HOSTS_NET.$i" hostname
      done)
expect_lines "ssh -i KEY root@ADDR prints each host's name" $'h1\nh2\nh3' "$out"
[ "$(hosts addr h2)" = "$HOSTS_NET.2" ] || fail "hosts addr h2 is $(hosts addr h2)"
out=$(hosts ssh h1 getent hosts h3 head | awk '{print $1, $2}')
expect_lines "h1 resolves h3 and head" "$(printf '%s h3\n%s head\n' "$HOSTS_NET.3" "$HOSTS_HEAD" | sort)" "$out"

# 1 MiB into h2: its counter grows by at least that, the others' hardly.
before=(); for h in h1 h2 h3; do before+=("$(hosts bytes "$h")"); done
got=$(head -c 1048576 /dev/urandom | hosts ssh h2 'wc -c')
[ "$got" = 1048576 ] || fail "h2 received $got bytes over ssh, not 1048576"
grown=(); i=0
for h in h1 h2 h3; do grown+=($(($(hosts bytes "$h") - before[i]))); i=$((i + 1)); done
[ "${grown[1]}" -ge 1048576 ] || fail "h2's counter grew by ${grown[1]} bytes for 1 MiB sent"
[ "${grown[0]}" -lt 4096 ] && [ "${grown[2]}" -lt 4096 ] \
    || fail "h1 and h3 counted ${grown[0]} and ${grown[2]} bytes of h2's traffic"
echo "ok: 1 MiB to h2 counted on h2's link (${grown[1]} bytes), not on the others"
[ "$(hosts bytes h2 out)" -gt 0 ] || fail "h2's outgoing counter is 0 after an ssh session"

# A cut link: ssh to h2 fails, h1 and h3 still answer; restored, h2 answers.
hosts link h2 down || fail "hosts link h2 down"
hosts ssh h2 -o ConnectTimeout=2 hostname > /dev/null 2>&1 && fail "ssh to h2 worked with its link down"
out=$(hosts ssh h1 hostname; hosts ssh h3 hostname)
expect_lines "h1 and h3 answer while h2's link is down" $'h1\nh3' "$out"
hosts link h2 up || fail "hosts link h2 up"
hosts_poll 10 hosts ssh h2 -o ConnectTimeout=2 true || fail "h2 did not answer after its link came back"
expect_lines "h2 answers once its link is back" h2 "$(hosts ssh h2 hostname)"

