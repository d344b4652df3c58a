# SPDX-License-Identifier: BSD-3-Clause
"""CLI: what only happens on a terminal (progress lines "registered 8/8"
and "3/4", output streamed a batch at a time), and cluster start --foreground, which stays until Ctrl-C and
then stops the cluster."""

import re
import signal
import subprocess

from clitest import (BANYAN, Profile, check, finish, run, run_on_terminal,
                     tree, wait_until)


with Profile("terminal") as profile:
    status, output = run_on_terminal(["cluster", "start", "-n", "8", "-k", "2"]
                                     + profile.args(), timeout=90)
    check(status == 0 and re.search(r"\rregistered [0-8]/8", output),
          "cluster start on a terminal shows 'registered N/8'", repr(output))
    check(output.count("\r\033[K") >= 1 and "Cluster started" in output,
          "the progress line is erased before the summary", repr(output))

    status, output = run_on_terminal(["px"] + profile.args()
                                     + ["[ $BANYAN_ENGINE_ID = 5 ] && sleep 2; true"])
    check(status == 0 and "\r7/8" in output,
          "px on a terminal shows '7/8' while one engine is still running",
          repr(output))
    # on a terminal output streams a release of the tree at a time, each
    # in engine order
    status, output = run_on_terminal(
        ["px", "-t", "0-3"] + profile.args()
        + ["case $BANYAN_ENGINE_ID in 0|1) sleep 1;; 2) sleep 0.05;; esac; "
           "echo e$BANYAN_ENGINE_ID"])
    # engines 0 and 1 sleep the same second: they usually end in one batch,
    # but on a busy machine a moment apart, in two; the progress line that
    # parts batches shows only once px has run a second
    order = re.findall(r"\[stdout:(\d)\] e", output)
    segments = re.split(r"\r\d+/\d+\x1b\[K\r\x1b\[K", output)
    segment = {e: i for i, part in enumerate(segments)
               for e in re.findall(r"\[stdout:(\d)\] e", part)}
    def in_engine_order(a, b):
        return segment[a] != segment[b] or order.index(a) < order.index(b)
    check(status == 0 and sorted(order) == ["0", "1", "2", "3"]
          and set(order[:2]) == {"2", "3"}
          and in_engine_order("2", "3") and in_engine_order("0", "1"),
          "px on a terminal prints what finished first first, each batch in "
          "engine order", repr(output))
    status, output = run_on_terminal(["px"] + profile.args() + ["true"])
    check(status == 0 and "/8" not in output,
          "a px that ends within a second shows no progress", repr(output))
    run(["cluster", "stop"] + profile.args(), timeout=60)

    proc = subprocess.Popen([BANYAN, "cluster", "start", "-n", "2", "--foreground"]
                            + profile.args(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    started = wait_until(lambda: profile.record() is not None and run(
        ["engines"] + profile.args()).stdout.count("\n") == 3, 30)
    record = profile.record()
    check(started and proc.poll() is None,
          "cluster start --foreground stays once the engines are registered")
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    check(proc.returncode == 0 and "Cluster started" in out,
          "Ctrl-C ends it with status 0", f"rc={proc.returncode}\n{out}\n{err}")
    check(record and not tree(record["pgid"], [record["pgid"]])
          and profile.record() is None,
          "and stops the cluster, leaving nothing")
finish()
