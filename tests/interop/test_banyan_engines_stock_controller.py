# SPDX-License-Identifier: BSD-3-Clause
"""banyan-engine against a stock IPython Parallel 7.1.0 controller, driven
by the stock Python client: command line, waiting for the connection file,
IPP_CONNECTION_INFO, ids, SIGTERM, execute with streamed output, apply of
named C functions, push/pull, errors, queue_status, broadcast and
load-balanced views, plugins, shutdown of the engines.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

COUNT = 3


def main():
    bnharness.deadline(240)
    import ipyparallel
    from ipyparallel import Reference
    from ipyparallel.error import RemoteError

    checks = bnharness.Checks("banyan engines, stock controller")
    # a bare name: the engine finds it in the plugin folder beside it
    plugin = "bn_plugin_example.so"
    engine_bin = bnharness.binary("banyan-engine")

    run = subprocess.run([engine_bin, "--help"], capture_output=True,
                         text=True, timeout=10)
    checks.check("--help prints usage and examples on stdout, exit 0",
                 run.returncode == 0 and "Examples:" in run.stdout
                 and "--count" in run.stdout, run.returncode)
    run = subprocess.run([engine_bin, "--version"], capture_output=True,
                         text=True, timeout=10)
    checks.check("--version", run.returncode == 0
                 and run.stdout.startswith("banyan-engine "), run.stdout)
    for bad in (["--bogus"], ["--count", "0"], ["--count"], ["extra"]):
        run = subprocess.run([engine_bin] + bad, capture_output=True,
                             text=True, timeout=10)
        checks.check("usage error %s exits 2" % bad,
                     run.returncode == 2 and "banyan-engine:" in run.stderr,
                     (run.returncode, run.stderr))

    with bnharness.Cluster() as cluster:
        cluster.start_stock_controller()
        # --profile-dir waits for the connection file to appear
        held = cluster.engine_file + ".held"
        os.rename(cluster.engine_file, held)
        engines = cluster.spawn("banyan-engine", [
            engine_bin, "--profile-dir", cluster.profile_dir,
            "--count", str(COUNT), "--plugin", plugin])
        time.sleep(1.5)
        checks.check("the engines wait for the connection file",
                     engines.poll() is None)
        os.rename(held, cluster.engine_file)
        # Client(url_file=...) is ignored by 7.1.0: pass the file first.
        client = ipyparallel.Client(cluster.client_file, timeout=30)
        cluster.clients.append(client)
        ids = cluster.wait_for_engines(client, COUNT, timeout=60)
        checks.check("ids lists the %d engines" % COUNT,
                     sorted(ids) == list(range(COUNT)), ids)

        # the connection info itself in the environment, settings from a
        # config file (overridden by a flag), a requested id
        with open(cluster.engine_file) as f:
            info = f.read()
        config = os.path.join(cluster.profile_dir, "engine.conf")
        with open(config, "w") as f:
            f.write("engine\n    count = 5\nlog\n    level = warn\n")
        other = cluster.spawn("banyan-engine", [
            engine_bin, "--config", config, "--count", "1", "--id", "10"],
            env={"IPP_CONNECTION_INFO": info})
        ids = cluster.wait_for_engines(client, COUNT + 1, timeout=60)
        checks.check("IPP_CONNECTION_INFO, --config, --id 10",
                     sorted(ids) == list(range(COUNT)) + [10], ids)
        pids = [client[i].apply_sync(Reference("getpid")) for i in (0, 10)]
        checks.check("engine 10 runs in its own process",
                     pids[0] == engines.pid and pids[1] == other.pid, pids)

        # SIGTERM: the running command is killed, the engine unregisters
        marker = os.path.join(cluster.profile_dir, "never")
        ar = client[10].execute("sleep 30; touch %s" % marker, block=False)
        time.sleep(0.5)
        other.terminate()
        bnharness.wait_until(lambda: 10 not in client.ids, 20,
                             "engine 10 to unregister")
        checks.check("SIGTERM unregisters the engine at once",
                     10 not in client.ids, client.ids)
        try:
            ar.get(10)
            checks.check("its running command fails", False)
        except Exception as e:
            checks.check("its running command fails (%s)" % type(e).__name__,
                         True)
        other.wait(10)
        checks.check("banyan-engine exits 0 on SIGTERM",
                     other.returncode == 0, other.returncode)
        time.sleep(0.5)
        checks.check("and its command was killed",
                     not os.path.exists(marker))
        view = client[list(range(COUNT))]

        ar = view.execute("echo hi; echo oops >&2", block=False)
        ar.wait(30)
        ar.wait_for_output(30)
        checks.check("execute('echo hi') succeeds", ar.successful())
        checks.check("its stdout is in the AsyncResult",
                     ar.stdout == ["hi\n"] * COUNT, ar.stdout)
        checks.check("its stderr too", ar.stderr == ["oops\n"] * COUNT,
                     ar.stderr)

        ar = client[0].execute("echo $BANYAN_ENGINE_ID", block=False)
        ar.wait(30)
        ar.wait_for_output(30)
        checks.check("commands see their engine id", ar.stdout == "0\n",
                     ar.stdout)

        value = client[0].apply_sync(Reference("echo"), 5)
        checks.check("apply_sync(Reference('echo'), 5) returns 5",
                     value == 5, value)
        value = view.apply_sync(Reference("sum"), [1, 2, 3.5])
        checks.check("sum on every engine", value == [6.5] * COUNT, value)
        value = client[1].apply_sync(sum, [1, 2])
        checks.check("builtins.sum pickled by name runs as sum", value == 3,
                     value)
        data = b"x" * 5000
        value = client[2].apply_sync(Reference("checksum"), data)
        import hashlib
        checks.check("checksum of 5000 bytes (out-of-band buffer)",
                     value == hashlib.sha256(data).hexdigest(), value)
        value = client[0].apply_sync(Reference("double"), 21)
        checks.check("plugin function double(21)", value == 42, value)

        view.push({"a": 5, "b": [1, 2.5, "x"], "c": data}, block=True)
        value = view.pull("a", block=True)
        checks.check("push/pull of one name", value == [5] * COUNT, value)
        value = client[1].pull(["a", "b", "c"], block=True)
        checks.check("pull of several names", value == [5, [1, 2.5, "x"],
                                                         data])
        value = client[1].apply_sync(Reference("echo"), Reference("b"))
        checks.check("a Reference argument reads the namespace",
                     value == [1, 2.5, "x"], value)
        try:
            client[0].pull("nope", block=True)
            checks.check("pull of a missing name raises", False)
        except RemoteError as e:
            checks.check("pull of a missing name raises NameError",
                         e.ename == "NameError", e.ename)

        try:
            client[0].execute("exit 3", block=True)
            checks.check("a failing command raises", False)
        except RemoteError as e:
            checks.check("a failing command raises CalledProcessError",
                         e.ename == "CalledProcessError"
                         and "status 3" in e.evalue, e)
        try:
            client[0].apply_sync(lambda x: x, 1)
            checks.check("a Python function is refused", False)
        except RemoteError as e:
            checks.check("a Python function is refused clearly",
                         e.ename == "NotImplementedError"
                         and "lambda" in e.evalue, e)

        # sleep does not block the other engines or the same engine's
        # control channel
        start = time.monotonic()
        slow = client[0].apply_async(Reference("sleep"), 2)
        value = client[1].apply_sync(Reference("echo"), "fast")
        checks.check("other engines answer during a sleep",
                     value == "fast" and time.monotonic() - start < 1.5)
        slow.get(30)
        checks.check("the sleep answers after its time",
                     time.monotonic() - start >= 1.9)

        value = client.broadcast_view().apply_sync(Reference("echo"), 7)
        checks.check("broadcast view", value == [7] * COUNT, value)
        value = client.load_balanced_view().apply_sync(Reference("echo"), 8)
        checks.check("load-balanced view", value == 8, value)

        status = client.queue_status()
        checks.check("queue_status lists the engines",
                     all(i in status for i in range(COUNT))
                     and all(status[i]["queue"] == 0 for i in range(COUNT)),
                     status)
        done = sum(status[i]["completed"] for i in range(COUNT))
        checks.check("queue_status counts completed tasks", done >= 10,
                     status)

        client.shutdown(targets=[0], hub=False, block=True)
        bnharness.wait_until(lambda: 0 not in client.ids, 20,
                             "engine 0 to unregister")
        checks.check("shutdown of one engine unregisters it",
                     sorted(client.ids) == list(range(1, COUNT)),
                     client.ids)
        value = client[1].apply_sync(Reference("echo"), 9)
        checks.check("the others still work", value == 9, value)
        client.shutdown(targets="all", hub=False, block=True)
        bnharness.wait_until(lambda: engines.poll() is not None, 20,
                             "banyan-engine to exit")
        checks.check("banyan-engine exits 0 when all are shut down",
                     engines.returncode == 0, engines.returncode)
        try:
            bnharness.wait_until(lambda: client.ids == [], 20,
                                 "the hub to unregister every engine")
        except TimeoutError:
            pass
        checks.check("no engines left", client.ids == [], client.ids)
        if checks.failed:
            cluster.dump_logs()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
