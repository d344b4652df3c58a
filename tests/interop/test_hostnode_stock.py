# SPDX-License-Identifier: BSD-3-Clause
"""Engines behind a host node (doc/hosts.md) with the stock IPython Parallel
7.1.0: banyan-controller, `banyan-scheduler --host` on the same machine, two
stock ipengines and two banyan engines connected to the host node's file,
and the stock Python Client of the controller.

Checks: the client sees every engine; DirectView apply and execute (output
through the host node's iopub link); BroadcastView, coalescing and not;
load-balanced applies; a stock engine killed is unregistered well within
the heartbeat bound and its request fails instead of hanging.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

TIMEOUT = 20  # seconds any one result may take


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("test_hostnode_stock")
    import ipyparallel as ipp
    with bnharness.Cluster() as cluster:
        # heartbeats would notice a death in 11 s
        cluster.start_banyan_controller("--ping", "1s",
                                        "--heartbeat-misses", "10")
        with open(cluster.engine_file) as f:
            info = f.read()
        host_dir = os.path.join(cluster.profile_dir, "h1")
        host_file = os.path.join(host_dir, "security",
                                 "ipcontroller-engine.json")
        host = cluster.spawn("banyan-scheduler", [
            bnharness.binary("banyan-scheduler"), "--host",
            "--profile-dir", host_dir, "--host-name", "h1"],
            env={"BANYAN_CONNECTION_INFO": info})

        def written():
            if host.poll() is not None:
                raise RuntimeError("the host node exited: "
                                   + cluster.log_of(host))
            try:
                with open(host_file) as f:
                    return json.load(f)
            except (OSError, ValueError):
                return None
        local = bnharness.wait_until(written, 20, "the host node's file")
        checks.check("the host node wrote its connection file",
                     local["key"] == json.loads(info)["key"]
                     and local["registration"]
                     != json.loads(info)["registration"], local)

        stock = [cluster.spawn("ipengine", [
            bnharness.PYTHON, "-m", "ipyparallel.engine",
            "--file=%s" % host_file, "--log-level=WARN"]) for _ in range(2)]
        cluster.spawn("banyan-engine", [
            bnharness.binary("banyan-engine"), "--file", host_file,
            "--count", "2"])
        client = cluster.client()
        cluster.wait_for_engines(client, 4)
        checks.check("the stock client sees the four engines behind the "
                     "host node", sorted(client.ids) == [0, 1, 2, 3],
                     client.ids)

        # which engines are stock ones: they run Python
        kinds = {}
        for eid in client.ids:
            try:
                kinds[eid] = client[eid].apply_sync(lambda: "python")
            except Exception:  # noqa: BLE001 - a banyan engine refuses
                kinds[eid] = "banyan"
        pythons = [eid for eid, kind in kinds.items() if kind == "python"]
        checks.check("two of them run Python (the stock ipengines)",
                     len(pythons) == 2, kinds)

        view = client[pythons]
        result = view.apply_async(lambda x: x * 2, 21).get(timeout=TIMEOUT)
        checks.check("DirectView.apply on the stock engines",
                     result == [42, 42], result)
        reply = view.execute("print('hello from', 7)", block=False)
        reply.get(timeout=TIMEOUT)
        reply.wait_for_output(timeout=TIMEOUT)
        checks.check("their output comes through the host node's iopub",
                     reply.stdout == ["hello from 7\n"] * 2, reply.stdout)

        everyone = client[:]
        lengths = everyone.apply_async(ipp.Reference("len"),
                                       b"abc").get(timeout=TIMEOUT)
        checks.check("DirectView.apply on all four", lengths == [3] * 4,
                     lengths)
        for coalescing in (False, True):
            bview = client.broadcast_view(is_coalescing=coalescing)
            got = bview.apply_async(ipp.Reference("len"),
                                    b"x" * 2000).get(timeout=TIMEOUT)
            checks.check("BroadcastView (coalescing %s) reaches all four "
                         "through the host node's leaf" % coalescing,
                         got == [2000] * 4, got)
        lbview = client.load_balanced_view()
        tasks = [lbview.apply_async(ipp.Reference("len"), b"xy")
                 for _ in range(8)]
        values = [task.get(timeout=TIMEOUT) for task in tasks]
        checks.check("load-balanced applies run behind the host node",
                     values == [2] * 8, values)

        # a stock engine killed (its process group: kernel and nanny): the
        # host node sees its connection close
        victim = pythons[0]
        group = os.getpgid(client[victim].apply_sync(os.getpid))
        victim_proc = [proc for proc in stock if proc.pid == group][0]
        pending = client[victim].apply_async(time.sleep, 30)
        time.sleep(0.5)
        start = time.monotonic()
        cluster.kill(victim_proc, signal.SIGKILL)
        try:
            pending.get(timeout=TIMEOUT)
            error = None
        except Exception as caught:  # noqa: BLE001 - we report what it was
            error = getattr(caught, "ename", None) or type(caught).__name__
        checks.check("the request running on the killed engine fails "
                     "(EngineError)", error == "EngineError", error)
        bnharness.wait_until(lambda: victim not in client.ids, TIMEOUT,
                             "engine %d unregistered" % victim)
        took = time.monotonic() - start
        checks.check("the killed engine is unregistered in %.1f s, under "
                     "the 11 s heartbeat bound" % took, took < 6, took)
        left = client[:].apply_async(ipp.Reference("len"),
                                     b"ab").get(timeout=TIMEOUT)
        checks.check("the other three go on", left == [2] * 3, left)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
