#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_slurm.sh: a real Slurm cluster on three test hosts (slurmctld
# as "head", a slurmd in each): srun, sbatch and salloc run on h1..h3.
. "$(dirname "$0")/hoststest.sh" ssh slurm
hosts up 3 --slurm || fail "hosts up 3 --slurm"

nodes=$(sinfo -h -N -o '%N %T')
expect_lines "sinfo shows h1..h3 idle" $'h1 idle\nh2 idle\nh3 idle' "$nodes"

out=$(timeout 60 srun -N 3 hostname) || fail "srun -N 3 hostname"
expect_lines "srun -N 3 hostname" $'h1\nh2\nh3' "$out"

# Many tasks per host (a host's engines): each host runs 16, ranks 0..47.
out=$(timeout 60 srun -N 3 --ntasks-per-node=16 sh -c 'echo "$(hostname) $SLURM_PROCID"') \
    || fail "srun --ntasks-per-node=16"
expect_lines "16 tasks on each host" $'16 h1\n16 h2\n16 h3' \
    "$(awk '{print $1}' <<< "$out" | sort | uniq -c | awk '{print $1, $2}')"
expect_lines "ranks 0..47, once each" "$(seq 0 47 | sort)" "$(awk '{print $2}' <<< "$out")"

# A one-line batch script: its step runs on every host of the job, and its
# output file, written by the batch step on the job's first host, names them.
printf '#!/bin/sh\nsrun hostname\n' > "$HOSTS_DIR/job.sh"
job=$(sbatch --parsable -N 3 -o "$HOSTS_DIR/job.%j.out" "$HOSTS_DIR/job.sh") \
    || fail "sbatch: $job"
job=${job%%;*}
job_done () { [ -z "$(squeue -h -j "$job" 2> /dev/null)" ]; }
hosts_poll 60 job_done || fail "job $job still queued: $(squeue -h -j "$job")"
[ -f "$HOSTS_DIR/job.$job.out" ] || fail "job $job wrote no output file"
expect_lines "sbatch's output file" $'h1\nh2\nh3' "$(cat "$HOSTS_DIR/job.$job.out")"
state=$(scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')
[ "$state" = COMPLETED ] || fail "job $job ended $state"

out=$(timeout 60 salloc -Q -N 3 srun hostname) || fail "salloc -N 3 srun hostname"
expect_lines "salloc -N 3 srun hostname" $'h1\nh2\nh3' "$out"
out=$(timeout 60 salloc -Q -N 2 sh -c 'echo "$SLURM_JOB_NUM_NODES $SLURM_JOB_NODELIST"') \
    || fail "salloc -N 2 sh"
[ "$out" = "2 h[1-2]" ] || fail "inside salloc -N 2: $out"
echo "ok: salloc gives the allocation to its command"
