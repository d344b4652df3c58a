# SPDX-License-Identifier: BSD-3-Clause
"""CLI: banyan-controller --restore --db sqlite: killed (SIGKILL) under a
waiting client and started again: the client says ControllerGone at once,
the banyan engines come back to the new controller on their own under
their old ids and uuids, px is served, and the history of before the
restart is still there, with a direct request's result and each engine's
result of a broadcast (kept as one merged reply: its engines' parts are
split from it after the restart as before); the request the killed
controller never answered says ControllerGone for each engine, not pending
for ever."""

import os
import signal
import subprocess
import time

from clitest import BANYAN, BIN, Profile, check, describe, finish, run, wait_until

BOUND = 20  # s


def engines(profile):
    """{id: uuid} of the registered engines."""
    table = {}
    for line in run(["engines"] + profile.args()).stdout.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 2 and fields[0].isdigit():
            table[int(fields[0])] = fields[1]
    return table


def ids(profile):
    """The msg_ids banyan history lists (after its heading)."""
    lines = run(["history"] + profile.args()).stdout.splitlines()[1:]
    return [line.split()[0] for line in lines if line.strip()]


def controller(profile):
    return subprocess.Popen(
        [f"{BIN}/banyan-controller", "--profile-dir", profile.dir, "--restore",
         "--db", f"sqlite:{profile.dir}/records.db", "--ping", "200",
         "--log-file", os.path.join(profile.dir, "controller.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


with Profile("restore") as profile:
    first = controller(profile)
    connection = os.path.join(profile.dir, "security", "ipcontroller-engine.json")
    check(wait_until(lambda: os.path.exists(connection), BOUND),
          "the controller wrote its connection files")
    # the engines wait up to a minute for a controller that went silent
    workers = subprocess.Popen([f"{BIN}/banyan-engine", "--profile-dir", profile.dir,
                                "--count", "2"],
                               env=dict(os.environ, BANYAN_ENGINE_TIMEOUT="60s"),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    second = None
    try:
        check(wait_until(lambda: len(engines(profile)) == 2, BOUND), "two engines")
        before = engines(profile)
        done = run(["px"] + profile.args() + ["echo before $BANYAN_ENGINE_ID"])
        check(done.returncode == 0, "px before the restart", describe(done))
        done = run(["px", "--direct", "-t", "0"] + profile.args() + ["echo direct before"])
        check(done.returncode == 0, "px --direct before the restart", describe(done))
        history = ids(profile)
        parts = run(["result"] + profile.args() + [history[0]])
        check(parts.returncode == 0 and parts.stdout.count("status:    ok") == 2,
              "banyan result shows each engine's part of the broadcast", describe(parts))

        waiting = subprocess.Popen([BANYAN, "px"] + profile.args() + ["sleep 3; echo late"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        first.kill()
        first.wait()
        killed = time.monotonic()
        try:
            out, err = waiting.communicate(timeout=BOUND)
        except subprocess.TimeoutExpired:
            waiting.kill()
            out, err = waiting.communicate()
        took = time.monotonic() - killed
        check(waiting.returncode == 1 and err.count("ControllerGone") == 2,
              f"the controller killed: the waiting px says ControllerGone ({took:.1f} s)",
              f"rc={waiting.returncode}\n{out}\n{err}")

        second = controller(profile)
        started = time.monotonic()
        back = wait_until(lambda: engines(profile) == before, BOUND, step=0.2)
        check(back, f"restarted: the engines are back under their ids and uuids "
              f"({time.monotonic() - started:.1f} s)", (before, engines(profile)))
        # (each engine finishes the sleep of the killed request first)
        done = run(["px"] + profile.args() + ["echo after"], timeout=60)
        check(done.returncode == 0 and done.stdout == "[stdout:0] after\n[stdout:1] after\n",
              "px is served", describe(done))
        done = run(["px", "--direct"] + profile.args() + ["echo direct"], timeout=60)
        check(done.returncode == 0 and done.stdout.count("direct") == 2,
              "px --direct too", describe(done))
        after = ids(profile)
        check(len(history) == 2 and after[:2] == history,
              "the history of before the restart survives", (history, after))
        result = run(["result"] + profile.args() + [history[-1]])
        check(result.returncode == 0 and "direct before" in result.stdout,
              "and the direct request's result", describe(result))
        again = run(["result"] + profile.args() + [history[0]])
        check(again.returncode == 0 and again.stdout == parts.stdout
              and "before 0" in again.stdout and "before 1" in again.stdout,
              "and each engine's result of the broadcast, as before the restart",
              f"before:\n{parts.stdout}\n{describe(again)}")
        lost = run(["result"] + profile.args() + [after[2]])
        check(lost.returncode == 1 and lost.stdout.count("ControllerGone") == 2
              and "pending" not in lost.stdout,
              "the request in flight at the kill: ControllerGone for each engine",
              describe(lost))
        check(workers.poll() is None, "the engine process never stopped")
    finally:
        for proc in (workers, second or first):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=BOUND)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
finish()
