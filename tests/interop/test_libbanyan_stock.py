# SPDX-License-Identifier: BSD-3-Clause
"""libbanyan against a stock ipcontroller with two stock ipengines.

Starts the stock cluster, then runs the "stock" suite of the Check
program check_bn_client (execute of Python source, apply of builtins.sum
and friends, push/pull, load-balanced and broadcast views, queue status,
clear, abort, shutdown of engines and hub) with the client connection file
in BN_STOCK_CLIENT_FILE; finally checks the cluster really shut down.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("test_libbanyan_stock")
    program = os.path.join(bnharness.BUILD_DIR, "tests", "check_bn_client")
    if not os.access(program, os.X_OK):
        print("FAIL check_bn_client is not built (%s)" % program)
        return 1
    with bnharness.Cluster() as cluster:
        controller = cluster.start_stock_controller()
        engines = [cluster.start_stock_engine() for _ in range(2)]
        env = dict(os.environ)
        env.update({"BN_STOCK_CLIENT_FILE": cluster.client_file,
                    "CK_RUN_SUITE": "stock"})
        run = subprocess.run([program], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=240)
        output = run.stdout.decode(errors="replace")
        sys.stdout.write(output)
        checks.check("the stock suite of check_bn_client passes",
                     run.returncode == 0, "exit %d" % run.returncode)
        checks.check("it ran the stock tests", "Checks: 5," in output)
        # bn_client_shutdown (hub) stopped the controller and the engines
        try:
            bnharness.wait_until(
                lambda: all(p.poll() is not None
                            for p in [controller] + engines),
                20, "the stock controller and engines to exit")
            stopped = True
        except TimeoutError:
            stopped = False
        checks.check("the stock cluster shut down", stopped)
        if checks.failed:
            cluster.dump_logs()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
