# SPDX-License-Identifier: BSD-3-Clause
"""clitest: helpers for the CLI tests: run the real banyan binaries in a
temporary profile folder of their own, look at processes in /proc, and make
sure nothing is left running whatever happens."""

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("BN_BUILD_DIR") or os.path.join(HERE, "..", "..", "build", "dev")
BIN = os.path.join(BUILD, "bin")
BANYAN = os.path.join(BIN, "banyan")

_failures = []


def check(condition, what, detail=""):
    """Record one assertion; print it either way."""
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))
        _failures.append(what)
    return condition


def finish():
    """Exit 0 if every check passed."""
    if _failures:
        print(f"{len(_failures)} check(s) failed")
        sys.exit(1)
    print("all checks passed")
    sys.exit(0)


def run(args, timeout=60, env=None, input=None):
    """Run banyan with args; return the CompletedProcess (text output)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    start = time.monotonic()
    proc = subprocess.run([BANYAN] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=full_env, input=input,
                          stdin=None if input is not None else subprocess.DEVNULL)
    proc.elapsed = time.monotonic() - start
    return proc


def run_on_terminal(args, timeout=60):
    """Run banyan with stdout and stderr on a pseudo-terminal; return
    (status, everything it wrote)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([BANYAN] + args, stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    try:
        status = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        status = proc.wait()
    return status, output.decode(errors="replace")


def describe(proc):
    return f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def stat(pid):
    """(state, ppid, pgrp, sid, comm) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2]), int(fields[3]), comm


def cmdline(pid):
    """The arguments of a process, or [] if it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def live(pid):
    """True if pid runs and is not a zombie."""
    info = stat(pid)
    return info is not None and info[0] not in ("Z", "X")


def processes():
    """{pid: (state, ppid, pgrp, sid, comm)} of every live process."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = stat(int(name))
            if info and info[0] not in ("Z", "X"):
                table[int(name)] = info
    return table


def tree(pgid, roots=()):
    """Live processes of group pgid, of roots, and their descendants."""
    table = processes()
    members = {pid for pid, info in table.items() if info[2] == pgid}
    members |= {pid for pid in roots if pid in table}
    changed = True
    while changed:
        changed = False
        for pid, info in table.items():
            if pid not in members and info[1] in members:
                members.add(pid)
                changed = True
    return members


def wait_until(condition, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


class Profile:
    """A temporary profile folder; on exit stops whatever cluster runs in it
    and kills anything of its process groups that is still alive."""

    def __init__(self, name="cli"):
        self.dir = tempfile.mkdtemp(prefix=f"banyan-{name}.")
        self.groups = set()

    def __enter__(self):
        return self

    def args(self, *more):
        return ["--profile-dir", self.dir] + list(more)

    def record(self, cluster_id=""):
        path = os.path.join(self.dir, "pid",
                            f"banyan-cluster{'-' + cluster_id if cluster_id else ''}.json")
        try:
            with open(path) as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        self.groups.add(record["pgid"])
        return record

    def engine_pids(self, cluster_id=""):
        record = self.record(cluster_id)
        return [proc[0] for proc in record["engine_procs"]] if record else []

    def __exit__(self, *exc):
        pid_dir = os.path.join(self.dir, "pid")
        for name in os.listdir(pid_dir) if os.path.isdir(pid_dir) else []:
            if name.startswith("banyan-cluster") and name.endswith(".json"):
                cluster_id = name[len("banyan-cluster"):-len(".json")].lstrip("-")
                self.record(cluster_id)
                run(["cluster", "stop"]
                    + self.args("--cluster-id", cluster_id, "--timeout", "3"),
                    timeout=30)
        for pgid in self.groups:
            for pid in tree(pgid, [pgid]):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)
        return False
