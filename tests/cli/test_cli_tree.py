# SPDX-License-Identifier: BSD-3-Clause
"""CLI: cluster start --depth/--topology/--tree-mode, and px through the
broadcast tree printing what px --direct prints, at several shapes, with
the tree's nodes as threads and as banyan-scheduler processes."""

import os

from clitest import Profile, check, describe, finish, run

HEADER = "---------------\nengines[{}] ({})\n---------------\n"
COMMAND = "echo out $BANYAN_ENGINE_ID; echo err >&2; exit $((BANYAN_ENGINE_ID % 3))"

SHAPES = [
    ("0", "kary:2", "threads"),
    ("2", "kary:2", "processes"),
    ("1", "kary:3", "threads"),
    ("2", "2x2", "processes"),
]

for depth, topology, mode in SHAPES:
    shape = f"--depth {depth} --topology {topology} --tree-mode {mode}"
    with Profile("tree") as profile:
        start = run(["cluster", "start", "-n", "5", "--depth", depth,
                     "--topology", topology, "--tree-mode", mode]
                    + profile.args(), timeout=90)
        check(start.returncode == 0, f"cluster start -n 5 {shape}",
              describe(start))
        if start.returncode != 0:
            continue
        px = profile.args()
        if mode == "processes":
            record = profile.record()
            pgid = record["pgid"] if record else 0
            schedulers = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                    if (argv and argv[0].endswith(b"banyan-scheduler")
                            and os.getpgid(int(pid)) == pgid):
                        schedulers.append(pid)
                except (OSError, ProcessLookupError):
                    pass
            check(len(schedulers) > 0,
                  f"{shape}: the tree's nodes run as banyan-scheduler "
                  f"processes of the cluster ({len(schedulers)})")

        tree = run(["px", "-S"] + px + [COMMAND])
        direct = run(["px", "-S", "--direct"] + px + [COMMAND])
        check(tree.returncode == direct.returncode == 2
              and sorted(tree.stdout.splitlines())
              == sorted(direct.stdout.splitlines())
              == [f"[stdout:{i}] out {i}" for i in range(5)]
              and sorted(tree.stderr.splitlines())
              == sorted(direct.stderr.splitlines()),
              f"{shape}: px through the tree prints what px --direct prints",
              describe(tree) + "\n" + describe(direct))

        gathered = run(["px", "-b"] + px + ["echo $((BANYAN_ENGINE_ID % 2))"])
        check(gathered.returncode == 0 and gathered.stdout
              == HEADER.format("0,2,4", 3) + "0\n" + HEADER.format("1,3", 2)
              + "1\n", f"{shape}: px -b groups at the nodes", describe(gathered))

        targets = run(["px", "-t", "1,4"] + px + ["echo hi"])
        check(targets.returncode == 0 and sorted(targets.stdout.splitlines())
              == ["[stdout:1] hi", "[stdout:4] hi"],
              f"{shape}: px -t 1,4 through the tree", describe(targets))

        run(["cluster", "stop"] + profile.args(), timeout=60)

#  the depth limit (bn_limits.h): the deepest tree starts, one deeper is
#  refused before anything starts, naming the setting and its range
with Profile("tree") as profile:
    deepest = run(["cluster", "start", "-n", "1", "--depth", "6",
                   "--topology", "kary:1"] + profile.args(), timeout=90)
    check(deepest.returncode == 0, "cluster start --depth 6 (the deepest tree)",
          describe(deepest))
    if deepest.returncode == 0:
        ran = run(["px", "-S"] + profile.args() + ["echo deep"])
        check(ran.returncode == 0 and ran.stdout == "[stdout:0] deep\n",
              "px through a tree of depth 6", describe(ran))
        run(["cluster", "stop"] + profile.args(), timeout=60)
deeper = run(["cluster", "start", "-n", "1", "--depth", "7",
              "--profile-dir", "/nonexistent/banyan-cli-tree"])
check(deeper.returncode == 2
      and "controller.depth: 7 is out of range 0..6" in deeper.stderr,
      "cluster start --depth 7: usage error naming the setting and its range",
      describe(deeper))

bad = run(["cluster", "start", "-n", "1", "--tree-mode", "sideways",
           "--profile-dir", "/nonexistent/banyan-cli-tree"])
check(bad.returncode == 2 and "--tree-mode" in bad.stderr,
      "cluster start --tree-mode with an unknown mode: usage error",
      describe(bad))
finish()
