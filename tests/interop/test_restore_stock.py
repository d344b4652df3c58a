# SPDX-License-Identifier: BSD-3-Clause
"""A stock 7.1.0 Client against banyan-controller --restore --db sqlite:
a coalescing broadcast is answered, the controller is killed (SIGKILL) and
started again, and a new stock client still finds each engine's result of
that broadcast: get_result and result_status of "<original>_<uuid>", and
db_query of the broadcast's record with its merged result; a broadcast the
killed controller never answered raises ControllerGone, not waits."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

TIMEOUT = 20  # seconds any one wait may take
ENGINES = 2   # banyan engine processes, one engine each: pids differ


def controller(cluster):
    return cluster.spawn("banyan-controller", [
        bnharness.binary("banyan-controller")] + cluster.cluster_args() + [
        "--restore", "--db", "sqlite:%s/records.db" % cluster.profile_dir,
        "--ping", "200", "--log-level", "warn"])


def connect(cluster):
    """A stock client of the controller that answers now."""
    def attempt():
        try:
            return cluster.client(timeout=2)
        except Exception:  # noqa: BLE001 - the old files, or not up yet
            return None
    return bnharness.wait_until(attempt, TIMEOUT, "a client connection")


def main():
    bnharness.deadline(240)
    checks = bnharness.Checks("test_restore_stock")
    import ipyparallel as ipp  # noqa: F401 - fail early without it
    with bnharness.Cluster() as cluster:
        first = controller(cluster)
        cluster._wait_files(first)
        for _ in range(ENGINES):
            # an engine waits a minute for a controller gone silent
            cluster.spawn("banyan-engine", [
                bnharness.binary("banyan-engine"), "--file", cluster.engine_file],
                env={"BANYAN_ENGINE_TIMEOUT": "60s"})
        client = cluster.client()
        ids = sorted(cluster.wait_for_engines(client, ENGINES))
        uuids = {e: client._engines[e] for e in ids}
        view = client.broadcast_view(is_coalescing=True)
        ar = view.apply_async(os.getpid)
        pids = dict(zip(ar.get(timeout=TIMEOUT), ar.engine_id))
        pids = {e: p for p, e in pids.items()}
        checks.check("a coalescing broadcast answers each engine's pid",
                     sorted(pids) == ids and len(set(pids.values())) == ENGINES,
                     pids)
        original = ar.msg_ids[0]
        lost = view.apply_async(time.sleep, 2).msg_ids[0]
        # (a history_request writes the records to SQLite first)
        bnharness.wait_until(lambda: lost in client.hub_history(), TIMEOUT,
                             "the second broadcast in the history")
        checks.check("the hub's history has the broadcast",
                     original in client.hub_history(), client.hub_history())
        client.close()
        cluster.clients.remove(client)

        first.send_signal(signal.SIGKILL)
        first.wait()
        second = controller(cluster)
        start = time.monotonic()
        client = connect(cluster)
        bnharness.wait_until(lambda: sorted(client.ids) == ids, TIMEOUT,
                             "the engines back under their ids")
        checks.check("restarted: a new client, the engines back under their "
                     "ids (%.1f s)" % (time.monotonic() - start),
                     {e: client._engines[e] for e in client.ids} == uuids,
                     client._engines)
        parts = ["%s_%s" % (original, uuids[e]) for e in ids]
        try:
            status = client.result_status(parts)
        except Exception as e:  # noqa: BLE001 - reported below
            status = {"completed": [], "pending": [], "error": repr(e)}
        checks.check("result_status: each engine's part is completed",
                     sorted(status["completed"]) == sorted(parts)
                     and not status["pending"], status)
        try:
            kept = client.get_result(parts, block=False)
            values, engines = kept.get(timeout=TIMEOUT), list(kept.engine_id)
        except Exception as e:  # noqa: BLE001 - reported below
            values, engines = repr(e), []
        checks.check("get_result: each engine's own result of the broadcast",
                     values == [pids[e] for e in ids] and engines == ids,
                     (values, engines, pids))
        records = client.db_query({"msg_id": original},
                                  keys=["result_metadata", "result_buffers",
                                        "queue"])
        record = records[0] if len(records) == 1 else {}
        targets = record.get("result_metadata", {}).get("broadcast_targets", [])
        checks.check("db_query: the broadcast's record, every engine's target "
                     "and buffer", record.get("queue") == "broadcast"
                     and sorted(t[1] for t in targets) == ids
                     and len(record.get("result_buffers", [])) == ENGINES,
                     records)
        try:
            client.get_result(lost).get(timeout=TIMEOUT)
            name = "no error"
        except Exception as e:  # noqa: BLE001 - reported below
            name = getattr(e, "ename", None) or type(e).__name__
        checks.check("get_result of the broadcast in flight at the kill "
                     "raises ControllerGone", name == "ControllerGone", name)
        result = client.broadcast_view(is_coalescing=True).apply_async(
            os.getpid).get(timeout=TIMEOUT)
        checks.check("the next broadcast is served",
                     sorted(result) == sorted(pids.values()), result)
        second.send_signal(signal.SIGTERM)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
