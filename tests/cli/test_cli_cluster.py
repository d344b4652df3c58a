# SPDX-License-Identifier: BSD-3-Clause
"""CLI: cluster start / list / stop / clean through the real binaries: start
returns once the engines are registered, a second start says 10, stop leaves
no process of the cluster behind (not even a command an engine left
running), a second stop says 11, clean removes what a killed cluster left."""

import json
import os
import signal
import time

from clitest import (Profile, check, cmdline, describe, finish, live,
                     processes, run, tree, wait_until)

with Profile("cluster") as profile:
    start = run(["cluster", "start", "-n", "4"] + profile.args(), timeout=90)
    check(start.returncode == 0 and "4 engines registered" in start.stdout
          and "banyan cluster stop --profile-dir" in start.stdout,
          f"cluster start -n 4 returns once registered ({start.elapsed:.2f} s)",
          describe(start))
    record = profile.record()
    check(record is not None and record["n"] == 4
          and len(record["engine_procs"]) == 4,
          "the cluster is recorded in <profile>/pid", record)
    pgid = record["pgid"]
    members = tree(pgid, [pgid])
    check(len(members) == 6, "supervisor, controller and 4 engine processes run",
          members)
    check(all(processes()[pid][2] == pgid for pid in members),
          "all of them in one process group", members)
    check(os.stat(os.path.join(profile.dir, "security",
                               "ipcontroller-client.json")).st_mode & 0o077 == 0,
          "the connection file is private (0600)")

    engines = run(["engines"] + profile.args())
    lines = engines.stdout.splitlines()
    check(engines.returncode == 0 and len(lines) == 5
          and lines[0].split() == ["ID", "UUID", "HOST", "PID", "STATE", "QUEUE",
                                   "SINCE", "RUNNING"],
          "engines lists 4 engines", describe(engines))
    pids = {int(line.split()[3]) for line in lines[1:]}
    check(pids == set(profile.engine_pids()),
          "engines shows the pid of each engine's process", describe(engines))
    status = run(["status"] + profile.args())
    check(status.returncode == 0 and "4 registered: engines[0-3] (4)" in status.stdout
          and "running" in status.stdout, "status", describe(status))
    listing = run(["cluster", "list"] + profile.args())
    check(listing.returncode == 0 and "running" in listing.stdout
          and str(pgid) in listing.stdout, "cluster list shows it running",
          describe(listing))

    again = run(["cluster", "start", "-n", "2"] + profile.args())
    check(again.returncode == 10 and "already running" in again.stderr,
          "a second cluster start: status 10", describe(again))

    # A command that leaves a process behind, in a group of its own
    left = run(["px"] + profile.args() + ["sleep 300 > /dev/null 2>&1 &"])
    check(left.returncode == 0, "px starts a background sleep on every engine",
          describe(left))
    sleepers = [pid for pid, info in processes().items() if info[4] == "sleep"
                and pid in tree(pgid, [pgid])]
    check(len(sleepers) == 4, "4 sleeps run in the cluster's tree", sleepers)

    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0 and "Cluster stopped" in stop.stdout,
          f"cluster stop ({stop.elapsed:.2f} s)", describe(stop))
    check(not any(live(pid) for pid in members | set(sleepers)),
          "no process of the cluster is left, the sleeps included",
          [pid for pid in members | set(sleepers) if live(pid)])
    check(not tree(pgid), "nothing is left in its process group", tree(pgid))
    check(not os.listdir(os.path.join(profile.dir, "pid"))
          and not os.listdir(os.path.join(profile.dir, "security")),
          "its record, pid file and connection files are gone",
          os.listdir(os.path.join(profile.dir, "pid")))

    stopped = run(["cluster", "stop"] + profile.args())
    check(stopped.returncode == 11, "a second cluster stop: status 11",
          describe(stopped))
    px = run(["px"] + profile.args() + ["true"])
    check(px.returncode == 12, "px after stop: status 12", describe(px))

    # Killed from outside: stale files, which clean removes
    start = run(["cluster", "start", "-n", "2", "-q"] + profile.args(), timeout=90)
    check(start.returncode == 0 and start.stdout == "", "cluster start -q",
          describe(start))
    record = profile.record()
    for pid in tree(record["pgid"], [record["pgid"]]):
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not tree(record["pgid"], [record["pgid"]]), 10)
    listing = run(["cluster", "list"] + profile.args())
    check("stale" in listing.stdout, "a killed cluster is listed as stale",
          describe(listing))
    clean = run(["cluster", "clean"] + profile.args())
    check(clean.returncode == 0 and "banyan-cluster.json" in clean.stdout
          and "ipcontroller-client.json" in clean.stdout,
          "cluster clean removes its record and connection files", describe(clean))
    check(not os.listdir(os.path.join(profile.dir, "pid"))
          and not os.listdir(os.path.join(profile.dir, "security")),
          "nothing of it is left in pid/ and security/")
    stopped = run(["cluster", "stop"] + profile.args())
    check(stopped.returncode == 11, "cluster stop after clean: status 11",
          describe(stopped))

    # Several processes of several engines each, and two clusters side by side
    start = run(["cluster", "start", "-n", "8", "-k", "3", "--cluster-id", "a"]
                + profile.args(), timeout=90)
    record = profile.record("a")
    check(start.returncode == 0 and record
          and [proc[2:] for proc in record["engine_procs"]] == [[0, 3], [3, 3], [6, 2]],
          "-n 8 -k 3: 3 engine processes of 3, 3 and 2 engines", describe(start))
    start_b = run(["cluster", "start", "-n", "1", "--cluster-id", "b", "--daemonize"]
                  + profile.args(), timeout=90)
    record_b = profile.record("b")
    check(start_b.returncode == 0 and record_b
          and processes()[record_b["pgid"]][3] == record_b["pgid"],
          "--daemonize: a second cluster in a session of its own",
          describe(start_b))
    px = run(["px", "-b"] + profile.args("--cluster-id", "a") + ["echo $BANYAN_ENGINE_ID"])
    check(px.returncode == 0 and "engines[7] (1)\n---------------\n7\n" in px.stdout,
          "px on cluster a reaches its 8 engines", describe(px))
    listing = run(["cluster", "list"] + profile.args())
    check(listing.stdout.count("running") == 2, "cluster list shows both",
          describe(listing))
    clean = run(["cluster", "clean"] + profile.args())
    check(clean.returncode == 0 and "left 2 running clusters alone" in clean.stdout
          and profile.record("a") and profile.record("b"),
          "cluster clean leaves running clusters alone", describe(clean))
    for cluster_id, rec in (("a", record), ("b", record_b)):
        stop = run(["cluster", "stop"] + profile.args("--cluster-id", cluster_id),
                   timeout=60)
        check(stop.returncode == 0 and not tree(rec["pgid"], [rec["pgid"]]),
              f"cluster stop --cluster-id {cluster_id} leaves nothing",
              describe(stop))

    # --no-wait returns before registration; the cluster still comes up
    start = run(["cluster", "start", "-n", "2", "--no-wait"] + profile.args(),
                timeout=90)
    check(start.returncode == 0 and "register in the background" in start.stdout,
          "cluster start --no-wait", describe(start))
    engines = run(["engines"] + profile.args())
    wait_until(lambda: len(run(["engines"] + profile.args()).stdout.splitlines()) == 3, 20)
    engines = run(["engines"] + profile.args())
    check(len(engines.stdout.splitlines()) == 3, "its engines register",
          describe(engines))
    run(["cluster", "stop"] + profile.args(), timeout=60)

    # A controller that cannot start: status 1 and nothing left behind
    before = set(processes())
    bad = run(["cluster", "start", "-n", "2", "--ip", "192.0.2.1", "--timeout", "20"]
              + profile.args(), timeout=90)
    check(bad.returncode == 1 and "the cluster was stopped" in bad.stderr
          and "logs:" in bad.stderr, "a controller that cannot bind: status 1",
          describe(bad))
    # this profile's: other tests may start clusters of their own meanwhile
    stray = [pid for pid in set(processes()) - before
             if processes().get(pid, ("", 0, 0, 0, ""))[4].startswith("banyan")
             and any(profile.dir in arg for arg in cmdline(pid))]
    check(not stray, "a failed start leaves no process", stray)
    check(not os.path.exists(os.path.join(profile.dir, "pid", "banyan-cluster.json")),
          "a failed start leaves no record")

# A named profile under BANYAN_DIR; cluster list without a profile finds
# it among all profiles
with Profile("root") as root:
    env = {"BANYAN_DIR": root.dir}
    start = run(["cluster", "start", "-n", "1", "--profile", "named"], env=env,
                timeout=90)
    named = os.path.join(root.dir, "profile_named")
    check(start.returncode == 0 and os.path.exists(
        os.path.join(named, "security", "ipcontroller-client.json")),
          "cluster start --profile NAME uses <BANYAN_DIR>/profile_NAME",
          describe(start))
    listing = run(["cluster", "list"], env=env)
    check(listing.returncode == 0 and "\nnamed " in listing.stdout
          and "running" in listing.stdout,
          "cluster list without a profile lists every profile", describe(listing))
    px = run(["px", "-b", "--profile", "named", "echo hi"], env=env)
    check(px.returncode == 0 and px.stdout.endswith("hi\n"), "px --profile NAME",
          describe(px))
    stop = run(["cluster", "stop", "--profile", "named"], env=env, timeout=60)
    check(stop.returncode == 0, "cluster stop --profile NAME", describe(stop))

finish()
