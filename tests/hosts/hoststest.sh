# SPDX-License-Identifier: BSD-3-Clause
# hoststest.sh: what the test-host tests share. Source it with the servers a
# test needs (`. hoststest.sh ssh slurm`): it exits 77 with the reason where
# hosts cannot be made, tears the run down on exit (also on TERM or INT; a
# test killed outright leaves its run to the next `hosts up` or `hosts
# reap`), and gives fail and expect_lines, which show the run's daemon logs
# on failure.
. "$(dirname "${BASH_SOURCE[0]}")/hosts.sh"
hosts_check "$@" || exit $?
trap 'hosts down' EXIT
trap 'exit 143' TERM INT HUP

fail ()
{
    echo "FAIL: $*" >&2
    [ -n "${HOSTS_DIR:-}" ] && hosts logs
    exit 1
}

# expect_lines WHAT EXPECTED ACTUAL: the lines of ACTUAL, sorted, are EXPECTED.
expect_lines ()
{
    local got
    got=$(sort <<< "$3")
    [ "$got" = "$2" ] || fail "$1: expected $(tr '\n' ' ' <<< "$2"), got $(tr '\n' ' ' <<< "$got")"
    echo "ok: $1"
}

# stock_client CLIENT_FILE HOSTS: the stock IPython Parallel client sees
# every engine of the cluster of CLIENT_FILE (its ipcontroller-client.json)
# and runs direct, broadcast and
# load-balanced work on them, each on its host (HOSTS: each engine's host
# by id, "h1,h1,h2,h2"; stockclient.py). Says so and returns if this
# machine has no ipyparallel for /usr/bin/python3.
stock_client ()
{
    if ! /usr/bin/python3 -c 'import ipyparallel' 2> /dev/null; then
        echo "skip: the stock client (no ipyparallel for /usr/bin/python3)"
        return 0
    fi
    timeout 120 /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/stockclient.py" "$@" \
        || fail "the stock client (above)"
}
