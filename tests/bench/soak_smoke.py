# SPDX-License-Identifier: BSD-3-Clause
"""soak_smoke.py BANYAN_BENCH: a few seconds of banyan-bench soak, so that
the soak does not rot: it must pass, having sent every kind of traffic in
both tree modes with nothing unanswered, an engine joined and stopped
mid-request, clients gone mid-request, and each cluster's processes
sampled. A few seconds cannot reach the steady state the growth limit is
for (the hub's records fill for longer), so growth is held to a loose
bound here; the 10-minute and 1-hour runs judge the 5 %."""

import os
import re
import subprocess
import sys
import tempfile

bench = sys.argv[1]
failures = []


def check(condition, what, detail=""):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))
        failures.append(what)


with tempfile.TemporaryDirectory(prefix="soak_smoke.") as tmp:
    run = subprocess.run(
        [bench, "soak", "--duration", "15s", "--warmup", "5s", "--engines", "2",
         "--max-growth", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=280, env=dict(os.environ, TMPDIR=tmp))
out = run.stdout
print(out)
check(run.returncode == 0, "banyan-bench soak exits 0", run.returncode)
check(re.search(r"^soak: PASS: \d+ sent, 0 unanswered", out, re.M),
      "the verdict is PASS with 0 unanswered")

KINDS = ["direct echo", "bcast coalescing", "bcast grouped", "bcast reduced",
         "bcast forwarded", "lb task", "lb after/follow", "push", "pull",
         "history query", "engine join", "engine stopped",
         "client gone (thr)", "client gone (proc)"]
for mode in ("threads", "processes"):
    table = re.search(r"^%s tree mode: (\d+) rounds\n(.*?)\n\n" % mode, out,
                      re.M | re.S)
    check(table and int(table.group(1)) > 0, f"{mode}: rounds of traffic")
    if not table:
        continue
    rows = {}
    for line in table.group(2).splitlines():
        match = re.match(r"  (.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)"
                         r"\s+(\d+)\s+(\d+)$", line)
        if match:
            rows[match.group(1)] = [int(n) for n in match.groups()[1:]]
    for kind in KINDS:
        row = rows.get(kind)
        check(row and row[0] > 0 and row[0] == row[1] + row[2],
              f"{mode}: {kind}: sent, each answered", row)
    total = rows.get("total")
    check(total and total[3] == 0 and total[4] == 0 and total[6] == 0,
          f"{mode}: none unanswered, wrong or failed", total)
    procs = re.search(r"^%s: RSS .*?\n(.*?)\n\n" % mode, out, re.M | re.S)
    names = re.findall(r"^  \d+\s+(banyan-\S+)", procs.group(1) if procs
                       else "", re.M)
    check("banyan-controller" in names and "banyan-engine" in names,
          f"{mode}: the controller and engine processes sampled", names)
    if mode == "processes":
        check(names.count("banyan-scheduler") == 3,
              "processes: the three tree node processes sampled", names)
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
