# SPDX-License-Identifier: BSD-3-Clause
"""CLI: cluster start -n checks the limits that would stop the cluster half
way (the controller's and an engine process's open files, the user's
processes, memory) before anything is forked, says which and by how much,
and names the --engines-per-process that fits when there is one."""

import os
import re
import resource
import shutil
import subprocess
import tempfile

from clitest import BANYAN, Profile, check, describe, finish, run


def nothing_started(profile_dir):
    return not os.path.exists(os.path.join(profile_dir, "pid",
                                           "banyan-cluster.json")) \
        and not os.path.exists(os.path.join(profile_dir, "log",
                                            "banyan-controller.log"))


def start(args, prefix=(), profile_dir=None):
    proc = subprocess.run(list(prefix) + [BANYAN, "cluster", "start"] + args
                          + ["--profile-dir", profile_dir], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    return proc


with Profile("limits") as profile:
    prlimit = shutil.which("prlimit")
    if check(prlimit is not None, "prlimit is there"):
        proc = start(["-n", "64"], ["prlimit", "--nofile=100:100"],
                     profile.dir)
        check(proc.returncode == 1 and proc.stderr
              == "banyan cluster start: the controller of 64 engines needs "
              "about 448 open files, more than the 100 a process may have here "
              "(ulimit -Hn): raise that limit, or start fewer engines\n"
              and nothing_started(profile.dir),
              "-n 64 under ulimit -n 100: the controller's open files, "
              "before anything starts", describe(proc))
        proc = start(["-n", "150", "-k", "150"],
                     ["prlimit", "--nofile=1000:1000"], profile.dir)
        check(proc.returncode == 1 and re.search(
            r"--engines-per-process 150: a process of 150 engines needs "
            r"about \d+ open files, more than the 1000 a process may have "
            r"here \(ulimit -Hn\); with --engines-per-process (\d+) \(-k "
            r"\1\) it fits in 2 processes\n$", proc.stderr)
            and nothing_started(profile.dir),
            "-n 150 -k 150 under ulimit -n 1000: fewer engines a process "
            "is suggested", describe(proc))
        # the suggestion works
        k = re.search(r"-k (\d+)\)", proc.stderr)
        if k:
            proc = start(["-n", "150", "-k", k.group(1)],
                         ["prlimit", "--nofile=1000:1000"], profile.dir)
            check(proc.returncode == 0 and "150 engines registered" in
                  proc.stdout, f"and -k {k.group(1)} starts",
                  describe(proc))
            run(["cluster", "stop", "-q"] + profile.args(), timeout=60)

    # the user's processes: as nobody under ulimit -u 60 (root is not held
    # to it)
    if os.geteuid() == 0 and prlimit and shutil.which("setpriv"):
        scratch = tempfile.mkdtemp(prefix="banyan-limits.")
        os.chmod(scratch, 0o777)
        try:
            where = os.path.join(scratch, "p")
            proc = start(["-n", "64"],
                         ["setpriv", "--reuid=nobody", "--regid=nogroup",
                          "--clear-groups", "prlimit", "--nproc=60:60"],
                         where)
            check(proc.returncode == 1 and re.search(
                r"^banyan cluster start: -n 64: 64 engine processes and the "
                r"cluster need about \d+ processes and threads of yours; \d+ "
                r"of the 60 you may have \(ulimit -u\) run already; with "
                r"--engines-per-process (\d+) \(-k \1\) it fits in \d+ "
                r"processes\n$", proc.stderr) and nothing_started(where),
                "-n 64 as a user who may run 60 processes: refused before "
                "anything starts, with the -k that fits", describe(proc))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

# memory, where the host's other limits let a cluster big enough for it
# through
with Profile("memory") as profile:
    with open("/proc/meminfo") as f:
        available = int(re.search(r"MemAvailable:\s+(\d+)", f.read())
                        .group(1)) // 1024
    n = available // 10 * 3 // 2
    with open("/proc/sys/kernel/threads-max") as f, \
            open("/proc/sys/kernel/pid_max") as g:
        threads = min(int(f.read()), int(g.read()))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if n * 5 + 128 < hard and n * 4 + 2000 < threads:
        proc = start(["-n", str(n)], (), profile.dir)
        check(proc.returncode == 1 and re.search(
            rf"-n {n}: {n} engine processes and the controller need about "
            rf"\d+ MiB of memory; \d+ MiB are available; with "
            rf"--engines-per-process \d+ \(-k \d+\) it fits in \d+ "
            rf"processes\n$", proc.stderr) and nothing_started(profile.dir),
            f"-n {n} with {available} MiB available: refused, -k suggested",
            describe(proc))
finish()
