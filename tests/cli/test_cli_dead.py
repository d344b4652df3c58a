# SPDX-License-Identifier: BSD-3-Clause
"""CLI: dead things are noticed at once. An engine process killed during a
px is reported by the supervisor that started it, so px hears of it in
about a second, not after the heartbeat bound (30 s here); a controller
killed outright is named at once by px and status (its pid file names a
dead process) instead of after --timeout; a connection file that is not
JSON is reported at once, naming its path once."""

import os
import signal
import subprocess
import time

from clitest import (BANYAN, Profile, check, cmdline, describe, finish, run,
                     tree, wait_until)

# The heartbeat bound with the defaults: 3 s x 10 missed beats
HEARTBEAT_BOUND = 30

with Profile("dead") as profile:
    start = run(["cluster", "start", "-n", "4"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 4", describe(start))
    record = profile.record()

    # engine 2 sleeps 1 s, engine 3 is killed in its 33 s sleep
    victim = [proc[0] for proc in record["engine_procs"] if proc[2] == 3][0]
    px = subprocess.Popen([BANYAN, "px", "-t", "2-3", "--timeout", "120"]
                          + profile.args()
                          + ["sleep $((1 + ($BANYAN_ENGINE_ID - 2) * 32)); "
                             "echo slept"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    check(wait_until(lambda: any(
        "sleep 33" in " ".join(cmdline(pid)) for pid in tree(record["pgid"])),
        20), "the command runs on engine 3")
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    try:
        out, err = px.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        px.kill()
        out, err = px.communicate()
    took = time.monotonic() - killed
    check(px.returncode == 1 and "[stdout:2] slept\n" in out
          and "[status:3] EngineError: the engine died" in out + err
          and "[stdout:3]" not in out,
          "px on an engine killed mid-command: its error, the other's output",
          f"rc={px.returncode}\n{out}\n{err}")
    check(took < HEARTBEAT_BOUND / 3,
          f"px returns {took:.1f} s after the kill, well inside the "
          f"heartbeat bound ({HEARTBEAT_BOUND} s)")
    engines = run(["engines"] + profile.args())
    check([line.split()[0] for line in engines.stdout.splitlines()[1:]]
          == ["0", "1", "2"],
          "engines: the killed engines are unregistered", describe(engines))
    after = run(["px", "-t", "0"] + profile.args() + ["echo alive"])
    check(after.returncode == 0 and after.stdout == "[stdout:0] alive\n",
          "the others go on", describe(after))

    # The controller killed outright: px and status say so at once, not
    # after --timeout
    os.kill(record["controller_pid"], signal.SIGKILL)
    pidfile = os.path.join(profile.dir, "pid", "banyan-controller.pid")
    for command in (["px"], ["status"], ["engines"]):
        proc = run(command + ["--timeout", "60"] + profile.args()
                   + (["hostname"] if command == ["px"] else []))
        check(proc.returncode == 12
              and f"its controller (pid {record['controller_pid']} in "
              f"{pidfile}) has ended" in proc.stderr
              and proc.elapsed < 20,
              f"{command[0]} --timeout 60 with the controller killed: status "
              f"12 at once ({proc.elapsed:.1f} s), naming the dead pid",
              describe(proc))

    client_file = os.path.join(profile.dir, "security",
                               "ipcontroller-client.json")
    proc = run(["px", "--timeout", "60", "--file", client_file, "hostname"])
    check(proc.returncode == 12
          and f"its controller (pid {record['controller_pid']} in {pidfile}) "
          f"has ended (start a new one with 'banyan cluster start -n N "
          f"--profile-dir {profile.dir}')" in proc.stderr
          and proc.elapsed < 20,
          f"px --file with the controller killed: its profile's pid file "
          f"read, status 12 at once ({proc.elapsed:.1f} s)", describe(proc))

with Profile("corrupt") as profile:
    path = os.path.join(profile.dir, "security", "ipcontroller-client.json")
    os.makedirs(os.path.dirname(path))
    for what, content in (("not JSON", b"{garbage"),
                          ("binary", bytes(range(256)))):
        with open(path, "wb") as f:
            f.write(content)
        for command in (["px", "hostname"], ["status"]):
            proc = run([command[0], "--timeout", "60"] + profile.args()
                       + command[1:])
            check(proc.returncode == 1
                  and f"bad connection file {path}: " in proc.stderr
                  and proc.stderr.count(path) == 1 and proc.elapsed < 20,
                  f"{command[0]} with a connection file that is {what}: "
                  f"status 1 at once ({proc.elapsed:.1f} s), its path once",
                  describe(proc))
finish()
