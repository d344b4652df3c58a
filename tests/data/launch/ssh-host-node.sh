#!/bin/sh
# banyan cluster start --launcher ssh --dry-run: what would run (nothing was).
# The controller, on this host:
/opt/banyan/bin/banyan-controller --profile-dir /home/ada/.banyan/profile_default --ip 198.18.0.254
# The host script, which each host runs with sh -c, takes
# BANYAN_CONNECTION_INFO (the controller's ipcontroller-engine.json on one
# line) from the first line of its standard input.
script='# banyan: start the engines of this host, report them, end them when told
r=$1
f=$((r * 2))
c=$((4 - f))
[ $c -le 2 ] || c=2
[ $c -ge 0 ] || c=0
h=$(hostname)
p= l= w= n= t= j= z= o=
IFS= read -r BANYAN_CONNECTION_INFO || { echo "banyan-host: no connection info on $h" >&2; exit 3; }
export BANYAN_CONNECTION_INFO
trap "o=1; kill -TERM \$p 2>/dev/null" HUP INT TERM
trap : CHLD
exec 3<&0 </dev/null
(cat >/dev/null 2>&1 <&3; kill -TERM $$) &
w=$!
exec 3<&-
t=$(mktemp -d) || exit 3
a= b= v=
A () {
    s=
    read x x s x 2>/dev/null </proc/$1/stat
    [ -n "$s" ] && [ "$s" != Z ]
}
K () {
    kill -TERM $p 2>/dev/null
    i=0
    for e in $p; do
        while A $e && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -KILL $e 2>/dev/null
        wait $e
        echo "banyan-exit host=$h pid=$e status=$?"
    done
    p= l=
}
j="$t/security/ipcontroller-engine.json"
I=$BANYAN_CONNECTION_INFO
unset BANYAN_CONNECTION_INFO
N () {
rm -f "$j"
BANYAN_CONNECTION_INFO="$I" "/usr/local/bin/banyan-scheduler" --host --profile-dir "$t" --log-level warn >&2 &
n=$!
i=0
until [ -f "$j" ] || [ -n "$o" ]; do
    if ! kill -0 $n 2>/dev/null || [ $i -ge 300 ]; then
        echo "banyan-host: the host node on $h wrote no $j" >&2
        kill -TERM $n 2>/dev/null
        return 1
    fi
    sleep 0.1
    i=$((i + 1))
done
}
N || { rm -rf "$t"; exit 3; }
E () {
i=0
while [ $i -lt $c ] && [ -z "$o" ]; do
    k=$((c - i))
    [ $k -le 1 ] || k=1
    "/usr/local/bin/banyan-engine" --file "$j" --count $k --id $((f + i)) --log-level warn >&2 &
    p="$p $!" l="$l,$!"
    i=$((i + k))
done
}
E
read x x x x g x < /proc/$$/stat
R () {
echo "banyan-host rank=$r host=$h pgid=$g first=$f count=$c pids=${l#,}${n:+ node=$n}${SLURM_STEP_ID:+ step=$SLURM_JOB_ID.$SLURM_STEP_ID}${b:+ restart=$b}"
}
R
while :; do
    q=
    for e in $p; do
        s=
        read x x s x 2>/dev/null </proc/$e/stat
        if [ -n "$s" ] && [ "$s" != Z ]; then q="$q $e"; continue; fi
        wait $e
        echo "banyan-exit host=$h pid=$e status=$?"
    done
    p=$q
    if [ -n "$n" ] && [ -z "$o" ] && ! A $n; then
        wait $n
        echo "banyan-exit host=$h pid=$n status=$?"
        n=
        K
        read u x </proc/uptime
        u=${u%.*}
        if [ -z "$o" ] && { [ -z "$b" ] || [ $((u - a)) -ge 10 ]; }; then
            a=$u b=$((${b:-0} + 1))
            if N; then [ -n "$o" ] || { E; R; }; else wait $n; n= v=3; fi
        else
            v=3
        fi
    fi
    [ -n "$p" ] || break
    if [ -z "$z" ] || ! kill -0 $z 2>/dev/null; then
        sleep 1 </dev/null >/dev/null 2>&1 &
        z=$!
    fi
    wait $z
done
if [ -n "$n" ]; then
    kill -TERM $n 2>/dev/null
    wait $n
    echo "banyan-exit host=$h pid=$n status=$?"
fi
kill $w $z 2>/dev/null
[ -z "$t" ] || rm -rf "$t"
exit ${v:-0}
'
# 4 engines, 2 a host, on 2 hosts:
ssh -o BatchMode=yes h1 "sh -c '$script' banyan-host 0"
ssh -o BatchMode=yes h2 "sh -c '$script' banyan-host 1"
