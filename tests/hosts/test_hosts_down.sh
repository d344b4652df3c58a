#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_hosts_down.sh: `hosts down` leaves no namespace, link, daemon or
# process behind, also of what ran on the hosts (a stray process, a running
# Slurm job); a second run beside it gets its own names and addresses, and
# when its owner dies without tearing down, the next down reaps it.
. "$(dirname "$0")/hoststest.sh" ssh slurm
here=$(cd "$(dirname "$0")" && pwd)
hosts up 2 --slurm || fail "hosts up 2 --slurm"
a_id=$HOSTS_RUN a_dir=$HOSTS_DIR
work=$(mktemp -d)
trap 'hosts down; rm -rf "$work"' EXIT

# What runs on the hosts besides the harness's daemons: a process started
# from outside, one the harness started and recorded, a Slurm job's step.
hosts run h1 sleep 600 > /dev/null 2>&1 &
stray=$! stray_start=$(s_hosts_starttime $!)
napper=$(hosts start h2 napper sleep 600) || fail "hosts start h2"
ip netns pids "bnh-$a_id-h2" | grep -qx "$napper" || fail "hosts start h2: pid $napper is not on h2"
job=$(sbatch --parsable -N 2 -o /dev/null --wrap 'srun sleep 600') || fail "sbatch: $job"
job=${job%%;*}
sleeps_on_h2 () { ip netns pids "bnh-$a_id-h2" | xargs -r ps -o comm= -p | grep -qx sleep; }
hosts_poll 30 sleeps_on_h2 || fail "job $job's step is not running on h2"

# Run B: owned by a shell that is killed before it can tear down.
bash -c '. "$1/hosts.sh"; hosts up 1 || exit 1; cp "$HOSTS_DIR/env" "$2/b.env"
         cp "$HOSTS_DIR/pids" "$2/b.pids"; kill -9 $$' sh "$here" "$work"
[ -f "$work/b.env" ] || fail "run B did not come up"
b_id=$(sed -n 's/^HOSTS_RUN=//p' "$work/b.env")
b_net=$(sed -n 's/^HOSTS_NET=//p' "$work/b.env")
b_key=$(sed -n 's/^HOSTS_KEY=//p' "$work/b.env")
b_dir=$(sed -n 's/^HOSTS_DIR=//p' "$work/b.env")
[ "$b_id" != "$a_id" ] && [ "$b_net" != "$HOSTS_NET" ] \
    || fail "runs A and B share a name or a network ($a_id $HOSTS_NET, $b_id $b_net)"
out=$(hosts ssh h1 hostname
      ssh -i "$b_key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
          -o BatchMode=yes -o LogLevel=ERROR "root@$b_net.1" 'echo "$(hostname) B"')
expect_lines "runs side by side each serve their h1" $'h1\nh1 B' "$out"

# What must be gone afterwards: the namespaces (by inode, in case a process
# kept one alive), every recorded daemon, the stray process.
inodes=$(for ns in $(ip netns list | awk '{print $1}' | grep -E "^bnh-($a_id|$b_id)-"); do
             stat -L -c %i "/run/netns/$ns"
         done)
[ "$(wc -w <<< "$inodes")" = 3 ] || fail "expected 3 namespaces of runs A and B, found: $inodes"
cat "$a_dir/pids" "$work/b.pids" > "$work/pids"
[ "$(wc -l < "$work/pids")" -eq 8 ] || fail "expected 8 recorded processes, found $(cat "$work/pids")"

t0=$EPOCHREALTIME; hosts down || fail "hosts down"; echo "down took $(bc <<< "$EPOCHREALTIME - $t0")"
hosts down || fail "a second hosts down"

left=$(ip netns list | grep -E "bnh-($a_id|$b_id)-")
[ -z "$left" ] || fail "namespaces left: $left"
left=$(ip -o link show | grep -E "bnh($a_id|$b_id)")
[ -z "$left" ] || fail "links left: $left"
while read -r pid start label; do
    [ "$(s_hosts_starttime "$pid")" = "$start" ] && fail "$label (pid $pid) still runs"
done < "$work/pids"
[ "$(s_hosts_starttime "$stray")" = "$stray_start" ] && fail "the stray process on h1 still runs"
# The kernel reuses a freed namespace's inode number, so one that a run
# beside this test made since is not ours: only inodes no live namespace
# holds now can name a host of runs A and B.
live=$(for ns in /run/netns/*; do stat -L -c %i "$ns" 2> /dev/null; done)
for p in /proc/[0-9]*; do
    ino=$(stat -L -c %i "$p/ns/net" 2> /dev/null) || continue
    grep -qx "$ino" <<< "$live" && continue
    grep -qx "$ino" <<< "$inodes" && fail "process ${p#/proc/} ($(cat "$p/comm")) is still on a test host"
done
left=$(grep -lE "bnhosts\.($a_id|$b_id)" /proc/[0-9]*/cmdline 2> /dev/null)
[ -z "$left" ] || fail "processes of the runs left: $left"
[ ! -e "$a_dir" ] && [ ! -e "$b_dir" ] || fail "run folders left: $(ls -d "$a_dir" "$b_dir" 2> /dev/null)"
[ ! -e "$HOSTS_REGISTRY/$a_id" ] && [ ! -e "$HOSTS_REGISTRY/$b_id" ] || fail "registry entries left"
echo "ok: down removed run A and reaped run B: no namespace, link, daemon, process or folder"
