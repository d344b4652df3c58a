# SPDX-License-Identifier: BSD-3-Clause
"""CLI: clients that come and go leave nothing behind in the controller.
Each `banyan engines` connects a client (to the notification and iopub
ports among others), asks the hub and the engines, and disconnects; on an
idle cluster nothing is published, and the controller's PUB sockets must
still free each subscriber's pipe as it goes (they held about 27 kB a
client until the next registration before)."""

import os

from clitest import Profile, check, describe, finish, run

WARM = 100   # clients before the measure (replay history, first pipes)
CLIENTS = 300
LIMIT_KB = 2048  # 300 clients held 8 MB before; now a few hundred kB


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


with Profile("churn") as profile:
    start = run(["cluster", "start", "-n", "1"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 1", describe(start))
    with open(os.path.join(profile.dir, "pid", "banyan-controller.pid")) as f:
        controller = int(f.read().split()[0])
    failed = 0
    for _ in range(WARM):
        failed += run(["engines"] + profile.args()).returncode != 0
    before = rss_kb(controller)
    for _ in range(CLIENTS):
        failed += run(["engines"] + profile.args()).returncode != 0
    after = rss_kb(controller)
    check(failed == 0, f"{WARM + CLIENTS} clients connected and listed the "
          "engines", failed)
    check(before > 0 and after - before < LIMIT_KB,
          f"the controller grew by less than {LIMIT_KB} kB over {CLIENTS} "
          "clients", f"{before} kB -> {after} kB")
finish()
