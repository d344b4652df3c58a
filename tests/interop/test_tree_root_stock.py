# SPDX-License-Identifier: BSD-3-Clause
"""A stock 7.1.0 Client's broadcasts when the broadcast tree's root process
dies (banyan-controller --tree-mode processes). The client has no way to
see the root (the controller holds its port): its in-flight request must
be answered with EngineError by the controller, within BOUND, coalescing
or not, and its next broadcast served by the restarted root. The same for
a root stopped (SIGSTOP): the controller finds it silent, kills it and
answers. The hub's records have the failed requests completed."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

BOUND = 10    # s a waiting client may wait for its error (a loaded machine)
TIMEOUT = 30  # s any other wait may take
ENGINES = 2


def root_pid(controller):
    """The pid of the tree's root, a banyan-scheduler --node 0 child of
    controller; None while there is none."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % name, "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == controller.pid and "--node" in args and \
                args[args.index("--node") + 1] == "0":
            return int(name)
    return None


def error_of(ar):
    """(exception names of each engine, seconds) of a failed AsyncResult."""
    import ipyparallel as ipp
    start = time.monotonic()
    try:
        ar.get(timeout=TIMEOUT)
        names = ["no error"]
    except ipp.CompositeError as e:
        names = [name for name, _, _, _ in e.elist]
    except ipp.RemoteError as e:
        names = [e.ename]
    except Exception as e:  # noqa: BLE001 - reported by the caller
        names = [type(e).__name__]
    return names, time.monotonic() - start


def served(view, expected):
    """True once a broadcast gives expected (the restarted root may not be
    back yet: such a broadcast fails at once)."""
    try:
        return view.apply_async(sum, [1, 2]).get(timeout=TIMEOUT) == expected
    except Exception:  # noqa: BLE001 - not back yet
        return False


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("test_tree_root_stock")
    import ipyparallel as ipp  # noqa: F401 - fail early without it
    with bnharness.Cluster() as cluster:
        # a silent node is killed after 10 pings of 200 ms
        controller = cluster.start_banyan_controller(
            "--depth", "1", "--tree-mode", "processes", "--ping", "200",
            "--heartbeat-misses", "10", "--log-level", "warn")
        cluster.start_banyan_engines(ENGINES)
        client = cluster.client()
        cluster.wait_for_engines(client, ENGINES)
        for fault in ("killed", "stopped"):
            for coalescing in (True, False):
                what = "root %s, coalescing=%s" % (fault, coalescing)
                view = client.broadcast_view(is_coalescing=coalescing)
                checks.check("%s: served before" % what,
                             served(view, [3] * ENGINES))
                pid = root_pid(controller)
                ar = view.apply_async(time.sleep, 1)
                # the root has it (it reports each request to the hub)
                original = ar.msg_ids[0] if coalescing else \
                    ar.msg_ids[0].rsplit("_", 1)[0]
                bnharness.wait_until(lambda: original in client.hub_history(),
                                     TIMEOUT, "the request at the root")
                os.kill(pid, signal.SIGKILL if fault == "killed"
                         else signal.SIGSTOP)
                names, took = error_of(ar)
                checks.check("%s: the waiting client gets EngineError for "
                             "each engine (%.2f s)" % (what, took),
                             names == ["EngineError"] * (1 if coalescing
                                                         else ENGINES)
                             and took < BOUND, names)
                start = time.monotonic()
                back = bnharness.wait_until(
                    lambda: served(view, [3] * ENGINES), TIMEOUT,
                    "a broadcast served again")
                checks.check("%s: the next broadcast is served (%.2f s)"
                             % (what, time.monotonic() - start), back)
                done = bnharness.wait_until(
                    lambda: not client.result_status(ar.msg_ids)["pending"],
                    TIMEOUT, "the failed request completed in the records")
                checks.check("%s: the hub's records have it completed"
                             % what, done)
                checks.check("%s: a new root" % what,
                             root_pid(controller) not in (None, pid))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
