#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_bench.sh: banyan-bench's multi-host suites (hosts.*) run at
# their quick sizes on two test hosts, so that they keep working: every
# case gives a figure, and a 1 MB broadcast through the tree puts less
# into a host than the same call through the mux.
. "$(dirname "$0")/hoststest.sh"
bin=${BN_BUILD_DIR:-$(dirname "$0")/../../build/dev}/bin
work=$(mktemp -d)
trap 'hosts down; rm -rf "$work"' EXIT
BANYAN_HOSTS_SCRIPT=$(cd "$(dirname "$0")" && pwd)/hosts.sh \
    "$bin/banyan-bench" run --quick -b '^hosts\.' -p hosts=2 \
    --results "$work/results" -e > "$work/out" 2>&1
status=$?
cat "$work/out"
[ "$status" = 0 ] || fail "banyan-bench run exited with $status"
cases=$(grep -c '^hosts\.' "$work/out")
[ "$cases" = 8 ] || fail "expected 8 hosts.* cases, got $cases"
grep '^hosts\.' "$work/out" | grep -q 'n/a' && fail "a case gave no figure"
echo "ok: every hosts.* case gave a figure"
# the figure in bytes (1.00M) of a payload case, as a number
bytes () { grep "^hosts.Payload.track_link_bytes ('$1', 2)" "$work/out" \
               | awk '{print $NF}' | sed 's/M$/*1000000/; s/k$/*1000/' | bc; }
tree=$(bytes tree) mux=$(bytes mux)
echo "into each host: $tree bytes through the tree, $mux through the mux"
[ "$(bc <<< "$tree < $mux")" = 1 ] \
    || fail "the tree put $tree bytes into a host, the mux $mux"
echo "ok: the tree puts less into a host than the mux"
