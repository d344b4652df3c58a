#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_skip.sh: where test hosts cannot be made, a hosts test exits 77
# (ctest's skip) and says why: run as a user other than root, and without
# the ip command.
here=$(cd "$(dirname "$0")" && pwd)
fail () { echo "FAIL: $*" >&2; exit 1; }

# expect_skip WHY OUTPUT STATUS: STATUS is 77 and OUTPUT gives the reason WHY.
expect_skip ()
{
    [ "$3" = 77 ] || fail "$1: exit status $3, not 77 ($2)"
    [[ "$2" == *"SKIP: "*"$1"* ]] || fail "no reason '$1' given: $2"
    echo "ok: skipped with the reason: $2"
}

if [ "$(id -u)" -ne 0 ]; then
    out=$(bash "$here/test_hosts_ssh.sh" 2>&1)
    expect_skip "need root" "$out" $?
    exit 0
fi
command -v setpriv > /dev/null || fail "setpriv (util-linux) is missing"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups bash "$here/test_hosts_ssh.sh" 2>&1)
expect_skip "need root" "$out" $?

# A PATH with the tools of the harness but ip.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for tool in bash id nsenter unshare setpriv ssh sshd dirname cat sed awk grep; do
    path=$(command -v "$tool" || echo "/usr/sbin/$tool")
    ln -s "$path" "$bin/$tool"
done
out=$(PATH=$bin bash "$here/test_hosts_ssh.sh" 2>&1)
expect_skip "not installed: ip" "$out" $?
