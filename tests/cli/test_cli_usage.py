# SPDX-License-Identifier: BSD-3-Clause
"""CLI: --help, --version, usage errors and the exit statuses of commands
run where there is no cluster; the man pages made from --help."""

import os

from clitest import BUILD, Profile, check, describe, finish, run

COMMANDS = [["cluster", "start"], ["cluster", "stop"], ["cluster", "list"],
            ["cluster", "clean"], ["engines"], ["px"], ["apply"], ["push"],
            ["pull"], ["status"], ["config"], ["stats"]]

top = run(["--help"])
check(top.returncode == 0 and top.stdout.startswith("Usage: banyan")
      and "Examples:" in top.stdout and top.stderr == "",
      "banyan --help: usage and examples on stdout, status 0", describe(top))
version = run(["--version"])
check(version.returncode == 0 and version.stdout.startswith("banyan "),
      "banyan --version", describe(version))
top_version = version.stdout
bare = run([])
check(bare.returncode == 2 and bare.stdout == "" and "Usage:" in bare.stderr,
      "banyan without a command: usage on stderr, status 2", describe(bare))
unknown = run(["frobnicate"])
check(unknown.returncode == 2 and "unknown command 'frobnicate'" in unknown.stderr,
      "unknown command: status 2", describe(unknown))
cluster = run(["cluster", "restart"])
check(cluster.returncode == 2 and "unknown command 'restart'" in cluster.stderr,
      "unknown cluster command: status 2", describe(cluster))

for command in COMMANDS:
    name = " ".join(command)
    help = run(command + ["--help"])
    check(help.returncode == 0 and help.stdout.startswith(f"Usage: banyan {name}")
          and "\nExamples:\n  banyan " in help.stdout and help.stderr == "",
          f"banyan {name} --help: usage and examples on stdout, status 0",
          describe(help))
    version = run(command + ["--version"])
    check(version.returncode == 0 and version.stdout == top_version,
          f"banyan {name} --version", describe(version))
    bad = run(command + ["--no-such-option"])
    check(bad.returncode == 2 and bad.stdout == ""
          and f"Try 'banyan {name} --help'" in bad.stderr
          and "--no-such-option" in bad.stderr,
          f"banyan {name} --no-such-option: usage error on stderr, status 2",
          describe(bad))

for args, what in [(["cluster", "start"], "cluster start without -n"),
                   (["cluster", "start", "-n", "-3"], "cluster start -n -3"),
                   (["cluster", "start", "-n", "2", "--foreground", "--daemonize"],
                    "cluster start --foreground --daemonize"),
                   (["cluster", "stop", "extra"], "cluster stop with an operand"),
                   (["px"], "px without a command"),
                   (["px", "-t", "3-1", "hostname"], "px -t with a bad set"),
                   (["px", "--timeout", "x", "hostname"], "px --timeout x"),
                   (["apply"], "apply without a function"),
                   (["push", "name"], "push without a file"),
                   (["pull"], "pull without a name"),
                   (["config"], "config without show"),
                   (["engines", "--file", "a", "--profile-dir", "b"],
                    "--file with --profile-dir")]:
    proc = run(args)
    check(proc.returncode == 2 and "Try 'banyan" in proc.stderr,
          f"{what}: status 2", describe(proc))

with Profile("usage") as profile:
    for command in [["engines"], ["px", "hostname"], ["apply", "echo", "1"],
                    ["pull", "x"], ["status"], ["stats"]]:
        proc = run(command[:1] + profile.args() + command[1:])
        check(proc.returncode == 12 and "no cluster" in proc.stderr,
              f"banyan {command[0]} without a cluster: status 12", describe(proc))
    data = os.path.join(profile.dir, "data")
    open(data, "w").write("x")
    proc = run(["push", "d", data] + profile.args())
    check(proc.returncode == 12, "banyan push without a cluster: status 12",
          describe(proc))
    proc = run(["cluster", "stop"] + profile.args())
    check(proc.returncode == 11, "cluster stop without a cluster: status 11",
          describe(proc))
    # A connection file nobody answers on
    os.makedirs(os.path.join(profile.dir, "security"))
    with open(os.path.join(profile.dir, "security", "ipcontroller-client.json"), "w") as f:
        f.write('{"ssh": "", "interface": "tcp://127.0.0.1", "registration": 9,'
                ' "control": 9, "mux": 9, "task": 9, "task_scheme": "leastload",'
                ' "iopub": 9, "notification": 9, "broadcast": 9, "key": "k",'
                ' "curve_serverkey": null, "location": "x", "pack": "json",'
                ' "unpack": "json", "signature_scheme": "hmac-sha256"}')
    proc = run(["engines", "--timeout", "0.5"] + profile.args())
    check(proc.returncode == 12 and "no controller answers" in proc.stderr,
          "a connection file without a controller: status 12", describe(proc))
    show = run(["config", "show", "--timeout", "4"] + profile.args(),
               env={"BANYAN_CONTROLLER_DEPTH": "3"})
    check(show.returncode == 0 and "controller.depth" in show.stdout
          and "BANYAN_CONTROLLER_DEPTH" in show.stdout
          and "command line" in show.stdout,
          "config show: values and their sources", describe(show))

man = os.path.join(BUILD, "man", "man1")
if os.path.isdir(man):
    pages = sorted(os.listdir(man))
    check("banyan.1" in pages and "banyan-px.1" in pages
          and "banyan-cluster-start.1" in pages and "banyan-stats.1" in pages,
          "man pages were generated",
          pages)
    text = open(os.path.join(man, "banyan-px.1")).read()
    check(".SH NAME\nbanyan-px \\- run a shell command on engines" in text
          and ".SH \"EXAMPLES\"" in text, "banyan-px.1 has NAME and EXAMPLES")
finish()
