# SPDX-License-Identifier: BSD-3-Clause
"""What a cluster listens on, as the kernel sees it (/proc/net/tcp of each
of its processes): a default cluster only on 127.0.0.1; with --ports LO-HI
every listening port in the range; with --curve the keypair in the profile,
its public key in the connection files, its secret on no command line, and
px served. A range too small or malformed is refused, saying why."""

import json
import os
import socket
import struct

from clitest import (Profile, check, cmdline, describe, finish, run, tree,
                     wait_until)

# A range no other test binds from (check_cluster_curve has 62300-62399),
# above Linux's ephemeral ports (32768-60999), which outgoing connections take.
LOWEST, HIGHEST = 62400, 62499


def _address(hex_address):
    """'0100007F:1F90' (or the 32-digit tcp6 form) as (ip text, port)."""
    ip, port = hex_address.split(":")
    raw = bytes.fromhex(ip)
    if len(raw) == 4:
        text = socket.inet_ntop(socket.AF_INET, raw[::-1])
    else:
        words = struct.unpack("<4I", raw)
        text = socket.inet_ntop(socket.AF_INET6, struct.pack(">4I", *words))
    return text, int(port, 16)


def listening(pids):
    """{(ip, port): pid} of every TCP socket the processes listen on."""
    inodes = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes[target[8:-1]] = pid
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    found[_address(fields[1])] = inodes[fields[9]]
    return found


def cluster_pids(profile):
    record = profile.record()
    return tree(record["pgid"], [record["pgid"]]) if record else set()


def start(profile, *extra):
    return run(["cluster", "start", "-n", "2", "--depth", "1", "--tree-mode",
                "processes", "-q"] + list(extra) + profile.args(), timeout=90)


with Profile("listen") as profile:
    started = start(profile)
    check(started.returncode == 0, "a default cluster starts", describe(started))
    ports = listening(cluster_pids(profile))
    # the controller's 12 ports, the tree's root and its 2 leaves
    check(len(ports) >= 15, f"it listens on its ports ({len(ports)})", ports)
    check(all(ip == "127.0.0.1" for ip, port in ports),
          "a default cluster listens on 127.0.0.1 only",
          sorted(ports))

with Profile("listen") as profile:
    started = start(profile, "--curve", "--ports", f"{LOWEST}-{HIGHEST}")
    check(started.returncode == 0, "--curve --ports: the cluster starts",
          describe(started))
    pids = cluster_pids(profile)
    ports = listening(pids)
    check(len(ports) >= 15 and all(LOWEST <= port <= HIGHEST
                                   for ip, port in ports),
          f"every port it listens on is in {LOWEST}-{HIGHEST}", sorted(ports))
    check(all(ip == "127.0.0.1" for ip, port in ports),
          "...and on 127.0.0.1 only", sorted(ports))
    security = os.path.join(profile.dir, "security")
    with open(os.path.join(security, "ipcontroller-client.json")) as f:
        info = json.load(f)
    with open(os.path.join(security, "banyan-controller.cert_secret")) as f:
        lines = [line.split('"')[1] for line in f if "-key = " in line]
    public, secret = lines
    check(info["curve_serverkey"] == public,
          "the client file's curve_serverkey is the profile's public key",
          (info["curve_serverkey"], public))
    check(not any(secret in " ".join(cmdline(pid)) for pid in pids),
          "the secret key is on no process's command line")
    px = run(["px"] + profile.args() + ["-t", "0-1", "echo", "curved"],
             timeout=60)
    check(px.returncode == 0 and sorted(px.stdout.splitlines())
          == ["[stdout:0] curved", "[stdout:1] curved"],
          "banyan px through CURVE", describe(px))
    stop = run(["cluster", "stop", "-q"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))
    # the next start takes the same keypair
    started = start(profile, "--curve")
    with open(os.path.join(security, "ipcontroller-client.json")) as f:
        again = json.load(f)
    check(started.returncode == 0 and again["curve_serverkey"] == public,
          "a restarted cluster keeps its keypair", describe(started))

with Profile("listen") as profile:
    small = f"{LOWEST}-{LOWEST + 9}"
    started = start(profile, "--ports", small)
    log = os.path.join(profile.dir, "log", "banyan-controller.log")
    check(started.returncode == 2
          and f"--ports {small} holds 10 ports; the controller listens on "
          "15" in started.stderr and not os.path.exists(log)
          and not wait_until(lambda: cluster_pids(profile), 0.5),
          "a range too small: status 2, said before anything starts",
          describe(started))
    for bad in ("60000", "2-1", "x-y"):
        started = start(profile, "--ports", bad)
        check(started.returncode == 2 and "--ports: controller.ports: "
              f"'{bad}' is not a port range LO-HI" in started.stderr,
              f"--ports {bad}: usage error", describe(started))

finish()
