# SPDX-License-Identifier: BSD-3-Clause
"""CLI: banyan as `cmake --install` gives it. The build is installed into a
fresh prefix; then, with only PREFIX/bin (and /usr/bin:/bin) on PATH, a
fresh HOME and the current folder outside the source tree, a user starts
a cluster in the default profile, runs a command and a plugin's function
on its engines, and stops it. Every process of the cluster must be one of
the installed programs, and the plugin the one installed beside them."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile

from clitest import BUILD, check, describe, finish, tree

PROGRAMS = ["banyan", "banyan-controller", "banyan-engine",
            "banyan-scheduler", "banyan-bench"]
PLUGINS = ["bn_plugin_example.so", "bn_reduce_example.so"]

work = tempfile.mkdtemp(prefix="banyan-install.")
prefix = os.path.join(work, "prefix")
home = os.path.join(work, "home")
os.mkdir(home)
env = {"PATH": os.path.join(prefix, "bin") + ":/usr/bin:/bin",
       "HOME": home, "LANG": "C.UTF-8"}
# a sanitized build's programs still need their runtime's settings
env.update({k: v for k, v in os.environ.items()
            if k.split("_")[0] in ("ASAN", "LSAN", "UBSAN")})
profile = os.path.join(home, ".banyan", "profile_default")


def banyan(*args, timeout=90, extra=None):
    """Run the installed banyan (found through PATH) as the user would."""
    full = dict(env)
    full.update(extra or {})
    return subprocess.run(["banyan"] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=full, cwd=home,
                          stdin=subprocess.DEVNULL)


def record():
    try:
        with open(os.path.join(profile, "pid", "banyan-cluster.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def files_under(top):
    return {os.path.relpath(os.path.join(root, name), top)
            for root, _, names in os.walk(top) for name in names}


groups = set()
try:
    install = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                             capture_output=True, text=True, timeout=120)
    check(install.returncode == 0, "cmake --install into a fresh prefix",
          describe(install))
    installed = files_under(prefix)
    for program in PROGRAMS:
        check(f"bin/{program}" in installed
              and os.access(os.path.join(prefix, "bin", program), os.X_OK),
              f"bin/{program} is installed")
        check(any(f.endswith(f"man/man1/{program}.1") for f in installed),
              f"{program} has a man page")
    for plugin in PLUGINS:
        check(any(f.endswith(f"banyan/{plugin}") and "/lib" in "/" + f
                  for f in installed), f"plugin {plugin} is installed")
    check("share/banyan/banyan.conf" in installed,
          "the annotated defaults are installed")
    # every command banyan --help lists has its page
    usage = banyan("--help")
    commands = []
    in_commands = False
    for line in usage.stdout.splitlines():
        if line == "Commands:":
            in_commands = True
        elif in_commands and line.startswith("  "):
            commands.append("-".join(line.split("  ")[1].split()))
        elif in_commands:
            break
    # (config show is documented on banyan-config's page)
    missing = [c for c in commands
               if not any(f.endswith(f"man/man1/banyan-{c}.1")
                          or f.endswith(f"man/man1/banyan-{c[:-5]}.1")
                          and c.endswith("-show") for f in installed)]
    check(len(commands) > 10 and not missing,
          "every command of banyan --help has a man page",
          f"commands {commands}, missing {missing}")

    show = banyan("config", "show")
    check(show.returncode == 0 and "# every setting, annotated: "
          + os.path.join(prefix, "share", "banyan", "banyan.conf")
          in show.stdout,
          "config show names the installed annotated defaults",
          describe(show))

    # the plugin by its bare name: the engines find it beside themselves
    start = banyan("cluster", "start", "-n", "2",
                   extra={"BANYAN_ENGINE_PLUGINS": "bn_plugin_example.so"})
    check(start.returncode == 0, "cluster start -n 2 in the default profile",
          describe(start))
    rec = record()
    check(rec is not None, "the cluster is recorded under "
          "~/.banyan/profile_default/pid")
    if rec:
        groups.add(rec["pgid"])
        pids = tree(rec["pgid"], [rec["pgid"]])
        exes = {}
        for pid in pids:
            try:
                exes[pid] = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                pass
        names = sorted(os.path.basename(exe) for exe in exes.values())
        check(names.count("banyan-controller") == 1
              and names.count("banyan-engine") == 2,
              "a controller and two engine processes run", names)
        check(all(exe.startswith(prefix + "/") for exe in exes.values()),
              "every process of the cluster is an installed program",
              "\n".join(sorted(exes.values())))
        maps = ""
        for proc in rec.get("engine_procs", []):
            try:
                with open(f"/proc/{proc[0]}/maps") as f:
                    maps += f.read()
            except OSError:
                pass
        check(os.path.join("banyan", "bn_plugin_example.so") in maps
              and all(line.split()[-1].startswith(prefix + "/")
                      for line in maps.splitlines()
                      if line.endswith("bn_plugin_example.so")),
              "the engines loaded the installed plugin")

    px = banyan("px", "hostname", timeout=60)
    host = socket.gethostname()
    check(px.returncode == 0
          and sorted(px.stdout.splitlines())
          == [f"[stdout:{i}] {host}" for i in range(2)],
          "px hostname: each engine prints the host name", describe(px))

    greet = banyan("apply", "greet", "installed", timeout=60)
    check(greet.returncode == 0
          and len([line for line in greet.stdout.splitlines()
                   if "installed" in line]) == 2,
          "apply greet: the installed plugin answers on each engine",
          describe(greet))

    stop = banyan("cluster", "stop", timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))
    check(rec is not None and not tree(rec["pgid"], [rec["pgid"]]),
          "nothing of the cluster is left running")

    bench = subprocess.run(["banyan-bench", "list", "-b", "^floor"],
                           capture_output=True, text=True, timeout=60,
                           env=env, cwd=home)
    check(bench.returncode == 0 and "floor.ZmqFloor" in bench.stdout,
          "banyan-bench runs from the prefix, away from the source tree",
          describe(bench))
finally:
    if record():
        banyan("cluster", "stop", "--timeout", "3", timeout=30)
    for pgid in groups:
        for pid in tree(pgid, [pgid]):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    shutil.rmtree(work, ignore_errors=True)
finish()
