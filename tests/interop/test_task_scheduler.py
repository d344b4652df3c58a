# SPDX-License-Identifier: BSD-3-Clause
"""The task (load-balanced) scheduler against the stock 7.1.0 peers.

1. banyan-controller with two stock ipengines, driven by the stock
   LoadBalancedView: apply, map, after and follow dependencies, targets,
   functional dependencies (@depend: UnmetDependency makes the scheduler
   try the other engine), retries, timeouts, impossible and invalid
   dependencies, queue_status with tasks.
2. banyan-controller with banyan engines: the same view with the engines'
   named functions, and a dead engine's task failing with EngineError.
3. A stock ipcontroller's task scheduler serving banyan engines.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

TIMEOUT = 30  # seconds any one result may take


def ename_of(call):
    """The ename of the RemoteError call() raises, or its type's name."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - we report what it was
        return getattr(error, "ename", None) or type(error).__name__
    return None


def stock_engines(checks):
    import ipyparallel as ipp

    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller("--log-level", "info")
        for _ in range(2):
            cluster.start_stock_engine()
        client = cluster.client()
        cluster.wait_for_engines(client, 2)
        lb = client.load_balanced_view()

        checks.check("stock engines: LoadBalancedView.apply",
                     lb.apply_sync(lambda x: x * 3, 14) == 42)
        squares = lb.map_sync(lambda x: x * x, range(32))
        checks.check("map over 32 items gives every value in order",
                     squares == [x * x for x in range(32)], squares)
        async_map = lb.map_async(lambda x: x + 1, range(100), chunksize=7)
        checks.check("map_async with chunks",
                     async_map.get(timeout=TIMEOUT) == list(range(1, 101)))

        # after: the dependent task starts once the first finished
        slow = lb.apply_async(lambda: __import__("time").sleep(0.5) or "slow")
        with lb.temp_flags(after=slow):
            later = lb.apply_async(
                lambda: __import__("time").time())
        later_time = later.get(timeout=TIMEOUT)
        checks.check("after: the dependent task ran after its dependency",
                     slow.get(timeout=TIMEOUT) == "slow"
                     and later_time >= slow.metadata["completed"].timestamp()
                     - 0.05, (later_time, slow.metadata["completed"]))

        # follow: on the engine where the followed task ran
        first = lb.apply_async(os.getpid)
        pid = first.get(timeout=TIMEOUT)
        with lb.temp_flags(follow=first):
            pids = [lb.apply_async(os.getpid) for _ in range(6)]
        checks.check("follow: every task ran where the followed one did",
                     [r.get(timeout=TIMEOUT) for r in pids] == [pid] * 6)

        # targets: uuid strings in the metadata
        target = client.ids[1]
        with lb.temp_flags(targets=[target]):
            on_target = [lb.apply_async(os.getpid) for _ in range(4)]
        engine_ids = {r.get(timeout=TIMEOUT) and r.engine_id
                      for r in on_target}
        checks.check("targets: tasks ran on the target only",
                     engine_ids == {target}, engine_ids)

        # functional dependency: only engine 1 has 'special'; engine 0
        # raises UnmetDependency and the scheduler tries engine 1
        client[target].push({"special": True}, block=True)

        def has_special():
            return globals().get("special", False)

        @ipp.depend(has_special)
        def where():
            import os
            return os.getpid()

        where_results = [lb.apply_async(where) for _ in range(4)]
        engine_ids = {r.get(timeout=TIMEOUT) and r.engine_id
                      for r in where_results}
        checks.check("@depend: UnmetDependency moves tasks to the engine "
                     "that meets it", engine_ids == {target}, engine_ids)

        # retries: a task failing on engine 0 succeeds on engine 1
        def picky():
            if not globals().get("special", False):
                raise ValueError("not here")
            return "done"

        with lb.temp_flags(retries=1):
            retried = [lb.apply_async(picky) for _ in range(4)]
        checks.check("retries: a failed task ran again on the other engine",
                     [r.get(timeout=TIMEOUT) for r in retried]
                     == ["done"] * 4)
        other = client.ids[0] if target != client.ids[0] else client.ids[1]
        with lb.temp_flags(targets=[other]):
            checks.check("without retries the failure comes back",
                         ename_of(lambda: lb.apply_sync(picky))
                         == "ValueError")

        # impossible: after a failure that had to succeed
        failing = lb.apply_async(lambda: 1 / 0)
        ename_of(lambda: failing.get(timeout=TIMEOUT))
        with lb.temp_flags(after=failing):
            checks.check("after a failed task: ImpossibleDependency",
                         ename_of(lambda: lb.apply_sync(lambda: 1))
                         == "ImpossibleDependency")
        with lb.temp_flags(after=ipp.Dependency(failing, success=False,
                                                failure=True)):
            checks.check("after a failure, counting failures: runs",
                         lb.apply_sync(lambda: "ran") == "ran")

        # invalid: a mux msg_id is no task of the scheduler's
        direct = client[0].apply_async(lambda: 0)
        direct.get(timeout=TIMEOUT)
        with lb.temp_flags(after=direct):
            checks.check("after a direct request: InvalidDependency",
                         ename_of(lambda: lb.apply_sync(lambda: 1))
                         == "InvalidDependency")

        # timeout: a task for a busy engine gives up
        with lb.temp_flags(targets=[target]):
            busy = lb.apply_async(lambda: __import__("time").sleep(2))
            with lb.temp_flags(timeout=0.2):
                checks.check("timeout: TaskTimeout while the target is busy",
                             ename_of(lambda: lb.apply_sync(lambda: 1))
                             == "TaskTimeout")
        status = client.queue_status()
        checks.check("queue_status counts the running task",
                     status[target]["tasks"] == 1
                     and status["unassigned"] == 0, status)
        busy.get(timeout=TIMEOUT)
        client.close()


def banyan_engines(checks):
    from ipyparallel import Reference

    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller("--log-level", "info", "--ping",
                                        "200", "--heartbeat-misses", "3")
        # a bare name: the engine finds it in the plugin folder beside it
        plugin = "bn_plugin_example.so"
        cluster.start_banyan_engines(2, "--id", "0", "--plugin", plugin)
        killable = cluster.start_banyan_engines(1, "--id", "2", "--plugin",
                                                plugin)
        client = cluster.client()
        cluster.wait_for_engines(client, 3)
        lb = client.load_balanced_view()
        checks.check("banyan engines: LoadBalancedView.apply of echo",
                     lb.apply_sync(Reference("echo"), 5) == 5)
        many = [lb.apply_async(Reference("echo"), i) for i in range(300)]
        values = [r.get(timeout=TIMEOUT) for r in many]
        checks.check("300 tasks, every value back", values == list(range(300)))
        used = {r.engine_id for r in many}
        checks.check("the tasks were spread over the engines",
                     used == {0, 1, 2}, used)
        first = lb.apply_async(Reference("getpid"))
        pid = first.get(timeout=TIMEOUT)
        with lb.temp_flags(follow=first, after=first):
            follow = [lb.apply_async(Reference("getpid")) for _ in range(5)]
        checks.check("follow on banyan engines",
                     [r.get(timeout=TIMEOUT) for r in follow] == [pid] * 5)
        # a C function raising UnmetDependency: the task moves on to the
        # engine that has what it needs
        client[1].push({"special": 11}, block=True)
        needs = [lb.apply_async(Reference("needs"), "special")
                 for _ in range(4)]
        checks.check("UnmetDependency from a banyan engine moves the task",
                     [r.get(timeout=TIMEOUT) for r in needs] == [11] * 4
                     and {r.engine_id for r in needs} == {1},
                     [r.engine_id for r in needs])
        with lb.temp_flags(targets=[2], retries=0):
            doomed = lb.apply_async(Reference("sleep"), 30)
        time.sleep(0.5)
        cluster.kill(killable)
        checks.check("a task on a killed engine fails with EngineError",
                     ename_of(lambda: doomed.get(timeout=TIMEOUT))
                     == "EngineError")
        checks.check("the others still take tasks",
                     lb.apply_sync(Reference("echo"), 7) == 7)
        client.close()


def stock_controller(checks):
    from ipyparallel import Reference

    with bnharness.Cluster() as cluster:
        cluster.start_stock_controller()
        cluster.start_banyan_engines(3)
        client = cluster.client()
        cluster.wait_for_engines(client, 3)
        lb = client.load_balanced_view()
        many = [lb.apply_async(Reference("echo"), i) for i in range(100)]
        checks.check("stock task scheduler, banyan engines: 100 tasks",
                     [r.get(timeout=TIMEOUT) for r in many]
                     == list(range(100)))
        first = lb.apply_async(Reference("getpid"))
        first.get(timeout=TIMEOUT)
        with lb.temp_flags(after=first, follow=first):
            dependent = lb.apply_async(Reference("echo"), "after")
        checks.check("after/follow through the stock scheduler",
                     dependent.get(timeout=TIMEOUT) == "after"
                     and dependent.engine_id == first.engine_id)
        with lb.temp_flags(retries=1):
            checks.check("a banyan engine's error through retries",
                         ename_of(lambda: lb.apply_sync(Reference("nosuch")))
                         == "NotImplementedError")
        with lb.temp_flags(targets=[client.ids[1]]):
            checks.check("targets through the stock scheduler",
                         lb.apply_async(Reference("echo"), 1).get(
                             timeout=TIMEOUT) == 1)
        client.close()


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("test_task_scheduler")
    stock_engines(checks)
    banyan_engines(checks)
    stock_controller(checks)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
