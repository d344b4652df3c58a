# SPDX-License-Identifier: BSD-3-Clause
"""CLI: when px gives up (--timeout, a second Ctrl-C) the engines' commands
are ended, whatever they do with SIGINT and SIGTERM, and the next px runs at
once instead of waiting behind them; engines and status show what each
engine runs and since when, and a px that waits behind earlier work says
so on a terminal."""

import signal
import subprocess
import time

from clitest import (BANYAN, Profile, check, cmdline, describe, finish, run,
                     run_on_terminal, tree, wait_until)


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

    # busy engines are visible
    earlier = subprocess.Popen([BANYAN, "px", "--direct", "-t", "1-2"] + px
                               + ["sleep 4.5"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_until(lambda: len(sleepers(profile, "sleep 4.5")) >= 2, 10)
    engines = run(["engines"] + px)
    rows = {line.split()[0]: line.split() for line in engines.stdout.splitlines()}
    check(engines.returncode == 0
          and rows.get("ID", [])[-3:] == ["QUEUE", "SINCE", "RUNNING"]
          and rows["1"][4:6] == ["busy", "0"] and rows["2"][4] == "busy"
          and rows["1"][7:] == ["sleep", "4.5"]
          and len(rows["1"][6]) == 8 and rows["1"][6].count(":") == 2
          and rows["0"][4:] == ["idle", "0", "-", "-"],
          "engines: which engines are busy, with what, since when",
          describe(engines))
    status = run(["status"] + px)
    check(status.returncode == 0
          and "busy:            2 engines running, 2 idle" in status.stdout
          and "engines[1-2] (2): sleep 4.5 (since " in status.stdout,
          "status: the busy engines, grouped by what they run",
          describe(status))
    code, output = run_on_terminal(["px"] + px + ["echo waited"])
    check(code == 0 and output.count("waited") == 4
          and "engines[1-2] (2) busy with earlier work: sleep 4.5 (since "
          in output and "this waits behind it" in output,
          "a px behind earlier work says so on a terminal", repr(output))
    earlier.wait(timeout=30)
    quick = run(["px"] + px + ["echo quick"])
    check(quick.returncode == 0 and "busy" not in quick.stderr,
          "not on a terminal it says nothing", describe(quick))

    run(["cluster", "stop"] + profile.args(), timeout=60)
finish()
