#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_node_restart_mpiexec.sh: under --launcher mpiexec, a host node
# killed is reported at once, naming its engines, and the host script
# hydra's proxy runs there starts it again with its engines under the same
# ids (noderestart.sh).
. "$(dirname "$0")/hoststest.sh" ssh mpich
. "$(dirname "$0")/noderestart.sh"
hosts up 2 || fail "hosts up 2"
bin=${BN_BUILD_DIR:?}/bin
profile=$(mktemp -d /tmp/banyan-hosts-restart.XXXXXX)
trap '"$bin/banyan" cluster stop --profile-dir "$profile" -q > /dev/null 2>&1
      hosts down; rm -rf "$profile"' EXIT
node_restart --launcher mpiexec --hosts h1,h2 --ip "$HOSTS_HEAD"
