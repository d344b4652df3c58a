# SPDX-License-Identifier: BSD-3-Clause
"""The stock BroadcastView (coalescing and not) through banyan's broadcast
tree at depth 0, 1 and 2, with stock ipengines and banyan engines in the
same cluster, against what the direct view returns and what a stock
ipcontroller returns for the same requests.

Checks per depth: apply results and their engine order, per-engine
msg_ids, execute, an error on every engine raised as a RemoteError (also
when coalescing) and the view working after it, and a subset of targets.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

TIMEOUT = 20  # seconds any one result may take
STOCK = 2     # stock ipengines
BANYAN = 2    # banyan engines (one process)


def raises(call):
    """Name of the exception call() raises (RemoteError: its ename)."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - we report what it was
        return getattr(error, "ename", None) or type(error).__name__
    return None


def run(cluster, client, checks, label, n):
    """Broadcasts on a connected client of n engines; returns what a
    comparison with another controller needs."""
    import ipyparallel as ipp
    seen = {}
    ids = sorted(client.ids)
    direct = dict(zip(ids, client[ids].apply_async(os.getpid)
                      .get(timeout=TIMEOUT)))
    for coalescing in (False, True):
        what = "%s coalescing=%s" % (label, coalescing)
        view = client.broadcast_view(is_coalescing=coalescing)
        ar = view.apply_async(sum, [1, 2, 3])
        result = ar.get(timeout=TIMEOUT)
        checks.check("%s: apply gives every engine's result" % what,
                     result == [6] * n, result)
        order = list(ar.engine_id)
        checks.check("%s: every engine answered once" % what,
                     sorted(order) == ids, order)
        seen[coalescing] = order
        if coalescing:
            checks.check("%s: one msg_id for the whole request" % what,
                         len(ar.msg_ids) == 1, ar.msg_ids)
        else:
            checks.check(
                "%s: per-engine msg_ids <original>_<uuid>" % what,
                len(ar.msg_ids) == n and all(
                    m.endswith("_" + client._engines[e])
                    for m, e in zip(ar.msg_ids, order)), ar.msg_ids)
        ar = view.apply_async(os.getpid)
        values = ar.get(timeout=TIMEOUT)
        pids = dict(zip(ar.engine_id, values))
        checks.check("%s: each engine's own value, as the direct view's"
                     % what, pids == direct, (pids, direct))
        # the hub keeps every engine's part, merged or not: another
        # client's get_result of "<original>_<uuid>" gives each engine's
        if coalescing:
            parts = ["%s_%s" % (ar.msg_ids[0], client._engines[e])
                     for e in ids]
        else:
            parts = [ar.msg_ids[list(ar.engine_id).index(e)] for e in ids]
        other = cluster.client()
        try:
            kept = other.get_result(parts, block=False)
            values = kept.get(timeout=TIMEOUT)
            kept_engines = list(kept.engine_id)
        except Exception as e:
            values, kept_engines = repr(e), []
        other.close()
        checks.check("%s: get_result of each engine's part from the hub"
                     % what, values == [direct[e] for e in ids]
                     and kept_engines == ids, (values, kept_engines))
        name = raises(lambda: view.apply_async(abs, "x").get(timeout=TIMEOUT))
        checks.check("%s: an error on every engine is raised" % what,
                     name in ("TypeError", "CompositeError", "NameError",
                              "KeyError", "ValueError",
                              "NotImplementedError"), name)
        # after the error the view still works
        result = view.apply_async(sum, [1, 1]).get(timeout=TIMEOUT)
        checks.check("%s: works after an error" % what,
                     result == [2] * n, result)
        some = ids[1:3]
        sub = client.broadcast_view(targets=some, is_coalescing=coalescing)
        ar = sub.apply_async(sum, [2, 2])
        result = ar.get(timeout=TIMEOUT)
        checks.check("%s: a subset of targets" % what,
                     result == [4] * len(some) and
                     sorted(ar.engine_id) == some, (result, ar.engine_id))
        if not coalescing:
            replies = view.execute("", block=False).get(timeout=TIMEOUT)
            checks.check("%s: execute" % what, len(replies) == n, replies)
    return seen


def banyan_round(checks, depth, stock_orders):
    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller("--depth", str(depth),
                                        "--log-level", "warn")
        for _ in range(STOCK):
            cluster.start_stock_engine()
        cluster.start_banyan_engines(BANYAN)
        client = cluster.client()
        n = STOCK + BANYAN
        start = time.monotonic()
        cluster.wait_for_engines(client, n)
        checks.check("depth %d: %d engines registered (%.1f s)"
                     % (depth, n, time.monotonic() - start),
                     len(client.ids) == n, client.ids)
        orders = run(cluster, client, checks, "banyan depth %d" % depth, n)
        leaves = 2 ** depth
        expected = sorted(client.ids, key=lambda e: (e % leaves, e))
        checks.check("depth %d: coalesced results in tree order %s"
                     % (depth, expected), orders[True] == expected,
                     orders[True])
        if depth in stock_orders:
            checks.check("depth %d: same coalesced order as the stock "
                         "ipcontroller" % depth,
                         orders[True] == stock_orders[depth],
                         (orders[True], stock_orders[depth]))


def kill_round(checks):
    """Depth 2, coalescing: a stock engine killed while a broadcast runs.
    The hub notices through the heartbeat and the tree fails its slot with
    EngineError instead of waiting for it; the next broadcast reaches the
    others."""
    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller("--depth", "2", "--ping", "200",
                                        "--heartbeat-misses", "3")
        for _ in range(STOCK):
            cluster.start_stock_engine()
        cluster.start_banyan_engines(BANYAN)
        client = cluster.client()
        n = STOCK + BANYAN
        cluster.wait_for_engines(client, n)
        pids = client[:].apply_async(os.getpid).get(timeout=TIMEOUT)
        view = client.broadcast_view(is_coalescing=True)
        pending = view.apply_async(time.sleep, 5)
        time.sleep(0.5)
        # one stock engine's process (banyan engines share one process)
        for pid in set(pids):
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"ipyparallel.engine" in f.read():
                    os.kill(pid, 9)
                    break
        start = time.monotonic()
        name = raises(lambda: pending.get(timeout=TIMEOUT))
        checks.check("depth 2 coalescing: an engine killed mid-broadcast "
                     "gives EngineError (%.1f s)"
                     % (time.monotonic() - start), name == "EngineError",
                     name)
        bnharness.wait_until(lambda: len(client.ids) == n - 1, TIMEOUT,
                             "the killed engine's unregistration")
        result = client.broadcast_view(is_coalescing=True).apply_async(
            sum, [1, 2]).get(timeout=TIMEOUT)
        checks.check("the next broadcast reaches the other engines",
                     result == [3] * (n - 1), result)


def stock_round(checks, depth):
    """The coalesced engine order a stock ipcontroller gives (depth >= 1:
    its depth-0 coalescing is broken)."""
    with bnharness.Cluster() as cluster:
        cluster.start_stock_controller(
            "--IPController.broadcast_scheduler_depth=%d" % depth)
        for _ in range(STOCK):
            cluster.start_stock_engine()
        cluster.start_banyan_engines(BANYAN)
        client = cluster.client()
        cluster.wait_for_engines(client, STOCK + BANYAN)
        view = client.broadcast_view(is_coalescing=True)
        ar = view.apply_async(sum, [1, 2, 3])
        result = ar.get(timeout=TIMEOUT)
        checks.check("stock ipcontroller depth %d coalescing" % depth,
                     result == [6] * (STOCK + BANYAN), result)
        return list(ar.engine_id)


def main():
    bnharness.deadline(290)
    checks = bnharness.Checks("test_broadcast_stock")
    stock_orders = {}
    if os.environ.get("BN_INTEROP_QUICK") is None:
        stock_orders[2] = stock_round(checks, 2)
    for depth in (0, 1, 2):
        banyan_round(checks, depth, stock_orders)
    kill_round(checks)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
