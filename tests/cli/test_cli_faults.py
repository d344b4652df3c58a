# SPDX-License-Identifier: BSD-3-Clause
"""CLI: faults a user meets, through the real binaries. Each gets an answer
within a bound (a result or a clear error, never a hang) and the next good
request is served:

- an engine process stopped (SIGSTOP): its request fails with EngineError at
  the heartbeat bound while the other engine answers; continued (SIGCONT),
  it beats again and is back under its id and uuid;
- a client killed (SIGKILL) in the middle of a request: the next client is
  served, and no engine is left with a queue;
- a node process of the broadcast tree stopped (processes mode): a leaf's
  engines fail at the tree's deadline, the root's requests at the client's
  --timeout or, without one, when the controller finds the root silent,
  kills it and answers them; continued, the tree serves them again; the
  root killed: the controller answers a waiting client's request at once,
  and the restarted root serves;
- the controller killed (SIGKILL) under a waiting client: it says
  ControllerGone at once;
- the process of two engines that share their broadcast connection
  stopped: both are unregistered; continued, both are back under their ids
  and answer px through the connection they share."""

import os
import signal
import subprocess
import time

from clitest import BANYAN, Profile, check, describe, finish, processes, run, wait_until

# the heartbeat bound: 4 missed beats of 200 ms
ENV = {"BANYAN_CONTROLLER_HEARTBEAT_PERIOD": "200",
       "BANYAN_CONTROLLER_HEARTBEAT_MISSES": "4"}
BOUND = 15  # s: generous, for a loaded machine


def engines(profile):
    """{id: (uuid, pid)} of the registered engines, as banyan engines shows
    them."""
    listing = run(["engines"] + profile.args())
    table = {}
    for line in listing.stdout.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit():
            table[int(fields[0])] = (fields[1], int(fields[3]))
    return table


def px(profile, *args, timeout=60):
    return run(["px"] + profile.args() + list(args), timeout=timeout, env=ENV)


def popen_px(profile, *args):
    return subprocess.Popen([BANYAN, "px"] + profile.args() + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **ENV))


def timed(fn):
    start = time.monotonic()
    result = fn()
    return result, time.monotonic() - start


def logs(profile):
    """The last lines of the cluster's logs."""
    text = ""
    folder = os.path.join(profile.dir, "log")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".log"):
            with open(os.path.join(folder, name)) as f:
                text += f"{name}:\n" + "".join(f.readlines()[-15:])
    return text


def cont(pid):
    """SIGCONT to pid, which the controller may have killed meanwhile."""
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def node_pids(controller_pid):
    """{node index: pid} of the tree's banyan-scheduler processes."""
    nodes = {}
    for pid, info in processes().items():
        if info[1] != controller_pid:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode().split("\0")
        except OSError:
            continue
        if "--node" in args:
            nodes[int(args[args.index("--node") + 1])] = pid
    return nodes


with Profile("faults") as profile:
    # an engine leaves a controller silent for 3 s: the stop below lasts
    # longer, and the stopped engine must not count it as silence
    start = run(["cluster", "start", "-n", "2", "-k", "1", "--log-level", "info"]
                + profile.args(), timeout=90, env=dict(ENV, BANYAN_ENGINE_TIMEOUT="3s"))
    check(start.returncode == 0, "cluster start -n 2 -k 1", describe(start))
    before = engines(profile)
    check(sorted(before) == [0, 1], "two engines, one per process", before)

    # an engine stopped: its request fails at the heartbeat bound
    uuid, pid = before[1]
    os.kill(pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        stopped, took = timed(lambda: px(profile, "-t", "1", "echo hi"))
        check(stopped.returncode == 1 and "EngineError" in stopped.stderr and took < BOUND,
              f"a stopped engine's px fails with EngineError ({took:.1f} s)",
              describe(stopped))
        other, took = timed(lambda: px(profile, "-t", "0", "echo hi"))
        check(other.returncode == 0 and other.stdout == "[stdout:0] hi\n",
              f"the other engine answers meanwhile ({took:.1f} s)", describe(other))
        check(wait_until(lambda: sorted(engines(profile)) == [0], BOUND),
              "the stopped engine is unregistered", engines(profile))
        time.sleep(max(0.0, 5 - (time.monotonic() - stopped_at)))
    finally:
        os.kill(pid, signal.SIGCONT)
    # continued: back under its id and uuid
    resumed = time.monotonic()
    back = wait_until(lambda: engines(profile).get(1) == (uuid, pid), BOUND)
    check(back, f"continued, engine 1 is back with its uuid "
          f"({time.monotonic() - resumed:.1f} s)", (engines(profile), logs(profile)))
    both = px(profile, "echo hi")
    check(both.returncode == 0 and both.stdout == "[stdout:0] hi\n[stdout:1] hi\n",
          "and both engines answer px", describe(both))
    direct = px(profile, "--direct", "-t", "1", "echo direct")
    check(direct.returncode == 0 and direct.stdout == "[stdout:1] direct\n",
          "also through the mux", describe(direct))

    # a client killed in the middle of a request
    for how in ([], ["--direct"]):
        client = popen_px(profile, *how, "sleep 1; echo late")
        time.sleep(0.3)
        client.kill()
        client.communicate()
        after, took = timed(lambda: px(profile, *how, "echo next"))
        check(after.returncode == 0 and after.stdout == "[stdout:0] next\n[stdout:1] next\n",
              f"{' '.join(['px'] + how)} killed mid-request: the next px is served ({took:.1f} s)",
              describe(after))
    balanced = popen_px(profile, "--balanced", "sleep 1; echo late")
    time.sleep(0.3)
    balanced.kill()
    balanced.communicate()
    after = px(profile, "--balanced", "echo next")
    check(after.returncode == 0 and "next" in after.stdout,
          "px --balanced killed mid-request: the next task is served", describe(after))
    idle = wait_until(lambda: run(["engines"] + profile.args()).stdout.count(" idle ") == 2,
                      BOUND)
    check(idle, "no engine is left with work of the dead clients",
          run(["engines"] + profile.args()).stdout)

    # the controller killed under a waiting client
    record = profile.record()
    waiting = popen_px(profile, "sleep 30")
    time.sleep(0.5)
    os.kill(record["controller_pid"], signal.SIGKILL)
    killed = time.monotonic()
    try:
        out, err = waiting.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        waiting.kill()
        out, err = waiting.communicate()
    took = time.monotonic() - killed
    check(waiting.returncode == 1 and err.count("ControllerGone") == 2 and took < BOUND,
          f"the controller killed: px says ControllerGone for both engines ({took:.1f} s)",
          f"rc={waiting.returncode}\n{out}\n{err}")
    run(["cluster", "stop"] + profile.args(), timeout=60)

    # two engines of one process, reached through their shared broadcast
    # connection
    start = run(["cluster", "start", "-n", "2", "-k", "2"] + profile.args(),
                timeout=90, env=ENV)
    check(start.returncode == 0, "cluster start -n 2 -k 2", describe(start))
    pair = engines(profile)
    check(sorted(pair) == [0, 1] and pair[0][1] == pair[1][1],
          "two engines, one process", pair)
    stats = run(["stats"] + profile.args()).stdout
    check(any(line.split()[1:] == ["shared", "2"] for line in stats.splitlines()
              if line.startswith("broadcast.")),
          "the tree reaches both through one connection", stats)
    pid = pair[0][1]
    os.kill(pid, signal.SIGSTOP)
    try:
        check(wait_until(lambda: engines(profile) == {}, BOUND),
              "the stopped process's engines are unregistered", engines(profile))
    finally:
        os.kill(pid, signal.SIGCONT)
    check(wait_until(lambda: engines(profile) == pair, BOUND),
          "continued, both are back under their ids and uuids", (engines(profile), logs(profile)))
    both = px(profile, "echo hi")
    check(both.returncode == 0 and both.stdout == "[stdout:0] hi\n[stdout:1] hi\n",
          "and both answer px through the connection they share", describe(both))
    run(["cluster", "stop"] + profile.args(), timeout=60)

    # the tree's node processes stopped; the tree has a deadline, and the
    # controller kills a node silent for 5 s (25 beats of 200 ms)
    env = dict(ENV, BANYAN_CONTROLLER_TREE_DEADLINE="2s",
               BANYAN_CONTROLLER_HEARTBEAT_MISSES="25")
    start = run(["cluster", "start", "-n", "2", "-k", "1", "--depth", "1",
                 "--tree-mode", "processes"] + profile.args(), timeout=90, env=env)
    check(start.returncode == 0, "cluster start --depth 1 --tree-mode processes",
          describe(start))
    nodes = node_pids(profile.record()["controller_pid"])
    check(sorted(nodes) == [0, 1, 2], "a root and two leaves", nodes)
    # kary:2: engine 1 is leaf 2's
    os.kill(nodes[2], signal.SIGSTOP)
    try:
        leaf, took = timed(lambda: px(profile, "echo hi"))
        check(leaf.returncode == 1 and leaf.stdout == "[stdout:0] hi\n"
              and "[status:1] EngineError" in leaf.stderr and took < BOUND,
              f"a leaf stopped: its engine fails at the deadline, the other answers "
              f"({took:.1f} s)", describe(leaf))
    finally:
        cont(nodes[2])
    served = wait_until(lambda: px(profile, "echo hi").returncode == 0, BOUND, step=0.2)
    check(served, "continued, the leaf serves its engine again")
    check(node_pids(profile.record()["controller_pid"]) == nodes,
          "the same node processes (none was restarted)")
    os.kill(nodes[0], signal.SIGSTOP)
    try:
        root, took = timed(lambda: px(profile, "--timeout", "3", "echo hi"))
        check(root.returncode == 1 and root.stderr.count("timed out") == 2
              and took < BOUND,
              f"the root stopped: px --timeout 3 reports both engines timed out "
              f"({took:.1f} s)", describe(root))
        # without a timeout the controller finds the root silent (25 beats
        # of 200 ms), kills it and answers
        root, took = timed(lambda: px(profile, "echo hi"))
        check(root.returncode == 1 and root.stderr.count("EngineError") == 2
              and took < BOUND,
              f"the root stopped: px fails both engines with EngineError "
              f"({took:.1f} s)", describe(root))
    finally:
        cont(nodes[0])
    served = wait_until(lambda: px(profile, "echo hi").returncode == 0, BOUND, step=0.2)
    check(served, "continued (or killed and restarted), the root serves again")
    # the root killed under a waiting px
    nodes = node_pids(profile.record()["controller_pid"])
    waiting = popen_px(profile, "sleep 1; echo late")
    time.sleep(0.3)
    os.kill(nodes[0], signal.SIGKILL)
    killed = time.monotonic()
    try:
        out, err = waiting.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        waiting.kill()
        out, err = waiting.communicate()
    took = time.monotonic() - killed
    check(waiting.returncode == 1 and err.count("EngineError") == 2,
          f"the root killed: the waiting px fails both engines with EngineError "
          f"({took:.1f} s)", f"rc={waiting.returncode}\n{out}\n{err}")
    served = wait_until(lambda: px(profile, "echo hi").returncode == 0, BOUND, step=0.2)
    check(served, "the root restarted serves again")
    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))

    # no deadline: a stopped leaf is found out by the controller's pings (10
    # beats of 200 ms), killed and restarted
    start = run(["cluster", "start", "-n", "2", "-k", "1", "--depth", "1",
                 "--tree-mode", "processes"] + profile.args(), timeout=90,
                env=dict(ENV, BANYAN_CONTROLLER_HEARTBEAT_MISSES="10"))
    check(start.returncode == 0, "cluster start --depth 1 --tree-mode processes, "
          "no deadline", describe(start))
    nodes = node_pids(profile.record()["controller_pid"])
    os.kill(nodes[2], signal.SIGSTOP)
    leaf, took = timed(lambda: px(profile, "echo hi"))
    check(leaf.returncode == 1 and leaf.stdout == "[stdout:0] hi\n"
          and "[status:1] EngineError" in leaf.stderr and took < BOUND,
          f"a leaf stopped: its engine fails when the controller finds it silent "
          f"({took:.1f} s)", describe(leaf))
    try:
        cont(nodes[2])
    except ProcessLookupError:
        pass
    served = wait_until(lambda: px(profile, "echo hi").returncode == 0, BOUND, step=0.2)
    again = node_pids(profile.record()["controller_pid"])
    check(served and again.get(2) not in (None, nodes[2]),
          "the leaf was restarted and serves its engine again", (nodes, again))
    log = open(os.path.join(profile.dir, "log", "banyan-controller.log")).read()
    check("has not answered" in log, "the controller said why it killed the leaf")
    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))
finish()
