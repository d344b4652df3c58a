# SPDX-License-Identifier: BSD-3-Clause
"""Start banyan and stock IPython Parallel processes for interop tests.

Every process runs in its own session (process group) so that cleanup
leaves nothing behind; every wait is bounded.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"
BUILD_DIR = os.environ.get("BN_BUILD_DIR", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "dev"))
BIN_DIR = os.path.join(BUILD_DIR, "bin")


def binary(name):
    """Path of a banyan executable in the build tree."""
    path = os.path.join(BIN_DIR, name)
    if not os.access(path, os.X_OK):
        raise RuntimeError("%s is not built (looked in %s)" % (name, BIN_DIR))
    return path


_LIVE = []


def deadline(seconds):
    """Abort the whole test if it runs longer than seconds, killing every
    process the test started."""
    def expire(signum, frame):
        sys.stderr.write("test ran out of time (%ss)\n" % seconds)
        for cluster in list(_LIVE):
            cluster.dump_logs()
            for proc in cluster.procs:
                cluster.kill(proc)
        os._exit(3)
    signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)


def wait_until(predicate, timeout, what, interval=0.05):
    """Poll predicate until it is true; raise naming what after timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError("timed out after %ss waiting for %s" % (timeout, what))


class Cluster:
    """A profile directory plus the processes started in it."""

    def __init__(self, cluster_id=""):
        self.profile_dir = tempfile.mkdtemp(prefix="bn-interop-")
        self.cluster_id = cluster_id
        self.procs = []
        self.clients = []
        self.log_dir = os.path.join(self.profile_dir, "log")
        os.makedirs(self.log_dir, exist_ok=True)
        _LIVE.append(self)

    # files ---------------------------------------------------------------
    def connection_file(self, kind):
        name = "ipcontroller%s-%s.json" % (
            "-" + self.cluster_id if self.cluster_id else "", kind)
        return os.path.join(self.profile_dir, "security", name)

    @property
    def client_file(self):
        return self.connection_file("client")

    @property
    def engine_file(self):
        return self.connection_file("engine")

    def _wait_files(self, proc, timeout=20):
        def ready():
            if proc.poll() is not None:
                raise RuntimeError("controller exited with %s; log:\n%s" % (
                    proc.returncode, self.log_of(proc)))
            for path in (self.client_file, self.engine_file):
                try:
                    with open(path) as f:
                        json.load(f)
                except (OSError, ValueError):
                    return False
            return True
        wait_until(ready, timeout, "connection files in %s" % self.profile_dir)

    # processes -----------------------------------------------------------
    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.log_dir, "%s-%d.log" % (
            name, len(self.procs))), "wb")
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=full_env,
                                start_new_session=True)
        proc.log_path = log.name
        log.close()
        self.procs.append(proc)
        return proc

    def log_of(self, proc):
        try:
            with open(proc.log_path, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def cluster_args(self):
        args = ["--profile-dir", self.profile_dir]
        if self.cluster_id:
            args += ["--cluster-id", self.cluster_id]
        return args

    def start_banyan_controller(self, *extra):
        proc = self.spawn("banyan-controller", [binary("banyan-controller")]
                          + self.cluster_args() + list(extra))
        self._wait_files(proc)
        return proc

    def start_stock_controller(self, *extra):
        proc = self.spawn("ipcontroller", [
            PYTHON, "-m", "ipyparallel.controller", "--ip=127.0.0.1",
            "--profile-dir=%s" % self.profile_dir, "--log-level=WARN"]
            + (["--cluster-id=%s" % self.cluster_id] if self.cluster_id
               else []) + list(extra))
        self._wait_files(proc, timeout=60)
        return proc

    def start_banyan_engines(self, count=1, *extra):
        return self.spawn("banyan-engine", [
            binary("banyan-engine"), "--file", self.engine_file,
            "--count", str(count)] + list(extra))

    def start_stock_engine(self, *extra):
        return self.spawn("ipengine", [
            PYTHON, "-m", "ipyparallel.engine",
            "--file=%s" % self.engine_file, "--log-level=WARN"]
            + list(extra))

    def client(self, timeout=20):
        import ipyparallel
        client = ipyparallel.Client(self.client_file,
                                    timeout=timeout)
        self.clients.append(client)
        return client

    def wait_for_engines(self, client, n, timeout=60):
        wait_until(lambda: len(client.ids) >= n, timeout,
                   "%d engines (have %s)" % (n, client.ids))
        return client.ids

    # cleanup -------------------------------------------------------------
    def kill(self, proc, sig=signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass

    def close(self):
        for client in self.clients:
            try:
                client.close(linger=0)
            except Exception:
                pass
        for proc in self.procs:
            if proc.poll() is None:
                self.kill(proc, signal.SIGTERM)
        end = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(proc)
                proc.wait(5)
        shutil.rmtree(self.profile_dir, ignore_errors=True)
        if self in _LIVE:
            _LIVE.remove(self)

    def dump_logs(self):
        for proc in self.procs:
            sys.stderr.write("---- %s (exit %s)\n%s\n" % (
                proc.args[0] if isinstance(proc.args, list) else proc.args,
                proc.poll(), self.log_of(proc)))

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is not None:
            self.dump_logs()
        self.close()
        return False


class Checks:
    """Counts named checks and prints the closing 'N passed, N failed' line."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, what, condition, detail=""):
        if condition:
            self.passed += 1
            print("ok   %s" % what)
        else:
            self.failed += 1
            print("FAIL %s %s" % (what, detail))
        sys.stdout.flush()

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed,
                                            self.failed))
        return 0 if self.failed == 0 else 1
