#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hosts.sh: test hosts on this one machine for banyan's multi-host tests:
# network namespaces on a bridge, each with its own hostname, a real sshd
# and (on demand) a Slurm node, plus MPICH's mpiexec over the same ssh.
#
# Two ways to use it (bash, Debian 12, as root):
#   sourced:  . tests/hosts/hosts.sh
#             hosts_check ssh slurm || exit $?   # 77 and the reason if not
#             hosts up 3 --slurm; trap 'hosts down' EXIT
#             hosts ssh h2 hostname              # prints h2
#   command:  eval "$(tests/hosts/hosts.sh up 3)"   # prints `export K=V` lines
#             tests/hosts/hosts.sh run h2 hostname  # finds the run by HOSTS_DIR
#             tests/hosts/hosts.sh down
# A program in another language runs `hosts.sh up N`, reads the same lines
# from its standard output (or later from $HOSTS_DIR/env), passes HOSTS_DIR
# in the environment of each further call, and calls `hosts.sh down` at the end.
#
# Commands (`hosts CMD ...` sourced, `hosts.sh CMD ...` as a program):
#   up N [--slurm] [--no-ssh]
#       Make hosts h1..hN (N <= 253) and wait until their servers answer:
#       sshd on every host unless --no-ssh; with --slurm a private munged,
#       slurmctld (hostname "head", in the root namespace on the bridge
#       address) and one slurmd per host, until sinfo shows all N idle.
#       Sourced, it exports the variables below; as a program it prints them.
#   down
#       Remove everything this run made: every process inside its hosts,
#       the daemons it started (by pid), the namespaces, the bridge, its
#       folders. Safe to repeat, and after a crash. Also reaps stale runs.
#   reap
#       Tear down every run whose owner process has gone (up does this too).
#   run HOST CMD [ARG...]
#       Run CMD on HOST (h1..hN, or "head": the root network namespace under
#       the hostname head) and return its status. Everything it starts stays
#       on that host: its network, its hostname and its /etc/hosts (which
#       names head and h1..hN; the root namespace cannot resolve them).
#   start HOST LABEL CMD [ARG...]
#       Start CMD on HOST in the background, its output in
#       $HOSTS_DIR/log/LABEL.log; `down` ends it. Prints its pid (sourced: also
#       sets HOSTS_PID).
#   ssh HOST CMD...
#       ssh to HOST (a name h1..hN or an address) with the run's key as root.
#   addr HOST
#       Print HOST's address (head: the bridge's).
#   bytes HOST [in|out]
#       Print the bytes that went into HOST (default) or came out of it, from
#       the counters of its bridge-side veth.
#   link HOST down|up
#       Cut HOST's link (its bridge-side veth) or restore it.
#   logs
#       Print the tail of every daemon log of the run to standard error.
# Functions for sourcing scripts:
#   hosts_check [ssh] [slurm] [mpich]
#       Return 0 if this machine can make hosts (and has the named servers),
#       else print "SKIP: reason" and return 77.
#   hosts_poll SECONDS CMD [ARG...]
#       Run CMD until it succeeds, at most SECONDS; return 1 if it never did.
#
# Variables (exported by `up`, also in $HOSTS_DIR/env as K=V lines):
#   HOSTS_DIR      the run's folder (config, keys, logs); it names the run
#   HOSTS_RUN      the run id: every namespace, link and folder carries it
#   HOSTS_N        the number of hosts
#   HOSTS_NET      the run's /24 without its last byte, e.g. 198.18.0
#   HOSTS_HEAD     the bridge's address (where slurmctld and mpiexec listen)
#   HOSTS_BRIDGE   the bridge's name
#   HOSTS_KEY      the ssh private key authorised on every host
#   HOSTS_SSH      an ssh program that knows h1..hN, the key and options
#   HOSTS_SSH_CONFIG  the ssh_config file HOSTS_SSH uses
#   SLURM_CONF     the run's slurm.conf (with --slurm); each node has
#                  HOSTS_SLURM_CPUS CPUs (16 unless set before up)
#   HOSTS_MUNGE_SOCKET  the run's munged (with --slurm), for munge -S
#   HYDRA_LAUNCHER, HYDRA_LAUNCHER_EXEC, HYDRA_IFACE
#                  make MPICH's `mpiexec -hosts h1,h2 ...` start its proxies
#                  over HOSTS_SSH and have them call back on the bridge
#
# Names: run id R (5 hex digits); namespaces bnh-R-hX, bridge bnhRbr, host
# links bnhRvX (bridge side, eth0 inside the host). Each run takes the first
# free /24 of 198.18.0.0/15, so a single run has bridge 198.18.0.254 and
# hosts 198.18.0.1..N, and runs side by side get 198.18.1.0/24 and on. A
# registry in /run/banyan-hosts records each run and its owner process
# (the sourcing shell, or the caller of hosts.sh; HOSTS_OWNER overrides),
# so a run whose owner died is torn down by the next `up`. Hosts have no
# default route and no IPv6 on their link: nothing they send leaves
# 198.18.0.0/15 (loopback aside).

HOSTS_REGISTRY=${HOSTS_REGISTRY:-/run/banyan-hosts}
HOSTS_SLURM_PORT_BASE=16817
# CPUs each Slurm node offers, whatever the machine has (config_overrides),
# so a job may place many tasks on a host of this 2-core box.
HOSTS_SLURM_CPUS=${HOSTS_SLURM_CPUS:-16}

# hosts_poll SECONDS CMD...: rerun CMD every 0.1 s until it succeeds or
# SECONDS have passed; 1 on timeout.
hosts_poll ()
{
    local limit=$1
    shift
    local deadline=$((${EPOCHREALTIME//[.,]/} + limit * 1000000))
    while :; do
        "$@" && return 0
        [ "${EPOCHREALTIME//[.,]/}" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

hosts_check ()
{
    local what missing=()
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: test hosts need root (network namespaces), running as $(id -un)"
        return 77
    fi
    for what in ip nsenter unshare setpriv; do
        command -v "$what" > /dev/null || missing+=("$what")
    done
    for what in "$@"; do
        case $what in
            ssh) command -v ssh > /dev/null || missing+=(ssh)
                 [ -x /usr/sbin/sshd ] || missing+=(sshd) ;;
            slurm) for c in slurmctld slurmd srun sbatch salloc sinfo munged mungekey; do
                       command -v "$c" > /dev/null || [ -x "/usr/sbin/$c" ] \
                           || missing+=("$c")
                   done ;;
            mpich) command -v mpiexec.hydra > /dev/null || missing+=(mpiexec.hydra) ;;
        esac
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "SKIP: not installed: ${missing[*]} (run .ci/setup)"
        return 77
    fi
    local probe="bnh-probe-$$"
    if ! ip netns add "$probe" 2> /dev/null; then
        echo "SKIP: cannot make a network namespace here (ip netns add failed)"
        return 77
    fi
    if ! nsenter --net="/run/netns/$probe" unshare --uts true 2> /dev/null; then
        ip netns del "$probe" 2> /dev/null
        echo "SKIP: cannot enter a network namespace or make a UTS namespace here"
        return 77
    fi
    ip netns del "$probe"
    return 0
}

s_hosts_die ()
{
    echo "hosts: $*" >&2
    return 1
}

# The start time of process PID (field 22 of its stat), to tell it from a
# later process with the same pid; fails if it is gone or a zombie.
s_hosts_starttime ()
{
    local stat
    stat=$(cat "/proc/$1/stat" 2> /dev/null) || return 1
    stat=${stat##*) }
    set -- $stat
    [ "$1" != Z ] && echo "${20}"
}

# Is process PID, started at START, still there?
s_hosts_alive ()
{
    [ -n "$2" ] && [ "$(s_hosts_starttime "$1")" = "$2" ]
}

s_hosts_none_alive ()
{
    local pid start
    while [ $# -ge 2 ]; do
        pid=$1 start=$2
        shift 2
        s_hosts_alive "$pid" "$start" && return 1
    done
    return 0
}

# End processes given as PID START pairs: TERM, and KILL what is left after
# a second (slurmstepd lingers for seconds once its slurmd is gone).
s_hosts_end ()
{
    local args=("$@") i
    for ((i = 0; i < ${#args[@]}; i += 2)); do
        s_hosts_alive "${args[i]}" "${args[i+1]}" && kill -TERM "${args[i]}" 2> /dev/null
    done
    hosts_poll 1 s_hosts_none_alive "${args[@]}" && return 0
    for ((i = 0; i < ${#args[@]}; i += 2)); do
        s_hosts_alive "${args[i]}" "${args[i+1]}" && kill -KILL "${args[i]}" 2> /dev/null
    done
    hosts_poll 5 s_hosts_none_alive "${args[@]}"
}

# End every process inside network namespace NS.
s_hosts_end_netns ()
{
    local pid start pairs=()
    for pid in $(ip netns pids "$1" 2> /dev/null); do
        start=$(s_hosts_starttime "$pid") && pairs+=("$pid" "$start")
    done
    [ ${#pairs[@]} -eq 0 ] || s_hosts_end "${pairs[@]}"
}

# Load the run named by HOSTS_DIR (its env file) into this shell.
s_hosts_load ()
{
    [ -n "${HOSTS_DIR:-}" ] || { s_hosts_die "no run: HOSTS_DIR is not set (hosts up first)"; return 1; }
    [ -f "$HOSTS_DIR/env" ] || { s_hosts_die "no run in $HOSTS_DIR"; return 1; }
    set -a
    . "$HOSTS_DIR/env"
    set +a
}

s_hosts_index ()
{
    case $1 in
        h[1-9]|h[1-9][0-9]|h[1-9][0-9][0-9])
            [ "${1#h}" -le "$HOSTS_N" ] && { echo "${1#h}"; return 0; } ;;
    esac
    s_hosts_die "no host $1 in this run (h1..h$HOSTS_N)"
}

s_hosts_addr ()
{
    local i
    [ "$1" = head ] && { echo "$HOSTS_HEAD"; return 0; }
    i=$(s_hosts_index "$1") || return 1
    echo "$HOSTS_NET.$i"
}

# The argv that runs a command on HOST, in HOSTS_ARGV: nsenter, unshare and
# sh each exec the next, so the command keeps the pid its starter sees. On
# h1..hN it also sees the run's /etc/hosts (a mount namespace of its own),
# so the hosts know each other's names as a cluster's nodes do.
s_hosts_argv ()
{
    local i
    if [ "$1" = head ]; then
        HOSTS_ARGV=(unshare --uts /bin/sh -c 'hostname head && exec "$@"' sh)
        return 0
    fi
    i=$(s_hosts_index "$1") || return 1
    HOSTS_ARGV=(nsenter --net="/run/netns/bnh-$HOSTS_RUN-h$i"
                unshare --uts --mount --propagation slave /bin/sh -c
                'hostname "$0" && mount --bind "$1" /etc/hosts && shift && exec "$@"'
                "$1" "$HOSTS_DIR/etc/hosts")
}

s_hosts_run ()
{
    s_hosts_argv "$1" || return 1
    shift
    "${HOSTS_ARGV[@]}" "$@"
}

# Start CMD on HOST in the background, logging to LABEL.log; the pid is
# CMD's own, recorded (with its start time) for down.
s_hosts_start ()
{
    local host=$1 label=$2 pid
    shift 2
    s_hosts_argv "$host" || return 1
    "${HOSTS_ARGV[@]}" "$@" < /dev/null > "$HOSTS_DIR/log/$label.log" 2>&1 &
    pid=$!
    echo "$pid $(s_hosts_starttime "$pid") $label" >> "$HOSTS_DIR/pids"
    HOSTS_PID=$pid
}

s_hosts_bytes ()
{
    local i dir=${2:-in} which
    i=$(s_hosts_index "$1") || return 1
    case $dir in
        in) which=tx_bytes ;;
        out) which=rx_bytes ;;
        *) s_hosts_die "bytes: in or out, not $dir"; return 1 ;;
    esac
    cat "/sys/class/net/bnh${HOSTS_RUN}v$i/statistics/$which"
}

s_hosts_link ()
{
    local i
    i=$(s_hosts_index "$1") || return 1
    case $2 in
        up|down) ip link set "bnh${HOSTS_RUN}v$i" "$2" ;;
        *) s_hosts_die "link: up or down, not $2" ;;
    esac
}

# Registry: one folder per run in HOSTS_REGISTRY holding `info` (K=V) and
# the munge socket; every change to it is made under its lock.
s_hosts_lock ()
{
    mkdir -p "$HOSTS_REGISTRY" && chmod 755 "$HOSTS_REGISTRY" || return 1
    exec {HOSTS_LOCK_FD}> "$HOSTS_REGISTRY/.lock" || return 1
    flock -w 60 "$HOSTS_LOCK_FD" || { s_hosts_die "registry lock busy"; return 1; }
}

s_hosts_unlock ()
{
    [ -n "${HOSTS_LOCK_FD:-}" ] && exec {HOSTS_LOCK_FD}>&-
    HOSTS_LOCK_FD=
}

# Tear down run ID: its hosts' processes, its recorded daemons, namespaces,
# links, folders. Every step tolerates what is already gone; 1 if a process
# would not end (it is named; its namespace is kept so a later down finds it).
s_hosts_teardown ()
{
    local id=$1 dir="" ns link pid start label pairs=() status=0 left
    [ -f "$HOSTS_REGISTRY/$id/info" ] \
        && dir=$(sed -n 's/^dir=//p' "$HOSTS_REGISTRY/$id/info")
    for ns in $(ip netns list 2> /dev/null | awk '{print $1}' | grep "^bnh-$id-"); do
        s_hosts_end_netns "$ns"
    done
    if [ -n "$dir" ] && [ -f "$dir/pids" ]; then
        while read -r pid start label; do
            pairs+=("$pid" "$start")
        done < "$dir/pids"
        [ ${#pairs[@]} -eq 0 ] || s_hosts_end "${pairs[@]}"
    fi
    for ns in $(ip netns list 2> /dev/null | awk '{print $1}' | grep "^bnh-$id-"); do
        left=$(ip netns pids "$ns" 2> /dev/null | xargs -r ps -o pid=,comm= -p | tr -s ' \n' ' ')
        if [ -n "$left" ]; then
            echo "hosts: processes on $ns will not end: $left" >&2
            status=1
            continue
        fi
        ip netns del "$ns" 2> /dev/null
    done
    [ "$status" = 0 ] || return 1
    for link in $(ip -o link show 2> /dev/null | awk -F': ' '{print $2}' \
                  | sed 's/@.*//' | grep "^bnh$id"); do
        ip link del "$link" 2> /dev/null
    done
    if [ -n "$dir" ] && [ "${HOSTS_KEEP:-0}" != 1 ]; then
        case $dir in
            /tmp/bnhosts.*|"${TMPDIR:-/tmp}"/bnhosts.*) rm -rf "$dir" ;;
        esac
    fi
    rm -rf "${HOSTS_REGISTRY:?}/$id"
    return 0
}

# Tear down every run whose owner process is gone. Called under the lock.
s_hosts_reap ()
{
    local entry id owner start
    for entry in "$HOSTS_REGISTRY"/*/; do
        [ -d "$entry" ] || continue
        id=$(basename "$entry")
        owner=$(sed -n 's/^owner=//p' "$entry/info" 2> /dev/null)
        start=$(sed -n 's/^owner_start=//p' "$entry/info" 2> /dev/null)
        if [ -z "$owner" ] || ! s_hosts_alive "$owner" "$start"; then
            echo "hosts: reaping run $id (its owner ${owner:-?} is gone)" >&2
            s_hosts_teardown "$id"
        fi
    done
    # Namespaces or links of a run with no registry entry (a crash between
    # making them and recording the run cannot happen: the entry comes first;
    # this covers a registry lost with its tmpfs but not the kernel objects).
    for id in $( (ip netns list 2> /dev/null | awk '{print $1}' | sed -n 's/^bnh-\([0-9a-f]\{5\}\)-.*/\1/p'
                  ip -o link show 2> /dev/null | awk -F': ' '{print $2}' \
                      | sed -n 's/^bnh\([0-9a-f]\{5\}\)[vpb].*/\1/p') | sort -u); do
        [ -d "$HOSTS_REGISTRY/$id" ] || s_hosts_teardown "$id"
    done
}

# Pick the first /24 of 198.18.0.0/15 no other run holds and no local
# address is in. Prints its index 0..511. Called under the lock.
s_hosts_pick_net ()
{
    local used k net
    used=$(cat "$HOSTS_REGISTRY"/*/info 2> /dev/null | sed -n 's/^net=//p')
    used+=$'\n'$(ip -4 -o addr show 2> /dev/null | awk '{print $4}' | cut -d. -f1-3)
    for ((k = 0; k < 512; k++)); do
        net="198.$((18 + k / 256)).$((k % 256))"
        grep -qxF "$net" <<< "$used" || { echo "$k"; return 0; }
    done
    s_hosts_die "no free /24 left in 198.18.0.0/15"
}

s_hosts_new_id ()
{
    local id
    while :; do
        id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-5)
        [ -e "$HOSTS_REGISTRY/$id" ] || { echo "$id"; return 0; }
    done
}

s_hosts_env_write ()
{
    echo "$1=$2" >> "$HOSTS_DIR/env"
}

# Make host X: a namespace whose IPv6 is off for new links, a veth pair
# with its bridge side on the bridge and its other side as eth0 inside,
# lo and eth0 up, the host's address and the /24 as its only route.
s_hosts_make_host ()
{
    local i=$1 ns="bnh-$HOSTS_RUN-h$1" v="bnh${HOSTS_RUN}v$1" p="bnh${HOSTS_RUN}p$1"
    ip netns add "$ns" || return 1
    nsenter --net="/run/netns/$ns" sh -c \
        'echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6' || return 1
    ip link add "$v" type veth peer name "$p" || return 1
    echo 1 > "/proc/sys/net/ipv6/conf/$v/disable_ipv6"
    ip link set "$p" netns "$ns" || return 1
    ip link set "$v" master "$HOSTS_BRIDGE" || return 1
    ip link set "$v" up || return 1
    ip -n "$ns" link set "$p" name eth0 || return 1
    ip -n "$ns" addr add "$HOSTS_NET.$i/24" dev eth0 || return 1
    ip -n "$ns" link set lo up || return 1
    ip -n "$ns" link set eth0 up
}

s_hosts_ssh_setup ()
{
    local i d=$HOSTS_DIR/ssh
    mkdir -p "$d" "$HOSTS_DIR/bin" || return 1
    ssh-keygen -q -t ed25519 -N '' -C "banyan-hosts-$HOSTS_RUN" -f "$d/id_ed25519" || return 1
    cp "$d/id_ed25519.pub" "$d/authorized_keys"
    ssh-keygen -q -t ed25519 -N '' -C "banyan-hosts-$HOSTS_RUN-host" -f "$d/host_key" || return 1
    {
        for ((i = 1; i <= HOSTS_N; i++)); do
            printf 'Host h%d\n    HostName %s.%d\n' "$i" "$HOSTS_NET" "$i"
        done
        printf 'Host *\n'
        printf '    %s\n' "User root" "IdentityFile $d/id_ed25519" "IdentitiesOnly yes" \
            "StrictHostKeyChecking no" "UserKnownHostsFile /dev/null" "BatchMode yes" \
            "LogLevel ERROR" "ConnectTimeout 5"
    } > "$d/config"
    printf '#!/bin/sh\n# ssh to the test hosts of run %s\nexec /usr/bin/ssh -F %s "$@"\n' \
        "$HOSTS_RUN" "$d/config" > "$HOSTS_DIR/bin/ssh"
    chmod 755 "$HOSTS_DIR/bin/ssh"
    mkdir -p /run/sshd && chmod 755 /run/sshd
    for ((i = 1; i <= HOSTS_N; i++)); do
        mkdir -p "$HOSTS_DIR/h$i"
        printf '%s\n' "ListenAddress $HOSTS_NET.$i:22" "HostKey $d/host_key" \
            "PidFile $HOSTS_DIR/h$i/sshd.pid" "AuthorizedKeysFile $d/authorized_keys" \
            "PermitRootLogin prohibit-password" "PasswordAuthentication no" \
            "KbdInteractiveAuthentication no" "UsePAM no" "StrictModes no" \
            "UseDNS no" "PrintMotd no" "PrintLastLog no" "MaxStartups 100" \
            "MaxSessions 100" "AcceptEnv LANG LC_* BANYAN_* IPP_*" \
            "Subsystem sftp /usr/lib/openssh/sftp-server" \
            > "$HOSTS_DIR/h$i/sshd_config"
    done
    s_hosts_env_write HOSTS_KEY "$d/id_ed25519"
    s_hosts_env_write HOSTS_SSH "$HOSTS_DIR/bin/ssh"
    s_hosts_env_write HOSTS_SSH_CONFIG "$d/config"
    s_hosts_env_write HYDRA_LAUNCHER ssh
    s_hosts_env_write HYDRA_LAUNCHER_EXEC "$HOSTS_DIR/bin/ssh"
    s_hosts_env_write HYDRA_IFACE "$HOSTS_BRIDGE"
}

# Does the process PID listen on TCP ADDR:PORT? Read from its own
# /proc/PID/net/tcp, which shows the sockets of its network namespace.
s_hosts_listening ()
{
    local pid=$1 hex
    hex=$(printf '%02X' ${2//./ })
    hex=${hex:6:2}${hex:4:2}${hex:2:2}${hex:0:2}:$(printf '%04X' "$3")
    awk -v a="$hex" '$2 == a && $4 == "0A" {found = 1} END {exit !found}' \
        "/proc/$pid/net/tcp" 2> /dev/null
}

s_hosts_sshd_ready ()
{
    local i pid
    for ((i = 1; i <= HOSTS_N; i++)); do
        pid=$(awk '$3 == "sshd-h'"$i"'" {print $1}' "$HOSTS_DIR/pids")
        s_hosts_listening "$pid" "$HOSTS_NET.$i" 22 || return 1
    done
}

s_hosts_ssh_start ()
{
    local i
    for ((i = 1; i <= HOSTS_N; i++)); do
        s_hosts_start "h$i" "sshd-h$i" /usr/sbin/sshd -D -e -f "$HOSTS_DIR/h$i/sshd_config" \
            || return 1
    done
    hosts_poll 20 s_hosts_sshd_ready || { s_hosts_die "sshd did not start on every host"; return 1; }
}

s_hosts_munge_ready ()
{
    munge -S "$HOSTS_MUNGE_SOCKET" -n 2> /dev/null | unmunge -S "$HOSTS_MUNGE_SOCKET" > /dev/null 2>&1
}

s_hosts_slurm_idle ()
{
    [ "$(sinfo -h -N -t idle -o '%N' 2> /dev/null | sort -u | wc -l)" -eq "$HOSTS_N" ]
}

# A private munged (its own key and socket) and a Slurm cluster: slurmctld
# as "head" on the bridge address, one slurmd inside each host.
s_hosts_slurm_start ()
{
    local i m=$HOSTS_REGISTRY/$HOSTS_RUN/munge s=$HOSTS_DIR/slurm
    local port=$((HOSTS_SLURM_PORT_BASE + HOSTS_NETINDEX))
    mkdir -p "$m" "$s/state" "$s/spool" || return 1
    chown munge:munge "$m" && chmod 755 "$m" || return 1
    setpriv --reuid=munge --regid=munge --init-groups \
        mungekey --create --keyfile="$m/munge.key" || return 1
    HOSTS_MUNGE_SOCKET=$m/munge.socket
    s_hosts_env_write HOSTS_MUNGE_SOCKET "$HOSTS_MUNGE_SOCKET"
    s_hosts_start head munged setpriv --reuid=munge --regid=munge --init-groups \
        /usr/sbin/munged -F --socket="$HOSTS_MUNGE_SOCKET" --key-file="$m/munge.key" \
        --pid-file="$m/munged.pid" --seed-file="$m/munged.seed" || return 1
    hosts_poll 10 s_hosts_munge_ready || { s_hosts_die "munged did not start"; return 1; }
    cat > "$s/slurm.conf" << EOF
# slurm.conf of test-hosts run $HOSTS_RUN
ClusterName=bnh$HOSTS_RUN
SlurmctldHost=head($HOSTS_HEAD)
SlurmctldPort=$port
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$HOSTS_MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool/%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.%n.pid
SlurmctldLogFile=$HOSTS_DIR/log/slurmctld.log
SlurmdLogFile=$HOSTS_DIR/log/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdTimeout=30
MessageTimeout=10
KillWait=5
SlurmdParameters=config_overrides
NodeName=h[1-$HOSTS_N] NodeAddr=$HOSTS_NET.[1-$HOSTS_N] CPUs=$HOSTS_SLURM_CPUS State=UNKNOWN
PartitionName=hosts Nodes=h[1-$HOSTS_N] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    export SLURM_CONF=$s/slurm.conf
    s_hosts_env_write SLURM_CONF "$SLURM_CONF"
    s_hosts_start head slurmctld /usr/sbin/slurmctld -D -c -i -f "$SLURM_CONF" || return 1
    for ((i = 1; i <= HOSTS_N; i++)); do
        s_hosts_start "h$i" "slurmd-h$i" /usr/sbin/slurmd -D -N "h$i" -f "$SLURM_CONF" \
            || return 1
    done
    hosts_poll 60 s_hosts_slurm_idle \
        || { s_hosts_die "Slurm nodes not idle: $(sinfo -h -N -o '%N %T' 2> /dev/null | tr '\n' ' ')"; return 1; }
}

s_hosts_up ()
{
    local n="" slurm=0 ssh=1 arg id k owner
    for arg in "$@"; do
        case $arg in
            --slurm) slurm=1 ;;
            --no-ssh) ssh=0 ;;
            [0-9]*) n=$arg ;;
            *) s_hosts_die "up: unknown argument $arg"; return 1 ;;
        esac
    done
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 253 ] \
        || { s_hosts_die "up: give a number of hosts, 1..253"; return 1; }
    owner=${HOSTS_OWNER:-$HOSTS_CALLER}
    s_hosts_lock || return 1
    s_hosts_reap
    id=$(s_hosts_new_id)
    k=$(s_hosts_pick_net) || { s_hosts_unlock; return 1; }
    HOSTS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/bnhosts.$id.XXXX") || { s_hosts_unlock; return 1; }
    chmod 755 "$HOSTS_DIR"
    mkdir -p "$HOSTS_REGISTRY/$id" "$HOSTS_DIR/log"
    printf 'dir=%s\nowner=%s\nowner_start=%s\nnet=198.%d.%d\n' "$HOSTS_DIR" "$owner" \
        "$(s_hosts_starttime "$owner")" $((18 + k / 256)) $((k % 256)) \
        > "$HOSTS_REGISTRY/$id/info"
    s_hosts_unlock
    : > "$HOSTS_DIR/pids"
    : > "$HOSTS_DIR/env"
    HOSTS_RUN=$id
    HOSTS_N=$n
    HOSTS_NETINDEX=$k
    HOSTS_NET=198.$((18 + k / 256)).$((k % 256))
    HOSTS_HEAD=$HOSTS_NET.254
    HOSTS_BRIDGE=bnh${id}br
    for arg in HOSTS_DIR HOSTS_RUN HOSTS_N HOSTS_NETINDEX HOSTS_NET HOSTS_HEAD HOSTS_BRIDGE; do
        s_hosts_env_write "$arg" "${!arg}"
    done
    # No IPv6, no multicast snooping (its IGMP reports would go to
    # 224.0.0.22) and no forwarding of what the hosts send, whatever the
    # machine's ip_forward: the bridge is an island.
    ip link add "$HOSTS_BRIDGE" type bridge mcast_snooping 0 || return 1
    echo 1 > "/proc/sys/net/ipv6/conf/$HOSTS_BRIDGE/disable_ipv6"
    echo 0 > "/proc/sys/net/ipv4/conf/$HOSTS_BRIDGE/forwarding"
    ip addr add "$HOSTS_HEAD/24" dev "$HOSTS_BRIDGE" || return 1
    ip link set "$HOSTS_BRIDGE" up || return 1
    mkdir -p "$HOSTS_DIR/etc"
    {
        printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
        printf '%s\thead\n' "$HOSTS_HEAD"
        for ((k = 1; k <= n; k++)); do
            printf '%s.%d\th%d\n' "$HOSTS_NET" "$k" "$k"
        done
    } > "$HOSTS_DIR/etc/hosts"
    for ((k = 1; k <= n; k++)); do
        s_hosts_make_host "$k" || { s_hosts_die "could not make host h$k"; return 1; }
    done
    if [ "$ssh" = 1 ]; then
        s_hosts_ssh_setup && s_hosts_ssh_start || return 1
    fi
    if [ "$slurm" = 1 ]; then
        s_hosts_slurm_start || return 1
    fi
    return 0
}

s_hosts_down ()
{
    [ -n "${HOSTS_DIR:-}" ] && [ -z "${HOSTS_RUN:-}" ] && [ -f "$HOSTS_DIR/env" ] \
        && HOSTS_RUN=$(sed -n 's/^HOSTS_RUN=//p' "$HOSTS_DIR/env")
    local status=0
    s_hosts_lock || return 1
    if [ -n "${HOSTS_RUN:-}" ]; then
        s_hosts_teardown "$HOSTS_RUN" || status=1
    fi
    s_hosts_reap
    s_hosts_unlock
    return $status
}

s_hosts_logs ()
{
    local f
    for f in "$HOSTS_DIR"/log/*.log; do
        [ -s "$f" ] || continue
        echo "--- $f" >&2
        tail -n 30 "$f" >&2
    done
}

# hosts CMD ...: the commands documented at the top.
hosts ()
{
    local cmd=${1:-}
    shift
    case $cmd in
        up)
            HOSTS_CALLER=${HOSTS_CALLER:-$$}
            if ! s_hosts_up "$@"; then
                s_hosts_logs
                s_hosts_down
                return 1
            fi
            s_hosts_load
            ;;
        down) s_hosts_down ;;
        reap) s_hosts_lock && s_hosts_reap; s_hosts_unlock ;;
        run) s_hosts_load && s_hosts_run "$@" ;;
        start)
            s_hosts_load && s_hosts_start "$@" && echo "$HOSTS_PID" ;;
        ssh) s_hosts_load && "$HOSTS_SSH" "$@" ;;
        addr) s_hosts_load && s_hosts_addr "$1" ;;
        bytes) s_hosts_load && s_hosts_bytes "$@" ;;
        link) s_hosts_load && s_hosts_link "$@" ;;
        logs) s_hosts_load && s_hosts_logs ;;
        *) s_hosts_die "unknown command '$cmd' (up down reap run start ssh addr bytes link logs)" ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    # As a program: the run belongs to whoever called us.
    HOSTS_CALLER=$PPID
    cmd=${1:-}
    if [ "$cmd" = up ]; then
        hosts "$@" > /dev/null || exit 1
        sed 's/^/export /' "$HOSTS_DIR/env"
        exit 0
    fi
    hosts "$@"
fi
