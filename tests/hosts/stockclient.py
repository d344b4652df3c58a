# SPDX-License-Identifier: BSD-3-Clause
"""The stock IPython Parallel 7.1.0 client against a cluster on the test
hosts, as a user of a launched cluster runs it: stockclient.py CLIENT_FILE
HOSTS, where CLIENT_FILE is the cluster's ipcontroller-client.json and HOSTS
names each engine's host in the order of the engine ids ("h1,h1,h2,h2").
It connects with that file, waits until it sees every engine, and runs socket.gethostname on them
through a DirectView, a BroadcastView (coalescing and not) and a
load-balanced view. Prints an "ok: ..." line a check; on the first that
fails, "FAIL: ..." and exits 1. Run with /usr/bin/python3."""
import socket
import sys
import time

import ipyparallel as ipp

TIMEOUT = 30  # seconds any one result may take


def fail(what):
    print("FAIL: stock client: " + what, flush=True)
    sys.exit(1)


def ok(what):
    print("ok: stock client: " + what, flush=True)


def main():
    client_file, hosts = sys.argv[1], sys.argv[2].split(",")
    client = ipp.Client(client_file, timeout=TIMEOUT)
    deadline = time.monotonic() + 60
    while sorted(client.ids) != list(range(len(hosts))):
        if time.monotonic() > deadline:
            fail("sees engines %s, not 0-%d" % (client.ids, len(hosts) - 1))
        time.sleep(0.1)
    ok("sees engines 0-%d" % (len(hosts) - 1))

    got = client[:].apply_async(socket.gethostname).get(timeout=TIMEOUT)
    if got != hosts:
        fail("DirectView apply(gethostname): %s" % got)
    ok("DirectView apply(gethostname) names each engine's host: %s"
       % ",".join(got))
    view = client.broadcast_view(is_coalescing=False)
    got = view.apply_async(socket.gethostname).get(timeout=TIMEOUT)
    if got != hosts:
        fail("BroadcastView: %s" % got)
    ok("BroadcastView apply(gethostname) the same")
    # a coalescing reply lists the engines in the tree's order, as the
    # stock controller's does, not in the targets'
    view = client.broadcast_view(is_coalescing=True)
    got = view.apply_async(socket.gethostname).get(timeout=TIMEOUT)
    if sorted(got) != sorted(hosts):
        fail("BroadcastView (coalescing): %s" % got)
    ok("BroadcastView (coalescing) apply(gethostname): %s" % ",".join(got))
    view = client.load_balanced_view()
    tasks = [view.apply_async(socket.gethostname)
             for _ in range(2 * len(hosts))]
    got = [task.get(timeout=TIMEOUT) for task in tasks]
    ran = sorted(set(task.engine_id for task in tasks))
    if any(host != hosts[task.engine_id] for host, task in zip(got, tasks)):
        fail("load-balanced: %s on engines %s"
             % (got, [task.engine_id for task in tasks]))
    ok("%d load-balanced applies ran on engines %s, each on its host"
       % (len(tasks), ran))
    client.close()


if __name__ == "__main__":
    main()
