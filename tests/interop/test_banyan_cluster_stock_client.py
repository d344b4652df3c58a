# SPDX-License-Identifier: BSD-3-Clause
"""The stock Python Client against banyan-controller with banyan-engines.

Checks what a user of the stock client sees: ids, execute of a shell
command with its stdout and stderr, exit status as an error, apply of the
engines' named C functions, push/pull, queue_status, a killed engine's
request failing instead of hanging, and shutdown.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

TIMEOUT = 20  # seconds any one result may take


def error_name(call):
    """The ename of the RemoteError call() raises, or its type's name."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - we report what it was
        return getattr(error, "ename", None) or type(error).__name__
    return None


def main():
    bnharness.deadline(240)
    import ipyparallel
    from ipyparallel import Reference

    checks = bnharness.Checks("banyan cluster, stock client")
    with bnharness.Cluster() as cluster:
        # a fast heartbeat, so that a killed engine is noticed in ~1 s
        cluster.start_banyan_controller("--ping", "200",
                                        "--heartbeat-misses", "3",
                                        "--log-level", "info")
        # requested ids, so that the engine to kill is known to be 3
        cluster.start_banyan_engines(3, "--id", "0")
        killable = cluster.start_banyan_engines(1, "--id", "3")
        client = cluster.client()
        start = time.monotonic()
        cluster.wait_for_engines(client, 4)
        checks.check("4 banyan engines registered (%.2f s)"
                     % (time.monotonic() - start),
                     sorted(client.ids) == [0, 1, 2, 3], client.ids)
        view = client[:3]

        result = view.execute("echo hi", block=False)
        result.get(timeout=TIMEOUT)
        result.wait_for_output(timeout=TIMEOUT)
        checks.check("execute('echo hi') shows each engine's stdout",
                     result.stdout == ["hi\n"] * 3, result.stdout)

        # bytes that are not UTF-8 (and a NUL): U+FFFD for the stock
        # client, which ignores the exact bytes banyan's stream carries too
        result = view.execute("printf 'caf\\351 \\377a\\000b\\n'",
                              block=False)
        result.get(timeout=TIMEOUT)
        result.wait_for_output(timeout=TIMEOUT)
        checks.check("output that is not UTF-8 reads with U+FFFD",
                     result.stdout == ["caf\ufffd \ufffda\ufffdb\n"] * 3,
                     result.stdout)

        result = view.execute("echo oops >&2", block=False)
        result.get(timeout=TIMEOUT)
        result.wait_for_output(timeout=TIMEOUT)
        checks.check("stderr comes back separately",
                     result.stderr == ["oops\n"] * 3, result.stderr)

        checks.check("a failing command raises with its status",
                     error_name(lambda: client[0].execute(
                         "exit 3", block=True)) is not None)

        checks.check("apply of the engines' echo returns its argument",
                     view.apply_sync(Reference("echo"), 5) == [5, 5, 5])
        payload = bytes(range(256)) * 40
        checks.check("echo of 10 KiB of bytes comes back unchanged",
                     client[1].apply_sync(Reference("echo"), payload)
                     == payload)
        checks.check("sum of a list",
                     client[2].apply_sync(Reference("sum"), [1, 2, 3.5])
                     == 6.5)
        checks.check("a Python function is refused clearly",
                     error_name(lambda: client[0].apply_sync(
                         lambda x: x, 1)) == "NotImplementedError")

        view.push({"answer": 42, "name": "banyan"}, block=True)
        checks.check("push then pull",
                     view.pull(["answer", "name"], block=True)
                     == [[42, "banyan"]] * 3)
        checks.check("pull of a missing name raises NameError",
                     error_name(lambda: client[0].pull("nothing",
                                                       block=True))
                     == "NameError")

        status = client.queue_status()
        checks.check("queue_status lists the engines",
                     {0, 1, 2, 3} <= set(status) and
                     status[0]["completed"] >= 4, status)

        # abort(): a queued request is dropped, as by stock engines; the
        # running one is ended (a stock engine would let it finish), and
        # the engine is free at once
        engine = client[0]
        running = engine.execute("sleep 30", block=False)
        queued = engine.execute("echo queued", block=False)
        bnharness.wait_until(
            lambda: client.queue_status(targets=[0])[0]["queue"] == 2,
            TIMEOUT, "both requests to reach engine 0")
        engine.abort(queued, block=True)
        started = time.monotonic()
        running.abort()
        name = error_name(lambda: running.get(timeout=TIMEOUT))
        checks.check("AsyncResult.abort() of a running command ends it: "
                     "TaskAborted (%.1f s)" % (time.monotonic() - started),
                     name == "TaskAborted" and time.monotonic() - started < 5,
                     name)
        # (its turn comes once the running one is gone)
        name = error_name(lambda: queued.get(timeout=TIMEOUT))
        checks.check("abort() of a queued request: TaskAborted",
                     name == "TaskAborted", name)
        after = engine.execute("echo after", block=False)
        after.get(timeout=5)
        after.wait_for_output(timeout=5)
        checks.check("the engine runs the next request at once",
                     after.stdout == "after\n", after.stdout)
        broadcast = client.broadcast_view(targets=[0, 1, 2])
        running = broadcast.apply_async(Reference("sleep"), 30)
        time.sleep(0.3)
        started = time.monotonic()
        broadcast.abort(running, block=True)
        # 7.1.0's broadcast results hold the errors as values
        values = running.get(timeout=TIMEOUT)
        checks.check("BroadcastView.abort() ends a running function on "
                     "every engine (%.1f s)" % (time.monotonic() - started),
                     [type(v).__name__ for v in values] == ["TaskAborted"] * 3
                     and time.monotonic() - started < 5, values)

        dead = 3
        pending = client[dead].apply_async(Reference("sleep"), 30)
        time.sleep(0.3)
        cluster.kill(killable)
        name = error_name(lambda: pending.get(timeout=TIMEOUT))
        checks.check("a request to a killed engine fails (%s)" % name,
                     name == "EngineError", name)
        bnharness.wait_until(lambda: dead not in client.ids, TIMEOUT,
                             "the killed engine to unregister")
        checks.check("the killed engine is unregistered",
                     dead not in client.ids, client.ids)
        checks.check("the others still work",
                     view.apply_sync(Reference("echo"), "x")
                     == ["x"] * 3)

        client.shutdown(targets=[0, 1, 2], hub=True, block=True)
        # the controller removes one file, then the other
        try:
            bnharness.wait_until(
                lambda: not os.path.exists(cluster.client_file)
                and not os.path.exists(cluster.engine_file), TIMEOUT,
                "the connection files to go")
        except TimeoutError:
            pass  # the check below says which is left
        checks.check("shutdown removes the connection files",
                     not os.path.exists(cluster.client_file)
                     and not os.path.exists(cluster.engine_file))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
