# SPDX-License-Identifier: BSD-3-Clause
"""CLI: when px gives up (--timeout, a second Ctrl-C) the engines' commands
are ended, whatever they do with SIGINT and SIGTERM, and the next px runs at
once instead of waiting behind them."""

import signal
import subprocess
import time

from clitest import (BANYAN, Profile, check, cmdline, describe, finish, run,
                     tree, wait_until)


def sleepers(profile, marker):
    """Processes of the cluster whose command line has marker."""
    record = profile.record()
    if not record:
        return []
    return [pid for pid in tree(record["pgid"], [record["pgid"]])
            if marker in " ".join(cmdline(pid))]


with Profile("stop") as profile:
    start = run(["cluster", "start", "-n", "4"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 4", describe(start))
    px = profile.args()

    slow = run(["px", "--timeout", "1"] + px + ["sleep 31; echo late"],
               timeout=30)
    check(slow.returncode == 1 and slow.stderr.count("timed out") == 4
          and slow.elapsed < 4,
          f"px --timeout 1 gives up after a second ({slow.elapsed:.1f} s)",
          describe(slow))
    check(wait_until(lambda: not sleepers(profile, "sleep 31"), 5),
          "the engines' commands are ended with it",
          sleepers(profile, "sleep 31"))
    following = run(["px"] + px + ["echo next $BANYAN_ENGINE_ID"], timeout=30)
    check(following.returncode == 0
          and sorted(following.stdout.splitlines())
          == [f"[stdout:{i}] next {i}" for i in range(4)]
          and following.elapsed < 3,
          f"the next px runs at once ({following.elapsed:.1f} s, not 30)",
          describe(following))

    # a command that ignores SIGINT and SIGTERM gets SIGKILL after the
    # grace (engine.abort_grace, 1 s, twice)
    stubborn = run(["px", "--timeout", "1"] + px
                   + ["trap '' INT TERM; sleep 32"], timeout=30)
    check(stubborn.returncode == 1, "px --timeout 1 on a command ignoring "
          "SIGINT and SIGTERM", describe(stubborn))
    check(wait_until(lambda: not sleepers(profile, "sleep 32"), 6),
          "it is killed after the grace", sleepers(profile, "sleep 32"))
    following = run(["px", "--direct"] + px + ["echo free"], timeout=30)
    check(following.returncode == 0 and following.stdout.count("free") == 4
          and following.elapsed < 5,
          f"and the engines are free again ({following.elapsed:.1f} s)",
          describe(following))

    # Ctrl-C twice, through the tree and direct
    for route in ([], ["--direct"]):
        proc = subprocess.Popen([BANYAN, "px"] + route + px + ["sleep 33"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        wait_until(lambda: len(sleepers(profile, "sleep 33")) >= 4, 10)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        name = " ".join(["px"] + route)
        check(proc.returncode == 130 and "aborting engines[0-3] (4)" in err,
              f"{name}: Ctrl-C twice aborts, status 130",
              f"rc={proc.returncode}\n{out}\n{err}")
        check(wait_until(lambda: not sleepers(profile, "sleep 33"), 5),
              f"{name}: the commands are ended", sleepers(profile, "sleep 33"))
        again = run(["px"] + route + px + ["echo again"], timeout=30)
        check(again.returncode == 0 and again.stdout.count("again") == 4
              and again.elapsed < 3,
              f"{name}: the next px runs at once ({again.elapsed:.1f} s)",
              describe(again))

    run(["cluster", "stop"] + profile.args(), timeout=60)
finish()
