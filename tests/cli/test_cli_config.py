# SPDX-License-Identifier: BSD-3-Clause
"""CLI: settings that take durations ("3s", "200ms", "1.5s"; a bare number
in the setting's old unit), as a user sets them in the profile's
banyan.conf, the environment and flags: config show lists them with their
source, a bad one is refused naming the setting and the value, and one
(controller.tree_deadline) changes what px reports."""

import os

from clitest import Profile, check, describe, finish, run


def line_of(text, name):
    """The config show line of setting name, or ''."""
    for line in text.splitlines():
        if line.startswith(name + " = "):
            return line
    return ""


with Profile("config") as profile:
    conf = os.path.join(profile.dir, "banyan.conf")
    with open(conf, "w") as f:
        f.write("controller\n"
                "    heartbeat_period = 1.5s\n"
                "    registration_timeout = 45\n")
    show = run(["config", "show", "--timeout", "2500ms"] + profile.args(),
               env={"BANYAN_CONTROLLER_CONNECT_GRACE": "250ms"})
    check(show.returncode == 0, "config show", describe(show))
    out = show.stdout
    expected = {
        "controller.heartbeat_period": ("1.5s", f"# file {conf}"),
        "controller.registration_timeout": ("45s", f"# file {conf}"),
        "controller.connect_grace": ("250ms", "# env BANYAN_CONTROLLER_CONNECT_GRACE"),
        "client.timeout": ("2.5s", "# command line"),
        "controller.stranded_timeout": ("500ms", "# default"),
        "controller.node_restart_backoff": ("5s", "# default"),
        "controller.db_flush": ("200ms", "# default"),
        "controller.tree_deadline": ("0", "# default"),
    }
    for name, (value, source) in expected.items():
        line = line_of(out, name)
        check(line.startswith(f"{name} = {value} ") and line.endswith(source),
              f"config show: {name} = {value}, {source[2:]}", line or out)

    bad = run(["config", "show"] + profile.args(),
              env={"BANYAN_CONTROLLER_CONNECT_GRACE": "3x"})
    check(bad.returncode == 2
          and "BANYAN_CONTROLLER_CONNECT_GRACE" in bad.stderr
          and "controller.connect_grace: '3x' is not a duration" in bad.stderr,
          "a bad duration in the environment: status 2, naming it and its value",
          describe(bad))
    bad = run(["engines", "--timeout", "soon"] + profile.args())
    check(bad.returncode == 2 and "--timeout: 'soon' is not a duration" in bad.stderr,
          "a bad --timeout: status 2, naming the value", describe(bad))
    with open(conf, "w") as f:
        f.write("controller\n    tree_deadline = 2d\n")
    bad = run(["config", "show"] + profile.args())
    check(bad.returncode == 2 and "line 2" in bad.stderr
          and "controller.tree_deadline: '2d' is not a duration" in bad.stderr,
          "a bad duration in banyan.conf: status 2, naming line, setting and value",
          describe(bad))

    # End to end: the profile's tree deadline ends a broadcast that would
    # run for half a minute; each engine is reported as failed
    with open(conf, "w") as f:
        f.write("controller\n    tree_deadline = 1s\n")
    start = run(["cluster", "start", "-n", "2"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 2", describe(start))
    px = run(["px", "-b"] + profile.args() + ["sleep 30; echo late"], timeout=25)
    check(px.returncode == 1 and "engines[0-1] (2)" in px.stdout
          and "[status] EngineError" in px.stdout and "late" not in px.stdout,
          "px -b past controller.tree_deadline: both engines fail, px returns",
          describe(px))
    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))
finish()
