# SPDX-License-Identifier: BSD-3-Clause
"""banyan-scheduler and banyan-controller --tree-mode processes through the
real binaries: usage, the node processes a controller starts (the key on no
command line), and none left once the controller is gone, however it ends."""

import os
import shutil
import signal
import subprocess
import time

from clitest import BIN, Profile, check, finish, live, processes, wait_until

SCHEDULER = os.path.join(BIN, "banyan-scheduler")
CONTROLLER = os.path.join(BIN, "banyan-controller")


def sched(args, env=None):
    full_env = dict(os.environ)
    full_env.pop("BANYAN_SESSION_KEY", None)
    full_env.update(env or {})
    proc = subprocess.run([SCHEDULER] + args, capture_output=True, text=True,
                          timeout=30, env=full_env, stdin=subprocess.DEVNULL)
    return proc


def describe(proc):
    return f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


help = sched(["--help"])
check(help.returncode == 0 and help.stdout.startswith("Usage: banyan-scheduler")
      and "--control-fd" in help.stdout and help.stderr == "",
      "banyan-scheduler --help: usage on stdout, status 0", describe(help))
version = sched(["--version"])
check(version.returncode == 0 and version.stdout.startswith("banyan-scheduler "),
      "banyan-scheduler --version", describe(version))
for args, what in [([], "no --node"),
                   (["--node", "x", "--bind", "up=tcp://127.0.0.1:0",
                     "--bind", "down=tcp://127.0.0.1:0"], "--node x"),
                   (["--node", "0", "--bind", "down=tcp://127.0.0.1:0"],
                    "a root without --bind up"),
                   (["--node", "1", "--bind", "up=tcp://127.0.0.1:0",
                     "--bind", "down=tcp://127.0.0.1:0"],
                    "a child with --bind up"),
                   (["--no-such-option"], "an unknown option"),
                   (["--node"], "--node without a value")]:
    proc = sched(args)
    check(proc.returncode == 2 and proc.stdout == ""
          and "Try 'banyan-scheduler --help'" in proc.stderr,
          f"banyan-scheduler with {what}: usage error, status 2", describe(proc))
proc = sched(["--node", "0", "--bind", "up=tcp://127.0.0.1:0",
              "--bind", "down=tcp://127.0.0.1:0", "--depth", "7"])
check(proc.returncode == 2
      and "--depth needs a depth in 0 ... 6, not '7'" in proc.stderr,
      "banyan-scheduler --depth past the deepest tree: usage error, status 2",
      describe(proc))
root = ["--node", "0", "--bind", "up=tcp://127.0.0.1:0",
        "--bind", "down=tcp://127.0.0.1:0", "--depth", "0"]
proc = sched(root)
check(proc.returncode == 1 and "no session key" in proc.stderr,
      "banyan-scheduler without a key: status 1", describe(proc))
proc = sched(["--node", "9", "--topology", "kary:2", "--depth", "1",
              "--connect", "up=ipc:///nonexistent/x.ipc",
              "--bind", "down=tcp://127.0.0.1:0"],
             env={"BANYAN_SESSION_KEY": "k"})
check(proc.returncode == 1 and "node 9 is not in" in proc.stderr,
      "banyan-scheduler --node past the tree: status 1", describe(proc))
proc = sched(["--node", "0", "--topology", "kary:0", "--bind", "up=tcp://127.0.0.1:0",
              "--bind", "down=tcp://127.0.0.1:0"], env={"BANYAN_SESSION_KEY": "k"})
check(proc.returncode == 1, "banyan-scheduler with a bad topology: status 1",
      describe(proc))


def start_controller(profile, *extra):
    """A banyan-controller in processes mode; (process, its key)."""
    ctl = subprocess.Popen([CONTROLLER, "--profile-dir", profile.dir,
                            "--tree-mode", "processes", *extra],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    path = os.path.join(profile.dir, "security", "ipcontroller-client.json")
    wait_until(lambda: os.path.exists(path) or ctl.poll() is not None, 20)
    key = ""
    if os.path.exists(path):
        import json
        with open(path) as f:
            key = json.load(f)["key"]
    return ctl, key


def nodes_of(pid):
    return sorted(p for p, info in processes().items()
                  if info[1] == pid and info[4].startswith("banyan-sched"))


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


bad = subprocess.run([CONTROLLER, "--tree-mode", "forest"], capture_output=True,
                     text=True, timeout=30)
check(bad.returncode == 2 and "tree_mode" in bad.stderr,
      "banyan-controller --tree-mode forest: usage error", describe(bad))

for how in ("SIGTERM", "SIGKILL"):
    with Profile("sched") as profile:
        ctl, key = start_controller(profile, "--depth", "2")
        check(key != "", f"{how}: the controller wrote its files")
        nodes = nodes_of(ctl.pid)
        check(len(nodes) == 7, f"{how}: depth 2 runs 7 node processes", nodes)
        check(all(key not in cmdline(p) and "--control-fd" in cmdline(p)
                  for p in nodes),
              f"{how}: the key is on no node's command line")
        folders = {arg.split("//", 1)[1].rsplit("/", 1)[0]
                   for p in nodes for arg in cmdline(p).split()
                   if "ipc://" in arg}
        os.kill(ctl.pid, getattr(signal, how))
        try:
            ctl.wait(timeout=20)
        except subprocess.TimeoutExpired:
            ctl.kill()
            ctl.wait()
        gone = wait_until(lambda: not any(live(p) for p in nodes), 10)
        check(gone, f"{how} of the controller: no node process is left",
              [p for p in nodes if live(p)])
        for p in nodes:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        if how == "SIGTERM":
            check(not any(os.path.exists(f) for f in folders),
                  "SIGTERM: the controller removed its private folder", folders)
        # a controller killed outright cannot remove it
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)

finish()
