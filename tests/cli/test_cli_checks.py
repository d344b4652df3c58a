# SPDX-License-Identifier: BSD-3-Clause
"""CLI: cluster start checks what the controller would refuse before it
starts anything (--topology, --scheme, --db, a --ports range too small),
and prints the controller's own reason when it still refuses (a port of
--ports in use), not only its exit status; it takes --db, --nodb and
--restore, and task records kept in sqlite outlive a restart; a config
file that is binary garbage is refused and unknown BANYAN_* variables are
warned about; cluster stop --help states one default grace."""

import os
import re
import socket

from clitest import Profile, check, cmdline, describe, finish, run, tree


def nothing_started(profile):
    return not os.path.exists(os.path.join(profile.dir, "pid",
                                           "banyan-cluster.json")) \
        and not os.path.exists(os.path.join(profile.dir, "log",
                                            "banyan-controller.log"))


with Profile("checks") as profile:
    a_file = os.path.join(profile.dir, "a-file")
    open(a_file, "w").close()
    for option, status, message in (
            (["--topology", "bogus"], 2,
             "banyan cluster start: --topology: topology 'bogus' is not "
             "kary:K, binomial, auto or per-level fanouts such as 4x16\n"),
            (["--depth", "3", "--topology", "4x4"], 2,
             "banyan cluster start: --topology: "),
            (["--scheme", "bogus"], 2,
             "banyan cluster start: --scheme: controller.scheme: 'bogus' is "
             "not one of"),
            (["--db", "bogus"], 2,
             "banyan cluster start: --db takes memory, none or sqlite:PATH, "
             "not 'bogus'\n"),
            (["--db", f"sqlite:{a_file}/records.db"], 1,
             f"banyan cluster start: --db sqlite:{a_file}/records.db: cannot "
             f"keep task records in {a_file}/records.db: {a_file} is a file, "
             f"not a folder\n"),
            (["--db", f"sqlite:{profile.dir}"], 1,
             f"banyan cluster start: --db sqlite:{profile.dir}: cannot keep "
             f"task records in {profile.dir}: it is a folder\n")):
        start = run(["cluster", "start", "-n", "2"] + option + profile.args())
        check(start.returncode == status and start.stderr.startswith(message)
              and nothing_started(profile),
              f"cluster start {' '.join(option)}: status {status}, refused "
              f"before anything starts", describe(start))

    start = run(["cluster", "start", "-n", "2", "--ports", "61400-61403"]
                + profile.args())
    check(start.returncode == 2 and start.stderr.startswith(
        "banyan cluster start: --ports 61400-61403 holds 4 ports; the "
        "controller listens on 15 (12 of its own, the broadcast root and 2 "
        "leaves)\n") and nothing_started(profile),
        "cluster start --ports with too few: refused before anything starts",
        describe(start))

    # what only the controller finds out: its reason, not only its status
    held = socket.socket()
    held.bind(("127.0.0.1", 61405))
    held.listen()
    start = run(["cluster", "start", "-n", "2", "--ports", "61400-61414"]
                + profile.args(), timeout=60)
    held.close()
    check(start.returncode == 1 and re.search(
        r"banyan-controller \(pid \d+\) exited with status 1: .*cannot "
        r"bind tcp://127.0.0.1:\*\[61400-61414\]: Address already in use.*; "
        r"the cluster was stopped\n", start.stderr),
        "cluster start with a port of --ports in use: the controller's own "
        "reason", describe(start))

    db = os.path.join(profile.dir, "records.db")
    start = run(["cluster", "start", "-n", "2", "--db", f"sqlite:{db}"]
                + profile.args(), timeout=90)
    check(start.returncode == 0 and os.path.exists(db),
          "cluster start --db sqlite:PATH", describe(start))
    run(["px"] + profile.args() + ["echo kept"])
    before = run(["history"] + profile.args())
    run(["cluster", "stop", "-q"] + profile.args(), timeout=60)
    start = run(["cluster", "start", "-n", "2", "--db", f"sqlite:{db}",
                 "--restore"] + profile.args(), timeout=90)
    record = profile.record()
    controller = cmdline(record["controller_pid"]) if record else []
    check(start.returncode == 0 and "--restore" in controller
          and f"sqlite:{db}" in controller,
          "cluster start --db sqlite:PATH --restore: the controller gets both",
          describe(start) + f"\n{controller}")
    after = run(["history"] + profile.args())
    check(before.returncode == 0 and before.stdout.strip()
          and before.stdout.strip() in after.stdout,
          "the records of the first run are there after the restart",
          describe(before) + describe(after))
    run(["cluster", "stop", "-q"] + profile.args(), timeout=60)
    start = run(["cluster", "start", "-n", "1", "--nodb"] + profile.args(),
                timeout=90)
    record = profile.record()
    controller = cmdline(record["controller_pid"]) if record else []
    check(start.returncode == 0 and "none" in controller,
          "cluster start --nodb: the controller keeps no records",
          describe(start) + f"\n{controller}")
    history = run(["history"] + profile.args())
    check(history.returncode == 1
          and "keeps no task records" in history.stderr
          and "--nodb" in history.stderr,
          "history under --nodb says the hub keeps no records",
          describe(history))
    run(["cluster", "stop", "-q"] + profile.args(), timeout=60)

with Profile("garbage") as profile:
    # a config file that is binary garbage is refused, whatever its start
    garbage = os.path.join(profile.dir, "garbage.conf")
    with open(garbage, "wb") as f:
        f.write(b"controller\n    depth = 2\n" + bytes(range(256)))
    for command in (["config", "show"], ["cluster", "start", "-n", "1"]):
        proc = run(command + ["--config", garbage] + profile.args())
        check(proc.returncode == 2 and f"{garbage}: not a text file (a NUL "
              "byte on line 3)" in proc.stderr and nothing_started(profile),
              f"{' '.join(command)} --config with binary garbage: refused",
              describe(proc))
    # an unknown BANYAN_* variable is warned about, with the one meant
    proc = run(["config", "show"] + profile.args(),
               env={"BANYAN_CONTROLER_DEPTH": "3", "BANYAN_NOTHING": "1"})
    check(proc.returncode == 0 and
          "banyan config: warning: BANYAN_CONTROLER_DEPTH is not a banyan "
          "setting (did you mean BANYAN_CONTROLLER_DEPTH?); ignored\n"
          in proc.stderr and "warning: BANYAN_NOTHING is not a banyan "
          "setting; ignored" in proc.stderr
          and "controller.depth = 1" in proc.stdout,
          "unknown BANYAN_* variables are warned about", describe(proc))
    proc = run(["config", "show"] + profile.args(),
               env={"BANYAN_CONTROLLER_DEPTH": "3", "BANYAN_ENGINE_ID": "2"})
    check(proc.returncode == 0 and "warning" not in proc.stderr
          and "controller.depth = 3" in proc.stdout,
          "known ones are not", describe(proc))

help_text = run(["cluster", "stop", "--help"]).stdout
defaults = re.findall(r"default[: ]+\d+", help_text)
check(defaults == ["default: 10"],
      "cluster stop --help: one default for the grace", help_text)
start_help = run(["cluster", "start", "--help"]).stdout
check(all(option in start_help for option in ("--db WHERE", "--nodb",
                                              "--restore")),
      "cluster start --help names --db, --nodb and --restore")
finish()
