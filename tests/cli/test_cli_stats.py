# SPDX-License-Identifier: BSD-3-Clause
"""CLI: banyan stats on real clusters: what px did shows in the counters of
the broadcast tree and of the mux, in the table and as JSON, with the tree's
nodes as threads and as banyan-scheduler processes."""

import json

from clitest import Profile, check, describe, finish, run

ENGINES = 2
RUNS = 3


def table(proc):
    """{(actor, counter): value} of a stats table."""
    rows = {}
    lines = proc.stdout.splitlines()
    for line in lines[1:]:
        actor, counter, value = line.split(None, 2)
        rows[(actor, counter)] = value
    return rows


def stats_json(args, *more):
    proc = run(["stats", "--json"] + args + list(more))
    try:
        return proc, json.loads(proc.stdout)
    except ValueError:
        return proc, None


def node(stats, index, counter):
    return stats["broadcast"]["nodes"][index][counter]


with Profile("stats") as profile:
    start = run(["cluster", "start", "-n", str(ENGINES)] + profile.args(),
                timeout=90)
    check(start.returncode == 0, "cluster start -n 2", describe(start))
    args = profile.args()

    proc, before = stats_json(args)
    check(proc.returncode == 0 and isinstance(before, dict)
          and {"hub", "heart", "mux", "control", "iopub", "task", "records",
               "broadcast"} <= set(before),
          "stats --json: an object per actor", describe(proc))

    ran = [run(["px"] + args + ["true"]) for _ in range(RUNS)]
    direct = [run(["px", "--direct"] + args + ["true"]) for _ in range(RUNS)]
    check(all(p.returncode == 0 for p in ran + direct),
          "px true and px --direct true ran 3 times each",
          "".join(describe(p) for p in ran + direct))

    shown = run(["stats"] + args)
    rows = table(shown)
    check(shown.returncode == 0
          and shown.stdout.split("\n", 1)[0].split() == ["ACTOR", "COUNTER",
                                                         "VALUE"],
          "stats prints a table of actor, counter, value", describe(shown))
    if before:
        # the default tree, kary:2 of depth 1, runs folded into its root:
        # the root got each px once and sent one copy to each engine
        check(len(before["broadcast"]["nodes"]) == 1
              and ("broadcast.1", "received") not in rows,
              "the default tree runs in its root alone", describe(shown))
        check(int(rows.get(("broadcast.0", "received"), -1))
              == node(before, 0, "received") + RUNS,
              "the tree's root received each px", describe(shown))
        copies = (int(rows.get(("broadcast.0", "to_engines"), -1))
                  - node(before, 0, "to_engines"))
        check(copies == RUNS * ENGINES,
              "the root sent each px to every engine", describe(shown))
        # px --direct: a request to and a reply from each engine, each run
        check(int(rows.get(("mux", "received"), -1))
              == before["mux"]["received"] + 2 * RUNS * ENGINES
              and int(rows.get(("mux", "forwarded"), -1))
              == before["mux"]["forwarded"] + 2 * RUNS * ENGINES,
              "the mux relayed each px --direct request and reply",
              describe(shown))
        check(rows.get(("hub", "engines")) == str(ENGINES)
              and rows.get(("broadcast.0", "bad_signature")) == "0",
              "the hub's engines, and nothing dropped", describe(shown))

    mux = run(["stats", "mux"] + args)
    check(mux.returncode == 0 and {a for a, _ in table(mux)} == {"mux"}
          and table(mux).get(("mux", "received")) == rows.get(("mux",
                                                                "received")),
          "stats mux: only the mux's counters", describe(mux))
    tree = run(["stats", "broadcast"] + args)
    check(tree.returncode == 0 and {a for a, _ in table(tree)}
          == {"broadcast", "broadcast.0"},
          "stats broadcast: the tree and its one node", describe(tree))
    proc, root = stats_json(args, "broadcast.0")
    check(proc.returncode == 0 and isinstance(root, dict)
          and str(root.get("received")) == rows.get(("broadcast.0",
                                                     "received")),
          "stats --json broadcast.0: the root's object", describe(proc))

    unknown = run(["stats", "nosuch"] + args)
    check(unknown.returncode == 1 and unknown.stdout == ""
          and "no actor 'nosuch'" in unknown.stderr
          and "broadcast.0" in unknown.stderr,
          "stats of an unknown actor fails and lists the actors",
          describe(unknown))
    usage = run(["stats", "hub", "mux"] + args)
    check(usage.returncode == 2, "two actors are a usage error",
          describe(usage))
    stop = run(["cluster", "stop"] + args)
    check(stop.returncode == 0, "cluster stop", describe(stop))

    gone = run(["stats"] + args + ["--timeout", "2"])
    check(gone.returncode == 12, "stats without a cluster exits 12",
          describe(gone))

with Profile("stats-procs") as profile:
    args = profile.args()
    start = run(["cluster", "start", "-n", str(ENGINES), "--tree-mode",
                 "processes"] + args, timeout=90)
    check(start.returncode == 0, "cluster start --tree-mode processes",
          describe(start))
    ran = [run(["px"] + args + ["true"]) for _ in range(RUNS)]
    shown = run(["stats", "broadcast"] + args)
    rows = table(shown)
    check(all(p.returncode == 0 for p in ran) and shown.returncode == 0
          and rows.get(("broadcast", "mode")) == "processes"
          and all(rows.get((f"broadcast.{n}", "state")) == "ready"
                  and int(rows.get((f"broadcast.{n}", "pid"), 0)) > 0
                  for n in range(3))
          and rows.get(("broadcast.0", "received")) == str(RUNS)
          and int(rows.get(("broadcast.1", "to_engines"), 0))
          + int(rows.get(("broadcast.2", "to_engines"), 0)) == RUNS * ENGINES,
          "processes mode: each node process's pid, state and counters",
          describe(shown))
    stop = run(["cluster", "stop"] + args)
    check(stop.returncode == 0, "cluster stop (processes)", describe(stop))

finish()
