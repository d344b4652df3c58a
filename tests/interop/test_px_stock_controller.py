# SPDX-License-Identifier: BSD-3-Clause
"""banyan px against a stock IPython Parallel 7.1.0 controller with banyan
engines, at broadcast depth 0, 1 and 2: through the stock broadcast tree
(which ignores banyan's request keys and forwards each engine's reply,
output inside) px prints what px --direct prints.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

COUNT = 4
HEADER = "---------------\nengines[{}] ({})\n---------------\n"


def px(cluster, *args):
    return subprocess.run(
        [bnharness.binary("banyan"), "px", "--profile-dir",
         cluster.profile_dir, "--timeout", "30"] + list(args),
        capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL)


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("banyan px, stock controller")
    command = "echo out $BANYAN_ENGINE_ID; echo err >&2; " \
              "exit $((BANYAN_ENGINE_ID % 2))"
    for depth in (0, 1, 2):
        with bnharness.Cluster() as cluster:
            cluster.start_stock_controller(
                "--IPController.broadcast_scheduler_depth=%d" % depth)
            cluster.start_banyan_engines(COUNT)
            client = cluster.client()
            cluster.wait_for_engines(client, COUNT)
            tree = px(cluster, "-S", command)
            direct = px(cluster, "-S", "--direct", command)
            checks.check(
                "depth %d: px through the stock tree prints what --direct "
                "prints" % depth,
                tree.returncode == direct.returncode == 1
                and tree.stdout.splitlines() == direct.stdout.splitlines()
                == ["[stdout:%d] out %d" % (i, i) for i in range(COUNT)]
                and tree.stderr == direct.stderr,
                "%r\n%r" % (tree, direct))
            gathered = px(cluster, "-b", "echo $((BANYAN_ENGINE_ID % 2))")
            checks.check(
                "depth %d: px -b" % depth,
                gathered.returncode == 0 and gathered.stdout
                == HEADER.format("0,2", 2) + "0\n" + HEADER.format("1,3", 2)
                + "1\n", repr(gathered))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
