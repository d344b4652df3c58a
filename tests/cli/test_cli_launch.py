# SPDX-License-Identifier: BSD-3-Clause
"""CLI: cluster start's launchers without other hosts. --dry-run prints a
shell script of what would run and runs nothing; the launcher options'
usage errors; and the ssh launcher end to end through a stand-in ssh that
runs the remote command here, as sshd would (in a session of its own):
one session a host, engines registered, px on each, cluster list naming
the hosts, an unreachable host named and --min-hosts honoured, cluster
stop leaving nothing, a killed cluster's hosts ending their engines and
clean removing its record; and MPICH's mpiexec (when installed) through a
stand-in ssh, whose failure to reach a host is named at once. The same
against real sshd, Slurm and MPICH on test hosts is tests/hosts."""

import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile

from clitest import (Profile, check, describe, finish, live, processes, run,
                     wait_until)

# The stand-in ssh: ssh HOST CMD. Host 127.0.0.9 fails as ssh does.
FAKE_SSH = """#!/bin/sh
host=$1
shift
if [ "$host" = 127.0.0.9 ]; then
    echo "ssh: connect to host 127.0.0.9 port 22: Connection refused" >&2
    exit 255
fi
export BN_LAUNCH_TEST={mark}
exec setsid sh -c "$*"
"""

# The same for hydra, which puts its options (-x) before the host.
FAKE_HYDRA_SSH = """#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done
""" + FAKE_SSH.split("\n", 1)[1]


def session_procs(profile_dir):
    """Live processes whose command line mentions profile_dir, or that the
    stand-in ssh of this test started (they carry its mark)."""
    found = []
    for pid in processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                text = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if profile_dir in text or f"BN_LAUNCH_TEST={MARK}" in environ:
            found.append((pid, text.replace("\0", " ")[:80]))
    return found


with tempfile.TemporaryDirectory(prefix="banyan-launch.") as tmp:
    ssh = os.path.join(tmp, "ssh")
    os.mkdir(os.path.join(tmp, "hydra"))
    hydra_ssh = os.path.join(tmp, "hydra", "ssh")
    MARK = tmp
    for path, text in ((ssh, FAKE_SSH), (hydra_ssh, FAKE_HYDRA_SSH)):
        with open(path, "w") as f:
            f.write(text.replace("{mark}", tmp))
        os.chmod(path, stat.S_IRWXU)

    # --dry-run: a shell script, nothing started, no folder made
    profile_dir = os.path.join(tmp, "never")
    dry = run(["cluster", "start", "-n", "4", "--launcher", "ssh", "--hosts",
               "h1,h2", "--ip", "198.18.0.254", "--profile-dir", profile_dir,
               "--dry-run"])
    lines = dry.stdout.splitlines()
    check(dry.returncode == 0 and lines[:2] == [
        "#!/bin/sh",
        "# banyan cluster start --launcher ssh --dry-run: what would run "
        "(nothing was)."] and lines[-2:] == [
        "ssh -o BatchMode=yes h1 \"sh -c '$script' banyan-host 0\"",
        "ssh -o BatchMode=yes h2 \"sh -c '$script' banyan-host 1\""],
        "--dry-run prints the ssh command lines", describe(dry))
    check(not os.path.exists(profile_dir), "--dry-run makes no profile folder")
    syntax = subprocess.run(["sh", "-n"], input=dry.stdout, text=True,
                            capture_output=True)
    check(syntax.returncode == 0, "what --dry-run prints is a shell script",
          syntax.stderr)
    dry = run(["cluster", "start", "-n", "2", "--profile-dir", profile_dir,
               "--dry-run"])
    check(dry.returncode == 0 and dry.stdout.count("banyan-engine --file ") == 2,
          "--dry-run of the local launcher: one line an engine process",
          describe(dry))

    # --dry-run of slurm (sbatch outside an allocation, one srun step
    # inside one) and mpiexec: what would run, and nothing is, not even
    # stand-ins of their programs that note being run
    stand_ins = os.path.join(tmp, "stand-ins")
    os.mkdir(stand_ins)
    ran = os.path.join(tmp, "ran")
    for name in ("sbatch", "srun", "salloc", "squeue", "scontrol", "scancel",
                 "mpiexec", "mpiexec.hydra", "ssh"):
        path = os.path.join(stand_ins, name)
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\necho {name} \"$*\" >> {ran}\nexit 1\n")
        os.chmod(path, stat.S_IRWXU)
    path_env = {"PATH": stand_ins + os.pathsep + os.environ["PATH"]}
    no_job = {name: "" for name in ("SLURM_JOB_ID", "SLURM_JOBID",
                                    "SLURM_NNODES", "SLURM_JOB_NUM_NODES")}
    batch = os.path.join(profile_dir, "pid", "banyan-sbatch.sh")
    for what, args, env, expect in [
            ("slurm through sbatch",
             ["--launcher", "slurm", "--engines-per-host", "2"],
             no_job,
             ["#SBATCH --job-name=banyan-engines", "#SBATCH --nodes=2",
              f"cat > {batch} <<'EOF'", f"sbatch --parsable {batch}"]),
            ("slurm inside an allocation", ["--launcher", "slurm"],
             {"SLURM_JOB_ID": "77", "SLURM_NNODES": "2",
              "SLURM_JOB_NUM_NODES": "2"},
             ["srun --nodes=2 --ntasks=2 --ntasks-per-node=1 "
              "--job-name=banyan-engines sh -c \"$script\" banyan-host"]),
            ("mpiexec", ["--launcher", "mpiexec", "--hosts", "h1,h2"], {},
             ["mpiexec -hosts h1,h2 -ppn 1 -n 2 sh -c \"$script\" "
              "banyan-host"]),
            ("ssh", ["--launcher", "ssh", "--hosts", "h1,h2"], {},
             ["ssh -o BatchMode=yes h2 \"sh -c '$script' banyan-host 1\""])]:
        dry = run(["cluster", "start", "-n", "4", "--host-node", "--ip",
                   "198.18.0.254", "--profile-dir", profile_dir, "--dry-run"]
                  + args, env={**path_env, **env})
        lines = dry.stdout.splitlines()
        check(dry.returncode == 0 and lines[:2] == [
            "#!/bin/sh",
            f"# banyan cluster start --launcher {args[1]} --dry-run: what "
            "would run (nothing was)."]
            and all(line in lines for line in expect)
            and "banyan-scheduler\" --host --profile-dir \"$t\" --log-level"
            in dry.stdout,
            f"--dry-run of {what} prints {expect[-1]!r}", describe(dry))
        # --ports: the controller and every host node take their ports
        # from the range (a firewalled site)
        ranged = run(["cluster", "start", "-n", "4", "--host-node", "--ip",
                      "198.18.0.254", "--ports", "61500-61599",
                      "--profile-dir", profile_dir, "--dry-run"]
                     + args, env={**path_env, **env})
        controller = [line for line in ranged.stdout.splitlines()
                      if "/banyan-controller " in line]
        check(ranged.returncode == 0 and len(controller) == 1
              and " --ports 61500-61599 " in controller[0]
              and "banyan-scheduler\" --host --profile-dir \"$t\" --ports "
              "\"61500-61599\" --log-level" in ranged.stdout,
              f"--dry-run of {what} with --ports: the controller's command "
              "and the host script's banyan-scheduler --host have the range",
              describe(ranged))
        syntax = subprocess.run(["sh", "-n"], input=dry.stdout, text=True,
                                capture_output=True)
        check(syntax.returncode == 0,
              f"what --dry-run of {what} prints is a shell script",
              syntax.stderr)
        check(not os.path.exists(ran) and not os.path.exists(profile_dir),
              f"--dry-run of {what} runs nothing and makes no folder",
              open(ran).read() if os.path.exists(ran) else profile_dir)

    # Usage errors name the problem
    for args, message in [
            (["--launcher", "pbs"],
             "--launcher: no launcher 'pbs' (local, ssh, slurm, mpiexec)"),
            (["--launcher", "ssh"],
             "--launcher ssh needs --hosts H1,H2,... or --hosts @FILE"),
            (["--hosts", "a,b"],
             "--hosts is for the ssh, slurm and mpiexec launchers, not local"),
            (["--launcher", "ssh", "--hosts", "far1,far2"],
             "the controller would listen on 127.0.0.1 only, which engines on "
             "far1 cannot reach: give --ip ADDR"),
            (["--launcher", "ssh", "--hosts", "@/nonexistent"],
             "--hosts: cannot read the host file /nonexistent"),
            (["--launcher", "mpiexec", "--hosts", "a", "--ip", "10.0.0.1",
              "--min-hosts", "2"],
             "--min-hosts 2 is more than the 1 host the engines go to")]:
        bad = run(["cluster", "start", "-n", "4", "--profile-dir", profile_dir]
                  + args)
        check(bad.returncode == 2 and message in bad.stderr,
              f"usage error: {message}", describe(bad))
    check(not os.path.exists(profile_dir), "a usage error makes nothing")

    # --location names this host in the connection files, as ipcontroller's
    with Profile("launch-location") as profile:
        start = run(["cluster", "start", "-n", "1", "--location",
                     "head.example", "-q"] + profile.args(), timeout=60)
        files = {}
        for kind in ("client", "engine"):
            path = os.path.join(profile.dir, "security",
                                f"ipcontroller-{kind}.json")
            with open(path) as f:
                files[kind] = json.load(f)
        check(start.returncode == 0
              and files["client"]["location"] == "head.example"
              and files["engine"]["location"] == "head.example",
              "--location is the connection files' location", files)
        run(["cluster", "stop"] + profile.args(), timeout=60)

    with Profile("launch") as profile:
        hosts = "localhost,127.0.0.1,127.0.0.2"
        start = run(["cluster", "start", "-n", "6", "--launcher", "ssh",
                     "--hosts", hosts, "--ssh-cmd", ssh] + profile.args(),
                    timeout=90)
        check(start.returncode == 0 and "Cluster started: 6 engines registered"
              in start.stdout and "on 3 hosts (ssh;" in start.stdout,
              f"cluster start --launcher ssh on 3 hosts ({start.elapsed:.2f} s)",
              describe(start))
        record = profile.record()
        check(record and record["launcher"] == "ssh"
              and sorted((h["name"], h["first"], h["count"], h["state"])
                         for h in record["hosts"]) ==
              [("127.0.0.1", 2, 2, "running"), ("127.0.0.2", 4, 2, "running"),
               ("localhost", 0, 2, "running")]
              and len(record["sessions"]) == 3,
              "the record names each host, its engines and its session",
              record)
        host_pids = [int(p) for h in (record or {}).get("hosts", [])
                     for p in h["pids"].split(",")]
        check(len(host_pids) == 3 and all(live(p) for p in host_pids),
              "the reported engine processes run", host_pids)
        engines = run(["engines"] + profile.args())
        rows = [line.split()[:4] for line in engines.stdout.splitlines()[1:]]
        by_host = {h["name"]: h["pids"] for h in (record or {}).get("hosts", [])}
        check(engines.returncode == 0 and [(r[0], r[2], r[3]) for r in rows] ==
              [(str(i), host, by_host.get(host)) for i, host in
               enumerate(["localhost", "localhost", "127.0.0.1", "127.0.0.1",
                          "127.0.0.2", "127.0.0.2"])],
              "engines names each engine's host and its process there",
              describe(engines))
        px = run(["px"] + profile.args() + ["echo $BANYAN_ENGINE_ID"])
        check(px.returncode == 0
              and sorted(l.split()[-1] for l in px.stdout.splitlines())
              == [str(i) for i in range(6)], "px reaches engines 0-5",
              describe(px))
        listing = run(["cluster", "list"] + profile.args())
        rows = [line.split() for line in listing.stdout.splitlines()]
        check(listing.returncode == 0 and len(rows) == 2
              and rows[0][-2:] == ["LAUNCHER", "HOSTS"]
              and rows[1][-2:] == ["ssh", hosts],
              "cluster list shows the launcher and the hosts", describe(listing))
        stop = run(["cluster", "stop"] + profile.args(), timeout=60)
        check(stop.returncode == 0 and "Cluster stopped" in stop.stdout,
              f"cluster stop ({stop.elapsed:.2f} s)", describe(stop))
        check(wait_until(lambda: not session_procs(profile.dir)
                         and not any(live(p) for p in host_pids), 10),
              "no engine, host script or session is left",
              session_procs(profile.dir))

    # Killed outright, supervisor and controller: each host script sees its
    # session end and ends its engines; clean then removes what is left
    with Profile("launch-killed") as profile:
        start = run(["cluster", "start", "-n", "2", "--launcher", "ssh",
                     "--hosts", "localhost,127.0.0.1", "--ssh-cmd", ssh, "-q"]
                    + profile.args(), timeout=90)
        record = profile.record()
        check(start.returncode == 0 and record, "cluster start", describe(start))
        os.killpg(record["pgid"], signal.SIGKILL)
        check(wait_until(lambda: not session_procs(profile.dir), 10),
              "the hosts end their engines when their sessions end",
              session_procs(profile.dir))
        listing = run(["cluster", "list"] + profile.args())
        check("stale" in listing.stdout, "cluster list: stale",
              describe(listing))
        clean = run(["cluster", "clean"] + profile.args())
        check(clean.returncode == 0 and "banyan-cluster.json" in clean.stdout
              and not os.listdir(os.path.join(profile.dir, "pid")),
              "cluster clean removes its record", describe(clean))

    with Profile("launch-unreachable") as profile:
        args = ["cluster", "start", "-n", "4", "--launcher", "ssh", "--hosts",
                "localhost,127.0.0.9", "--ssh-cmd", ssh] + profile.args()
        failed = run(args, timeout=90)
        check(failed.returncode == 1 and "host 127.0.0.9: ssh: connect to "
              "host 127.0.0.9 port 22: Connection refused" in failed.stderr
              and "1 of 2 hosts failed, and 2 must start (--min-hosts)"
              in failed.stderr,
              "an unreachable host is named and the start fails",
              describe(failed))
        check(wait_until(lambda: not session_procs(profile.dir), 10),
              "nothing of the failed start is left", session_procs(profile.dir))
        start = run(args + ["--min-hosts", "1"], timeout=90)
        check(start.returncode == 0 and "2 engines registered" in start.stdout
              and "on 1 host (ssh;" in start.stdout
              and "warning: host 127.0.0.9: ssh: connect to host 127.0.0.9"
              in start.stderr,
              "--min-hosts 1: the cluster starts on the rest, with a warning",
              describe(start))
        listing = run(["cluster", "list"] + profile.args())
        check("localhost failed:127.0.0.9" in listing.stdout,
              "cluster list names the host that failed", describe(listing))
        stop = run(["cluster", "stop"] + profile.args(), timeout=60)
        check(stop.returncode == 0 and wait_until(
            lambda: not session_procs(profile.dir), 10),
            "cluster stop leaves nothing", describe(stop))

    # mpiexec: hydra's ssh to 127.0.0.9 fails, and hydra would wait on for
    # that proxy; the start names the host at once, well inside --timeout
    # (100 s, past this run's limit)
    if not shutil.which("mpiexec"):
        print("skip: mpiexec (no MPICH here)")
    else:
        with Profile("launch-mpiexec-unreachable") as profile:
            args = ["cluster", "start", "-n", "4", "--launcher", "mpiexec",
                    "--hosts", "127.0.0.2,127.0.0.9", "--timeout", "100",
                    "--mpiexec-cmd",
                    f"mpiexec -launcher ssh -launcher-exec {hydra_ssh}"] \
                + profile.args()
            failed = run(args, timeout=90)
            check(failed.returncode == 1
                  and "1 of 2 hosts failed, and 2 must start (--min-hosts): "
                  "host 127.0.0.9: ssh: connect to host 127.0.0.9 port 22: "
                  "Connection refused (mpiexec's ssh for it exited with "
                  "status 255)" in failed.stderr,
                  f"mpiexec: an unreachable host is named and the start "
                  f"fails ({failed.elapsed:.2f} s)", describe(failed))
            check(wait_until(lambda: not session_procs(profile.dir), 10),
                  "nothing of the failed start is left",
                  session_procs(profile.dir))
            start = run(args + ["--min-hosts", "1"], timeout=90)
            check(start.returncode == 0 and "2 engines registered" in
                  start.stdout and "on 1 host (mpiexec;" in start.stdout
                  and "warning: host 127.0.0.9: ssh: connect to host "
                  "127.0.0.9" in start.stderr,
                  "mpiexec --min-hosts 1: the cluster starts on the rest",
                  describe(start))
            listing = run(["cluster", "list"] + profile.args())
            check(listing.stdout.rstrip().endswith(" failed:127.0.0.9"),
                  "cluster list names the host that failed",
                  describe(listing))
            stop = run(["cluster", "stop"] + profile.args(), timeout=60)
            check(stop.returncode == 0 and wait_until(
                lambda: not session_procs(profile.dir), 10),
                "cluster stop leaves nothing", describe(stop))

finish()
