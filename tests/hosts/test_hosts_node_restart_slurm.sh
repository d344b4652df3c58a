#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_node_restart_slurm.sh: under --launcher slurm (through
# sbatch), a host node killed is reported at once, naming its engines, and
# the job's step (the host script it runs on each node) starts it again
# with its engines under the same ids; cluster stop leaves no job
# (noderestart.sh).
. "$(dirname "$0")/hoststest.sh" ssh slurm
. "$(dirname "$0")/noderestart.sh"
hosts up 2 --slurm || fail "hosts up 2 --slurm"
bin=${BN_BUILD_DIR:?}/bin
profile=$(mktemp -d /tmp/banyan-hosts-restart.XXXXXX)
trap '"$bin/banyan" cluster stop --profile-dir "$profile" -q > /dev/null 2>&1
      scancel --user=root > /dev/null 2>&1; hosts down; rm -rf "$profile"' EXIT
node_restart --launcher slurm --engines-per-host 2 --ip "$HOSTS_HEAD"
left=$(squeue --noheader)
[ -z "$left" ] || fail "Slurm jobs left after cluster stop: $left"
echo "ok: cluster stop leaves no Slurm job"
