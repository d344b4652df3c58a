#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_mpiexec.sh: MPICH's mpiexec (hydra) starts its proxies on three
# test hosts over the run's ssh; each process sees its host and PMI rank.
# The run is made with hosts.sh as a program, as a test in another
# language would.
. "$(dirname "$0")/hoststest.sh" ssh mpich
prog=$(dirname "$0")/hosts.sh
lines=$("$prog" up 3) || fail "hosts.sh up 3"
eval "$lines"
[ "$HOSTS_N" = 3 ] && [ -f "$HOSTS_DIR/env" ] || fail "hosts.sh up printed: $lines"
[ "$(wc -l < "$HOSTS_DIR/env")" = "$(grep -c '^export [A-Z_]*=' <<< "$lines")" ] \
    || fail "hosts.sh up printed other lines than its env file's: $lines"
[ "$(env -i HOSTS_DIR="$HOSTS_DIR" PATH="$PATH" "$prog" run h3 hostname)" = h3 ] \
    || fail "hosts.sh run h3 hostname"
[ "$(env -i HOSTS_DIR="$HOSTS_DIR" PATH="$PATH" "$prog" ssh h2 hostname)" = h2 ] \
    || fail "hosts.sh ssh h2 hostname"

show='echo "$(hostname) $PMI_RANK $PMI_SIZE"'
out=$(timeout 60 mpiexec -hosts h1,h2,h3 -n 3 sh -c "$show") || fail "mpiexec -hosts h1,h2,h3"
expect_lines "mpiexec -hosts h1,h2,h3 -n 3" $'h1 0 3\nh2 1 3\nh3 2 3' "$out"

out=$(env -u HYDRA_LAUNCHER -u HYDRA_LAUNCHER_EXEC -u HYDRA_IFACE \
          timeout 60 mpiexec -launcher ssh -launcher-exec "$HOSTS_SSH" -iface "$HOSTS_BRIDGE" \
          -hosts "$HOSTS_NET.1,$HOSTS_NET.2,$HOSTS_NET.3" -ppn 2 -n 6 sh -c "$show") \
    || fail "mpiexec -launcher ssh -hosts ADDRS -ppn 2"
expect_lines "mpiexec -ppn 2 -n 6 by address" \
    $'h1 0 6\nh1 1 6\nh2 2 6\nh2 3 6\nh3 4 6\nh3 5 6' "$out"

printf 'h3:1\nh1:1\n' > "$HOSTS_DIR/hostfile"
out=$(timeout 60 mpiexec -f "$HOSTS_DIR/hostfile" -n 2 sh -c "$show") || fail "mpiexec -f"
expect_lines "mpiexec -f with h3 first" $'h1 1 2\nh3 0 2' "$out"
