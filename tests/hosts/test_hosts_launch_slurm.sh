#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_launch_slurm.sh: banyan cluster start --launcher slurm on a real
# Slurm cluster of three test hosts: inside `salloc -N 3` one srun step,
# one task a node, and through sbatch outside one. Each time `banyan px
# hostname` prints each host's name for its engines (ids by SLURM_PROCID,
# two a host), the stock Python client sees them all and runs direct,
# broadcast and load-balanced work, cluster list names the hosts and the
# step or the job and its nodes, engines each engine's host and process
# there (through sbatch, from the hosts' reports in the job's output), and
# cluster stop leaves no step, no job and no process on the hosts; nor
# does a start that fails.
. "$(dirname "$0")/hoststest.sh" ssh slurm
hosts up 3 --slurm || fail "hosts up 3 --slurm"
bin=${BN_BUILD_DIR:?}/bin
profile=$(mktemp -d /tmp/banyan-hosts-slurm.XXXXXX)
trap '"$bin/banyan" cluster stop --profile-dir "$profile" -q > /dev/null 2>&1
      scancel --user=root > /dev/null 2>&1; hosts down; rm -rf "$profile"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
export bin profile here

# What runs on the hosts besides sshd and slurmd: "pid comm" lines.
on_hosts ()
{
    local h
    for h in h1 h2 h3; do
        ip netns pids "bnh-$HOSTS_RUN-$h" | xargs -r ps -o pid=,comm= -p \
            | grep -Ev ' (sshd|slurmd)$'
    done
}
nothing_on_hosts () { [ -z "$(on_hosts)" ]; }
expect_nothing_on_hosts ()
{
    hosts_poll 15 nothing_on_hosts \
        || fail "processes left on the hosts: $(on_hosts | tr '\n' ' ')"
    echo "ok: nothing of the cluster runs on the hosts"
}

# px hostname: engines 2r and 2r+1 on host r's node, the three nodes
# h1..h3 once each.
expect_two_a_host ()
{
    local by_rank
    by_rank=$(sed -n 's/^\[stdout:\([0-9]\)\] \(h[1-3]\)$/\1 \2/p' <<< "$2" \
                  | awk '{host[$1] = $2} END {
                             for (r = 0; r < 3; r++)
                                 if (host[2*r] != host[2*r+1]) exit 1
                             print host[0]; print host[2]; print host[4]}') \
        || fail "$1: engines 2r and 2r+1 are not on one host: $2"
    expect_lines "$1" $'h1\nh2\nh3' "$by_rank"
}

# Inside an allocation: one srun step
cat > "$profile/in-allocation.sh" << 'SCRIPT'
"$bin/banyan" cluster start -n 6 --launcher slurm --ip "$HOSTS_HEAD" \
    --profile-dir "$profile" > "$profile/start.out" 2>&1 || exit 1
"$bin/banyan" px --profile-dir "$profile" hostname > "$profile/px.out" 2>&1
if /usr/bin/python3 -c 'import ipyparallel' 2> /dev/null; then
    hosts_of=$(sed -n 's/^\[stdout:\([0-9]\)\] \(h[1-3]\)$/\1 \2/p' "$profile/px.out" \
                   | sort -n | awk '{print $2}' | paste -sd,)
    timeout 60 /usr/bin/python3 "$here/stockclient.py" \
        "$profile/security/ipcontroller-client.json" "$hosts_of" > "$profile/stock.out" 2>&1
    echo $? > "$profile/stock.rc"
fi
"$bin/banyan" cluster list --profile-dir "$profile" > "$profile/list.out"
squeue --noheader --steps --jobs="$SLURM_JOB_ID" --format=%i > "$profile/steps.out"
"$bin/banyan" cluster stop --profile-dir "$profile" > "$profile/stop.out" 2>&1 || exit 2
squeue --noheader --steps --jobs="$SLURM_JOB_ID" --format=%i > "$profile/after.out"
echo "$SLURM_JOB_ID" > "$profile/job.out"
SCRIPT
timeout 100 salloc -Q -N 3 bash "$profile/in-allocation.sh" \
    || fail "inside salloc -N 3 ($?): $(cat "$profile"/*.out)"
grep -q "Cluster started: 6 engines registered in .* on 3 hosts (slurm;" "$profile/start.out" \
    || fail "cluster start inside salloc: $(cat "$profile/start.out")"
echo "ok: cluster start -n 6 --launcher slurm inside salloc -N 3"
expect_two_a_host "px hostname inside the allocation" "$(cat "$profile/px.out")"
if [ -f "$profile/stock.rc" ]; then
    [ "$(cat "$profile/stock.rc")" = 0 ] || fail "the stock client inside the allocation: $(cat "$profile/stock.out")"
    sed 's/stock client:/stock client inside the allocation:/' "$profile/stock.out"
fi
job=$(cat "$profile/job.out")
[ "$(cat "$profile/steps.out")" = "$job.0" ] \
    || fail "the allocation's steps while the cluster ran: $(cat "$profile/steps.out")"
[ "$(tail -n 1 "$profile/list.out" | awk '{print $(NF-3), $(NF-2), $(NF-1), $NF}')" \
    = "slurm h1,h2,h3 (step $job.0)" ] || fail "cluster list: $(cat "$profile/list.out")"
echo "ok: one srun step ($job.0), which cluster list names"
[ -z "$(cat "$profile/after.out")" ] \
    || fail "steps left after cluster stop: $(cat "$profile/after.out")"
echo "ok: cluster stop ended the step"
expect_nothing_on_hosts

# Outside an allocation: sbatch, two engines a host
out=$("$bin/banyan" cluster start -n 6 --launcher slurm --engines-per-host 2 \
          --cluster-id batch --ip "$HOSTS_HEAD" --profile-dir "$profile" 2>&1) \
    || fail "cluster start through sbatch: $out"
[[ "$out" == *"6 engines registered in "*" on 3 hosts (slurm;"* ]] \
    || fail "cluster start through sbatch said: $out"
echo "ok: cluster start -n 6 --launcher slurm --engines-per-host 2 (sbatch)"
job=$(squeue --noheader --format='%i %j')
[[ "$job" == *" banyan-engines-batch" ]] || fail "squeue: $job"
job=${job%% *}
out=$("$bin/banyan" px --profile-dir "$profile" --cluster-id batch hostname) \
    || fail "px hostname: $out"
expect_two_a_host "px hostname in the batch job" "$out"
hosts_of=$(sed -n 's/^\[stdout:\([0-9]\)\] \(h[1-3]\)$/\1 \2/p' <<< "$out" | sort -n \
               | awk '{print $2}' | paste -sd,)
stock_client "$profile/security/ipcontroller-batch-client.json" "$hosts_of"
# The hosts report on the job's output: engines names each engine's host
# and its process there, a banyan-engine on that host
by_pid ()
{
    "$bin/banyan" engines --profile-dir "$profile" --cluster-id batch 2> /dev/null \
        | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1, $3, $4}' > "$profile/engines.out"
    [ "$(awk '$2 ~ /^h[1-3]$/ && $3 ~ /^[0-9]+$/' "$profile/engines.out" | wc -l)" = 6 ]
}
hosts_poll 20 by_pid || fail "engines shows no host and pid of each engine: $(cat "$profile/engines.out")"
expect_lines "engines: each engine's host, as px hostname says" \
    "$(sed -n 's/^\[stdout:\([0-9]\)\] \(h[1-3]\)$/\1 \2/p' <<< "$out" | sort)" \
    "$(awk '{print $1, $2}' "$profile/engines.out")"
while read -r id h pid; do
    ip netns pids "bnh-$HOSTS_RUN-$h" | grep -qx "$pid" \
        && [[ "$(ps -o comm= -p "$pid")" == banyan-engine* ]] \
        || fail "engine $id: pid $pid is not a banyan-engine on $h: $(ps -o pid=,comm= -p "$pid")"
done < "$profile/engines.out"
echo "ok: engines names each engine's process on its host: $(awk '{print $1 ":" $2 "/" $3}' "$profile/engines.out" | paste -sd' ')"
listed () { "$bin/banyan" cluster list --profile-dir "$profile" | grep -q "slurm *h1,h2,h3 job $job: h\[1-3\]$"; }
hosts_poll 10 listed || fail "cluster list: $("$bin/banyan" cluster list --profile-dir "$profile")"
echo "ok: cluster list names the hosts, job $job and its nodes"
out=$("$bin/banyan" cluster stop --profile-dir "$profile" --cluster-id batch 2>&1) \
    || fail "cluster stop: $out"
left=$(squeue --noheader)
[ -z "$left" ] || fail "Slurm jobs left after cluster stop: $left"
echo "ok: cluster stop leaves no Slurm job"
expect_nothing_on_hosts

# A start that fails (engines that never register) cancels its job too;
# the engine command runs, taking --file=FILE as its $0
out=$("$bin/banyan" cluster start -n 3 --launcher slurm --engines-per-host 1 \
          --engine-cmd 'sh -c "sleep 300"' --timeout 6 --ip "$HOSTS_HEAD" \
          --profile-dir "$profile" 2>&1) && fail "a start whose engines never register: $out"
[[ "$out" == *"only 0 of 3 engines registered in time"* ]] || fail "the failed start said: $out"
left=$(squeue --noheader)
[ -z "$left" ] || fail "Slurm jobs left after a failed start: $left"
echo "ok: a failed start leaves no Slurm job"
expect_nothing_on_hosts
