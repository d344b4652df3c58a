# SPDX-License-Identifier: BSD-3-Clause
"""banyan-controller with two stock ipengines and the stock Python Client.

Checks: engine ids, DirectView apply and execute (results, stdout through
the iopub relay), queue_status, the hub's records, load-balanced and
broadcast (coalescing or not) applies, a request to a killed engine failing
instead of hanging, and shutdown of engines and hub.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

TIMEOUT = 20  # seconds any one result may take


def raises(call):
    """Name of the exception call() raises (RemoteError: its ename)."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - we report what it was
        return getattr(error, "ename", None) or type(error).__name__
    return None


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("test_stock_engines")
    with bnharness.Cluster() as cluster:
        controller = cluster.start_banyan_controller("--log-level", "info")
        engines = [cluster.start_stock_engine() for _ in range(2)]
        client = cluster.client()
        start = time.monotonic()
        cluster.wait_for_engines(client, 2)
        checks.check("two stock engines registered (%.1f s)"
                     % (time.monotonic() - start), client.ids == [0, 1],
                     client.ids)

        view = client[:]
        result = view.apply_async(lambda x: x * 2, 21).get(timeout=TIMEOUT)
        checks.check("DirectView.apply gives the right values",
                     result == [42, 42], result)
        pids = view.apply_async(os.getpid).get(timeout=TIMEOUT)
        checks.check("each engine is its own process",
                     len(set(pids)) == 2, pids)

        reply = view.execute("a = 5\nprint('hello', a)", block=False)
        reply.get(timeout=TIMEOUT)
        checks.check("execute ran on every engine",
                     view.pull("a", block=False).get(timeout=TIMEOUT)
                     == [5, 5])
        reply.wait_for_output(timeout=TIMEOUT)
        checks.check("execute output came through iopub",
                     reply.stdout == ["hello 5\n", "hello 5\n"],
                     reply.stdout)

        status = client.queue_status()
        checks.check("queue_status lists both engines and unassigned",
                     set(status) == {0, 1, "unassigned"}, status)
        checks.check("queue_status counts completed mux requests",
                     status[0]["completed"] >= 4 and status[0]["queue"] == 0
                     and status[0]["tasks"] == 0, status)
        verbose = client.queue_status(targets=[1], verbose=True)
        checks.check("verbose queue_status lists msg_ids",
                     isinstance(verbose[1]["completed"], list)
                     and len(verbose[1]["completed"]) >= 4, verbose)

        records = client.db_query({"engine_uuid": client._engines[0]},
                                  keys=["msg_id", "queue", "completed"])
        checks.check("the hub recorded the direct requests to engine 0",
                     len(records) >= 4 and all(
                         r["queue"] == "mux" and r["completed"] is not None
                         for r in records), records)
        balanced = client.load_balanced_view()
        checks.check("load-balanced apply runs on an engine",
                     balanced.apply_async(abs, -1).get(timeout=TIMEOUT) == 1)
        for coalescing in (False, True):
            broadcast = client.broadcast_view(is_coalescing=coalescing)
            result = broadcast.apply_async(abs, -3).get(timeout=TIMEOUT)
            checks.check("broadcast apply (coalescing %s) gives every "
                         "engine's value" % coalescing, result == [3, 3],
                         result)

        # kill engine 1 while it runs a request
        target = client[1]
        pid = target.apply_async(os.getpid).get(timeout=TIMEOUT)
        pending = target.apply_async(time.sleep, 60)
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        name = raises(lambda: pending.get(timeout=TIMEOUT))
        checks.check("a request on a killed engine fails (%.1f s)"
                     % (time.monotonic() - killed_at),
                     name == "EngineError", name)
        bnharness.wait_until(lambda: client.ids == [0], TIMEOUT,
                             "engine 1 to unregister")
        name = raises(lambda: target.apply_async(os.getpid).get(
            timeout=TIMEOUT))
        checks.check("a new request to the killed engine fails", name
                     is not None, name)
        checks.check("the other engine still works",
                     client[0].apply_async(lambda: 7).get(timeout=TIMEOUT)
                     == 7)

        client.shutdown(targets="all", hub=True, block=True)
        try:
            bnharness.wait_until(lambda: controller.poll() is not None,
                                 10, "the controller to exit")
        except TimeoutError:
            pass
        checks.check("shutdown stops the controller with status 0",
                     controller.poll() == 0, controller.poll())
        checks.check("the connection files are removed",
                     not os.path.exists(cluster.client_file)
                     and not os.path.exists(cluster.engine_file))
        try:
            bnharness.wait_until(lambda: engines[0].poll() is not None, 10,
                                 "engine 0 to exit")
        except TimeoutError:
            pass
        checks.check("shutdown stops the engines",
                     engines[0].poll() is not None)
        if checks.failed:
            cluster.dump_logs()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
