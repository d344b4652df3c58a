# SPDX-License-Identifier: BSD-3-Clause
"""CLI: history, result MSG_ID and purge on a real cluster: what one
command ran, another reads back from the hub."""

from clitest import Profile, check, describe, finish, run

with Profile("records") as profile:
    start = run(["cluster", "start", "-n", "2"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 2", describe(start))
    args = profile.args()

    empty = run(["history"] + args)
    check(empty.returncode == 0 and empty.stdout == "",
          "history of a fresh cluster is empty", describe(empty))

    applied = run(["apply", "-t", "1"] + args + ["echo", "42"])
    executed = run(["px", "--direct", "-t", "0"] + args
                   + ["echo out; echo err >&2; exit 3"])
    check(applied.returncode == 0 and "exit code 3" in executed.stderr,
          "apply and a failing px ran", describe(applied) + describe(executed))

    history = run(["history"] + args)
    ids = history.stdout.split()
    check(history.returncode == 0 and len(ids) == 2,
          "history lists both requests, oldest first", describe(history))

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
