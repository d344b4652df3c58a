# SPDX-License-Identifier: BSD-3-Clause
"""CLI: history, result MSG_ID and purge on a real cluster: what one
command ran, another reads back from the hub, every engine of a broadcast
included."""

import json
import subprocess

from clitest import BANYAN, Profile, check, describe, finish, run

with Profile("records") as profile:
    start = run(["cluster", "start", "-n", "4"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 4", describe(start))
    args = profile.args()

    empty = run(["history"] + args)
    check(empty.returncode == 0 and empty.stdout == "",
          "history of a fresh cluster is empty", describe(empty))

    applied = run(["apply", "-t", "1"] + args + ["echo", "42"])
    executed = run(["px", "--direct", "-t", "0"] + args
                   + ["echo out; echo err >&2; exit 3"])
    check(applied.returncode == 0 and "exit code 3" in executed.stderr,
          "apply and a failing px ran", describe(applied) + describe(executed))

    history = run(["history", "--ids"] + args)
    ids = history.stdout.split()
    check(history.returncode == 0 and len(ids) == 2,
          "history --ids lists both requests, oldest first", describe(history))

    if len(ids) == 2:
        first = run(["result"] + args + [ids[0]])
        check(first.returncode == 0
              and "engine:    1\n" in first.stdout
              and "status:    ok\n" in first.stdout
              and "value:     42\n" in first.stdout,
              "result of the apply: engine, status and value", describe(first))
        second = run(["result"] + args + [ids[1]])
        check(second.returncode == 1
              and "engine:    0\n" in second.stdout
              and "[stdout]\nout\n" in second.stdout
              and "[stderr]\nerr\n" in second.stdout
              and "CalledProcessError" in second.stdout,
              "result of the failed command: its output and error, exit 1",
              describe(second))

        purge = run(["purge"] + args + [ids[0]])
        gone = run(["result"] + args + [ids[0]])
        check(purge.returncode == 0 and gone.returncode == 1
              and "no such" in gone.stderr,
              "purge MSG_ID drops that record", describe(purge) + describe(gone))

    # A broadcast px: the tree merges the engines' replies (released
    # every window, so in more than one message when engines differ)
    px = run(["px"] + args
             + ["echo out $BANYAN_ENGINE_ID; test $BANYAN_ENGINE_ID != 2"])
    gathered = run(["px", "-b"] + args + ["echo same"])
    forwarded = run(["apply", "--broadcast", "-t", "1,3"] + args
                    + ["echo", "7"])
    check(px.returncode == 0 and gathered.returncode == 0
          and forwarded.returncode == 0,
          "a broadcast px failing on engine 2, px -b and apply --broadcast "
          "ran", describe(px) + describe(gathered) + describe(forwarded))

    table = run(["history"] + args)
    lines = table.stdout.splitlines()
    header = lines[0].split() if lines else []
    rows = [line.split(None, 7) for line in lines[1:]]
    check(table.returncode == 0
          and header == ["MSG_ID", "SUBMITTED", "COMPLETED", "ENGINES",
                         "STATUS", "RAN"]
          and len(rows) == 4
          and [row[5] for row in rows] == ["0", "0-3", "0-3", "1,3"]
          and [row[6] for row in rows] == ["error", "error", "ok", "ok"]
          and rows[0][7] == "execute: echo out; echo err >&2; exit 3"
          and rows[1][7] == "broadcast execute: echo out $BANYAN_ENGINE_ID; "
                            "test $BANYAN_ENGINE_ID != 2"
          and rows[3][7] == "broadcast apply: echo",
          "history: a table of msg_id, submitted, completed, engines, "
          "status and what ran; one row per broadcast", describe(table))

    as_json = run(["history", "--json"] + args)
    try:
        listed = json.loads(as_json.stdout)
    except ValueError:
        listed = []
    check(as_json.returncode == 0 and len(listed) == 4
          and [row["msg_id"] for row in listed] == [row[0] for row in rows]
          and listed[1]["engines"] == "0-3"
          and listed[1]["status"] == "error"
          and listed[1]["code"].startswith("echo out $BANYAN_ENGINE_ID;")
          and listed[1]["completed"] >= listed[1]["submitted"],
          "history --json: the same rows as JSON", describe(as_json))

    if len(rows) == 4:
        whole = run(["result"] + args + [rows[1][0]])
        blocks = whole.stdout.split("\n\n")
        check(whole.returncode == 1 and len(blocks) == 4
              and all(blocks[e].startswith(f"engine:    {e}\n")
                      and f"[stdout]\nout {e}\n" in blocks[e] + "\n"
                      and "started:   20" in blocks[e]
                      and "completed: 20" in blocks[e]
                      for e in range(4))
              and "status:    ok\n" in blocks[0]
              and "CalledProcessError" in blocks[2]
              and "CalledProcessError" not in blocks[3],
              "result of a broadcast px: every engine's output, times and "
              "status, in engine order; exit 1 as one failed",
              describe(whole))
        same = run(["result"] + args + [rows[2][0]])
        check(same.returncode == 0
              and same.stdout.count("[stdout]\nsame\n") == 4
              and same.stdout.count("status:    ok\n") == 4,
              "result of px -b (engines grouped in the tree): all 4 engines",
              describe(same))
        values = run(["result"] + args + [rows[3][0]])
        check(values.returncode == 0
              and values.stdout.startswith("engine:    1\n")
              and "\n\nengine:    3\n" in values.stdout
              and values.stdout.count("value:     7\n") == 2,
              "result of apply --broadcast (replies forwarded): both engines",
              describe(values))

    # Output that is not text: result gives the bytes back, whether the
    # output came in the reply (the tree) or as stream messages (--direct)
    for mode in ([], ["--direct"]):
        before = set(run(["history", "--ids"] + args).stdout.split())
        subprocess.run([BANYAN, "px", "-t", "1"] + mode + args
                       + ["printf 'a\\377b\\000c\\n'; "
                          "printf '\\351\\n' >&2"],
                       capture_output=True, timeout=60,
                       stdin=subprocess.DEVNULL)
        new_ids = [i for i in run(["history", "--ids"] + args).stdout.split()
                   if i not in before]
        exact = subprocess.run([BANYAN, "result"] + args + new_ids[-1:],
                               capture_output=True, timeout=60,
                               stdin=subprocess.DEVNULL)
        check(len(new_ids) == 1 and exact.returncode == 0
              and b"[stdout]\na\xffb\x00c\n[stderr]\n\xe9\n"
              in exact.stdout,
              "result of px %s: the bytes the command wrote"
              % (" ".join(mode) or "(tree)"), repr(exact))

    unknown = run(["result"] + args + ["no-such-msg-id"])
    check(unknown.returncode == 1 and "no-such-msg-id" in unknown.stderr,
          "result of an unknown msg_id fails and names it", describe(unknown))

    usage = run(["result"] + args)
    check(usage.returncode == 2, "result without MSG_ID is a usage error",
          describe(usage))

    everything = run(["purge"] + args)
    after = run(["history"] + args)
    check(everything.returncode == 0 and after.stdout == "",
          "purge with no MSG_ID drops every finished record",
          describe(everything) + describe(after))

    stop = run(["cluster", "stop"] + args)
    check(stop.returncode == 0, "cluster stop", describe(stop))

finish()
