# SPDX-License-Identifier: BSD-3-Clause
"""CLI: banyan cluster add -n N adds engines to a running cluster (as
ipcluster's engines command): they register under the next ids, px reaches
them, engines, status and cluster list count them, the supervisor watches
them as the others (one killed mid-command fails at once), and cluster
stop stops them with the cluster."""

import os
import shutil
import signal
import subprocess
import time

from clitest import (BANYAN, Profile, check, cmdline, describe, finish, run,
                     tree, wait_until)

with Profile("add") as profile:
    add = run(["cluster", "add", "-n", "2"] + profile.args())
    check(add.returncode == 12 and "no cluster that 'banyan cluster start' "
          "started is running in" in add.stderr,
          "cluster add without a cluster: status 12", describe(add))
    add = run(["cluster", "add"] + profile.args())
    check(add.returncode == 2 and "-n N is required" in add.stderr,
          "cluster add without -n: usage error", describe(add))

    start = run(["cluster", "start", "-n", "2"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 2", describe(start))
    add = run(["cluster", "add", "-n", "3"] + profile.args(), timeout=90)
    check(add.returncode == 0 and add.stdout.startswith(
        "Added 3 engines (ids from 2) in ") and
        add.stdout.endswith("; the cluster has 5.\n"),
        "cluster add -n 3: registered under ids 2-4", describe(add))
    add = run(["cluster", "add", "-n", "3", "-k", "3"] + profile.args(),
              timeout=90)
    check(add.returncode == 0 and "(ids from 5)" in add.stdout
          and "the cluster has 8." in add.stdout,
          "cluster add -n 3 -k 3: one more process, ids 5-7", describe(add))

    record = profile.record()
    procs = record["engine_procs"]
    check(len(procs) == 6 and record["n"] == 8
          and sorted(proc[2] for proc in procs) == [0, 1, 2, 3, 4, 5],
          "the cluster's record holds the added processes", record)
    engines = run(["engines"] + profile.args())
    rows = [line.split() for line in engines.stdout.splitlines()[1:]]
    pids = {proc[0] for proc in procs}
    check([row[0] for row in rows] == [str(i) for i in range(8)]
          and all(int(row[3]) in pids for row in rows),
          "engines: 8, each with its process", describe(engines))
    px = run(["px"] + profile.args() + ["echo $BANYAN_ENGINE_ID"])
    check(px.returncode == 0 and px.stdout
          == "".join(f"[stdout:{i}] {i}\n" for i in range(8)),
          "px reaches the added engines", describe(px))
    listing = run(["cluster", "list"] + profile.args())
    check(" 8 " in listing.stdout and "6/6" in listing.stdout,
          "cluster list: 8 engines, 6 of 6 processes", describe(listing))

    # an added engine is watched as the others
    victim = [proc[0] for proc in procs if proc[2] == 4][0]
    proc = subprocess.Popen([BANYAN, "px", "-t", "4"] + profile.args()
                            + ["sleep 34; echo slept"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    check(wait_until(lambda: any("sleep 34" in " ".join(cmdline(pid))
                                 for pid in tree(record["pgid"])), 20),
          "the command runs on engine 4")
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    out, err = proc.communicate(timeout=90)
    took = time.monotonic() - killed
    check(proc.returncode == 1 and "EngineError" in out + err and took < 10,
          f"an added engine killed mid-command fails at once ({took:.1f} s)",
          f"{out}\n{err}")

    # the controller is counted with every engine it has
    if shutil.which("prlimit"):
        add = subprocess.run(["prlimit", "--nofile=150:150", BANYAN, "cluster",
                              "add", "-n", "10"] + profile.args(),
                             capture_output=True, text=True, timeout=60)
        check(add.returncode == 1 and add.stderr
              == "banyan cluster add: the controller of 18 engines needs "
              "about 218 open files, more than the 150 a process may have "
              "here (ulimit -Hn): raise that limit, or start fewer engines\n",
              "cluster add -n 10 under ulimit -n 150: the controller of all "
              "18 would not fit", f"rc={add.returncode}\n{add.stderr}")

    members = tree(record["pgid"], [record["pgid"]])
    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))
    left = [pid for pid in members if os.path.exists(f"/proc/{pid}")
            and open(f"/proc/{pid}/stat").read().split()[2] not in "ZX"]
    check(not left and not any(os.path.exists(f"/proc/{pid}")
                               for pid in pids - {victim}),
          "it stops the added engines too", left)
finish()
