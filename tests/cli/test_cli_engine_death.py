# SPDX-License-Identifier: BSD-3-Clause
"""CLI: an engine process killed in the middle of a px command is reported
(as EngineError, for its engines only) and px returns; cluster list and
engines show the loss."""

import os
import signal
import subprocess
import time

from clitest import BANYAN, Profile, check, describe, finish, run, wait_until

# Fast heartbeats, so that the controller notices a dead engine in ~1 s
ENV = {"BANYAN_CONTROLLER_HEARTBEAT_PERIOD": "200",
       "BANYAN_CONTROLLER_HEARTBEAT_MISSES": "4"}
HEADER = "---------------\nengines[{}] ({})\n---------------\n"

with Profile("death") as profile:
    start = run(["cluster", "start", "-n", "4", "-k", "2"] + profile.args(),
                timeout=90, env=ENV)
    check(start.returncode == 0, "cluster start -n 4 -k 2", describe(start))
    record = profile.record()
    # Engines 2 and 3 live in the second process
    victim = [proc[0] for proc in record["engine_procs"] if proc[2] == 2][0]

    env = dict(os.environ, **ENV)
    proc = subprocess.Popen([BANYAN, "px", "-b"] + profile.args()
                            + ["[ $BANYAN_ENGINE_ID -ge 2 ] && sleep 30; echo ok"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    time.sleep(1.0)
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    took = time.monotonic() - killed
    check(proc.returncode == 1, f"px returns, status 1, {took:.1f} s after the kill",
          f"rc={proc.returncode}\n{out}\n{err}")
    check(out.startswith(HEADER.format("0-1", 2) + "ok\n"),
          "the engines that lived report their output", out)
    check(HEADER.format("2-3", 2) in out and "[status] EngineError" in out,
          "the dead process's engines are reported as EngineError", out)

    listing = run(["cluster", "list"] + profile.args())
    check("1/2" in listing.stdout and "running" in listing.stdout,
          "cluster list: 1 of 2 engine processes alive", describe(listing))
    log = open(os.path.join(profile.dir, "log", "banyan-cluster.log")).read()
    check(f"banyan-engine (pid {victim}, engines 2-3) killed by signal 9" in log,
          "the supervisor logged the death at once", log)
    wait_until(lambda: len(run(["engines"] + profile.args()).stdout.splitlines()) == 3,
               10)
    engines = run(["engines"] + profile.args())
    check(len(engines.stdout.splitlines()) == 3,
          "the controller unregistered the dead engines", describe(engines))
    after = run(["px", "-b"] + profile.args() + ["echo ok"])
    check(after.returncode == 0 and after.stdout == HEADER.format("0-1", 2) + "ok\n",
          "px goes on with the engines that are left", describe(after))

    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))

    # The controller dies: the supervisor takes the cluster down
    start = run(["cluster", "start", "-n", "2"] + profile.args(), timeout=90)
    record = profile.record()
    os.kill(record["controller_pid"], signal.SIGKILL)
    from clitest import tree
    gone = wait_until(lambda: not tree(record["pgid"], [record["pgid"]]), 20)
    check(gone, "when the controller dies, the whole cluster goes",
          tree(record["pgid"], [record["pgid"]]))
    listing = run(["cluster", "list"] + profile.args())
    check("stale" in listing.stdout, "and is listed as stale", describe(listing))
    stop = run(["cluster", "stop"] + profile.args())
    check(stop.returncode == 11, "cluster stop then: status 11", describe(stop))
finish()
