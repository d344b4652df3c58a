# SPDX-License-Identifier: BSD-3-Clause
"""banyan stats against a stock IPython Parallel 7.1.0 controller, whose
hub answers banyan's bn_stats_request with hub_error: the command fails
with "not supported by this controller", and the same command against
banyan-controller prints the counters.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402


def stats(cluster):
    return subprocess.run(
        [bnharness.binary("banyan"), "stats", "--profile-dir",
         cluster.profile_dir, "--timeout", "30"],
        capture_output=True, text=True, timeout=60)


def main():
    bnharness.deadline(200)
    checks = bnharness.Checks("banyan stats, stock controller")
    with bnharness.Cluster() as cluster:
        cluster.start_stock_controller()
        shown = stats(cluster)
        checks.check(
            "stock ipcontroller: stats fails, not supported",
            shown.returncode == 1 and shown.stdout == ""
            and "not supported by this controller" in shown.stderr,
            repr(shown))
        if checks.failed:
            cluster.dump_logs()
    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller()
        shown = stats(cluster)
        checks.check(
            "banyan-controller: stats prints the counters",
            shown.returncode == 0
            and shown.stdout.startswith("ACTOR")
            and "\nhub " in shown.stdout, repr(shown))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
