# SPDX-License-Identifier: BSD-3-Clause
"""banyan-scheduler --host through the real binaries on loopback (doc/hosts.md):
the command a launcher runs, banyan-engine --count behind it, what the banyan
CLI then sees of those engines, and what happens when an engine or the host
node is killed."""

import json
import os
import signal
import subprocess
import time

from clitest import BIN, Profile, check, describe, finish, live, run, wait_until

SCHEDULER = os.path.join(BIN, "banyan-scheduler")
CONTROLLER = os.path.join(BIN, "banyan-controller")
ENGINE = os.path.join(BIN, "banyan-engine")
# heartbeats would take 11 s to notice a death: long enough to tell "at once"
# from "at the heartbeat bound"
PING = ["--ping", "1s", "--heartbeat-misses", "10"]


def environ(info=None):
    env = dict(os.environ)
    env.pop("BANYAN_CONNECTION_INFO", None)
    env.pop("IPP_CONNECTION_INFO", None)
    if info is not None:
        env["BANYAN_CONNECTION_INFO"] = info
    return env


def host_node(args, info):
    """Start banyan-scheduler --host; (process, the path it printed or None)."""
    proc = subprocess.Popen([SCHEDULER, "--host"] + args, env=environ(info),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, line or None


def engines(profile):
    """Ids of the engines `banyan engines` lists."""
    proc = run(["engines"] + profile.args(), timeout=30)
    return [int(line.split()[0]) for line in proc.stdout.splitlines()[1:]
            if line.split() and line.split()[0].isdigit()]


def hub_stat(profile, name):
    proc = run(["stats", "--json"] + profile.args(), timeout=30)
    try:
        return json.loads(proc.stdout)["hub"][name]
    except (ValueError, KeyError):
        return None


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()


# the command's contract: usage errors and missing connection info
for args, what in [(["--node", "0"], "--host with --node"),
                   (["--bind", "down=tcp://127.0.0.1:0"], "--host with --bind")]:
    proc = subprocess.run([SCHEDULER, "--host"] + args, capture_output=True,
                          text=True, timeout=30, env=environ())
    check(proc.returncode == 2 and "--host takes no" in proc.stderr,
          f"banyan-scheduler {what}: usage error, status 2", describe(proc))
proc = subprocess.run([SCHEDULER, "--file", "x.json", "--node", "0"],
                      capture_output=True, text=True, timeout=30, env=environ())
check(proc.returncode == 2 and "go with --host" in proc.stderr,
      "banyan-scheduler --file without --host: usage error", describe(proc))
proc = subprocess.run([SCHEDULER, "--ports", "61600-61699", "--node", "0"],
                      capture_output=True, text=True, timeout=30, env=environ())
check(proc.returncode == 2 and "--ports go with --host" in proc.stderr,
      "banyan-scheduler --ports without --host: usage error", describe(proc))
for bad in ["61699-61600", "61600", "0-10", "61600-70000", "a-b"]:
    proc = subprocess.run([SCHEDULER, "--host", "--ports", bad],
                          capture_output=True, text=True, timeout=30,
                          env=environ())
    check(proc.returncode == 2 and f"controller.ports: '{bad}' is not a port "
          "range LO-HI" in proc.stderr,
          f"banyan-scheduler --host --ports {bad}: usage error, status 2",
          describe(proc))
proc = subprocess.run([SCHEDULER, "--host"], capture_output=True, text=True,
                      timeout=30, env=environ())
check(proc.returncode == 1 and "BANYAN_CONNECTION_INFO" in proc.stderr,
      "banyan-scheduler --host without connection info: status 1",
      describe(proc))
help = subprocess.run([SCHEDULER, "--help"], capture_output=True, text=True,
                      timeout=30)
check(help.returncode == 0 and "--host-name NAME" in help.stdout
      and "--ports LO-HI" in help.stdout,
      "banyan-scheduler --help tells of --host and --ports")

with Profile("hostnode") as profile, Profile("hostnode-h1") as host_dir:
    ctl = subprocess.Popen([CONTROLLER] + profile.args() + PING,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    engine_file = os.path.join(profile.dir, "security", "ipcontroller-engine.json")
    check(wait_until(lambda: os.path.exists(engine_file), 20),
          "the controller wrote its engine file")
    with open(engine_file) as f:
        info = f.read()
    procs = [ctl]
    try:
        # the launcher's command: connection info in the environment
        host, path = host_node(["--profile-dir", host_dir.dir, "--host-name",
                                "h1"], info)
        procs.append(host)
        local = os.path.join(host_dir.dir, "security", "ipcontroller-engine.json")
        check(path == local and os.path.exists(local),
              "the host node printed its connection file once ready", path)
        with open(local) as f:
            local_info = json.load(f)
        check(local_info["key"] == json.loads(info)["key"]
              and local_info["registration"] != json.loads(info)["registration"]
              and len(local_info["broadcast"]) == 1,
              "its file: the controller's key, ports of its own, one leaf port",
              local_info)

        eng = subprocess.Popen([ENGINE, "--count", "8", "--profile-dir",
                                host_dir.dir], env=environ(),
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        procs.append(eng)
        check(wait_until(lambda: len(engines(profile)) == 8, 30, step=0.3),
              "8 engines behind the host node are registered",
              engines(profile))
        check(hub_stat(profile, "hosts") == 1
              and hub_stat(profile, "host_engines") == 8,
              "the hub counts one host node serving 8 engines")
        px = run(["px", "--direct"] + profile.args() + ["echo", "via-h1"],
                 timeout=60)
        lines = [line for line in px.stdout.splitlines() if "via-h1" in line]
        check(px.returncode == 0 and len(lines) == 8,
              "banyan px --direct runs on all 8, their output comes back",
              describe(px))

        # an engine process killed: lost at once, not at the heartbeat bound
        start = time.monotonic()
        eng.send_signal(signal.SIGKILL)
        eng.wait()
        gone = wait_until(lambda: engines(profile) == [], 20, step=0.2)
        took = time.monotonic() - start
        check(gone and took < 6,
              f"killed engines are unregistered at once ({took:.1f} s; the "
              "heartbeat bound is 11 s)", engines(profile))

        # the host node killed: its link's connection closes, and its
        # engines are lost at once, not at the heartbeat bound
        eng2 = subprocess.Popen([ENGINE, "--count", "2", "--profile-dir",
                                 host_dir.dir], env=environ(),
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        procs.append(eng2)
        check(wait_until(lambda: len(engines(profile)) == 2, 30, step=0.3),
              "2 more engines registered")
        start = time.monotonic()
        host.send_signal(signal.SIGKILL)
        host.wait()
        gone = wait_until(lambda: engines(profile) == [], 30, step=0.2)
        took = time.monotonic() - start
        check(gone and took < 6,
              f"the host node killed: its engines are unregistered at once "
              f"({took:.1f} s; the heartbeat bound is 11 s)", engines(profile))
        check(hub_stat(profile, "hosts_lost") == 1 and hub_stat(profile, "hosts") == 0,
              "the hub counts the host node lost")
        stop(eng2)

        # a host node stopped by SIGTERM removes its file and exits 0; this
        # one given a range (above the ephemeral ports) takes its ports
        # from it
        host, path = host_node(["--profile-dir", host_dir.dir, "--ports",
                                "61600-61699"], info)
        procs.append(host)
        check(path == local, "a new host node starts on the host")
        with open(local) as f:
            local_info = json.load(f)
        ports = [local_info[name] for name in
                 ("registration", "mux", "control", "task", "iopub",
                  "hb_ping", "hb_pong")] + local_info["broadcast"]
        check(len(ports) == 8 and all(61600 <= p <= 61699 for p in ports),
              "--ports 61600-61699: every port of its file is in the range",
              ports)
        host.send_signal(signal.SIGTERM)
        check(host.wait(timeout=20) == 0 and not os.path.exists(local),
              "SIGTERM: the host node exits 0 and removes its file")
    finally:
        for proc in procs:
            stop(proc)

finish()
