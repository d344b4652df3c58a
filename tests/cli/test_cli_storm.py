# SPDX-License-Identifier: BSD-3-Clause
"""CLI: peers that misbehave at the socket level, against the real
controller:

- 5,000 connections opened and dropped on every port of both connection
  files, and more that stop in the middle of the greeting, of a multipart
  message or of a frame: the controller keeps no descriptor of them, loses
  no engine, and px is served;
- a client that sends 100,000 requests and never reads: the replies queued
  for it stop at controller.client_hwm (the rest are dropped and counted,
  said once in the log), and another client is served meanwhile."""

import json
import os
import socket
import struct
import time

from clitest import Profile, check, describe, finish, run, wait_until
from zmtp import Peer, Signer, frame, greeting, message

ENV = {"BANYAN_CONTROLLER_HEARTBEAT_PERIOD": "200",
       "BANYAN_CONTROLLER_HEARTBEAT_MISSES": "10",
       "BANYAN_CONTROLLER_CLIENT_HWM": "1000"}
BOUND = 20  # s: generous, for a loaded machine
CONNECTIONS = 5000
FLOOD = 100000
RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close with a reset


def ports(profile):
    """Every port of both connection files."""
    found = set()
    for name in ("ipcontroller-client.json", "ipcontroller-engine.json"):
        with open(os.path.join(profile.dir, "security", name)) as f:
            info = json.load(f)
        for key, value in info.items():
            if key != "key" and isinstance(value, int):
                found.add(value)
            elif isinstance(value, list):
                found.update(v for v in value if isinstance(v, int))
    return sorted(found)


def connect(port):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    return sock


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def stat(profile, actor, counter):
    out = run(["stats"] + profile.args()).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == actor and fields[1] == counter:
            return int(fields[2])
    return -1


def px_ok(profile, *args):
    """px echo hi on args' engines (-t 1: one, else both) answers."""
    done = run(["px"] + profile.args() + list(args) + ["echo hi"], timeout=60)
    return done.returncode == 0 and done.stdout.count("hi") == (1 if "-t" in args else 2)


def storm(every, signer):
    """Connections opened and dropped on every port, and others cut in the
    middle of a message; returns the seconds it took."""
    began = time.monotonic()
    for port in every:
        for _ in range(CONNECTIONS):
            connect(port).close()
        # stopped in the middle of the greeting
        for cut in (1, 10, 63):
            for _ in range(50):
                sock = connect(port)
                sock.sendall(greeting()[:cut])
                sock.close()
        # stopped in the middle of a multipart message, or of a frame
        request = signer.frames("kernel_info_request", {}, idents=[b"nosuch"])
        halves = [message(request)[:-1],
                  b"".join(frame(part, more=True) for part in request[:3]),
                  frame(b"x" * 1000)[:20],
                  bytes([0x02]) + (1 << 40).to_bytes(8, "big") + b"x" * 100]
        for half in halves:
            for _ in range(25):
                try:
                    peer = Peer(port)
                    peer.send(half)
                    peer.close()
                except OSError:
                    pass  # a PUB or SUB port refuses a DEALER: also a fault
    return time.monotonic() - began


def node_pids(controller):
    """The pids of the controller's banyan-scheduler processes."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if int(fields[1]) == controller and b"--node" in args:
                pids.append(int(name))
    return sorted(pids)


with Profile("storm") as profile:
    start = run(["cluster", "start", "-n", "2", "-k", "1"] + profile.args(),
                timeout=90, env=ENV)
    check(start.returncode == 0, "cluster start -n 2 -k 1", describe(start))
    controller = profile.record()["controller_pid"]
    every = ports(profile)
    check(len(every) >= 12, f"{len(every)} ports in the connection files", every)
    before = fds(controller)
    signer = Signer(os.path.join(profile.dir, "security", "ipcontroller-client.json"))

    took = storm(every, signer)
    check(wait_until(lambda: fds(controller) <= before + 2, BOUND),
          f"{CONNECTIONS} connections and 500 cut ones on each of {len(every)} "
          f"ports in {took:.1f} s: the controller keeps none of them ({before} "
          f"descriptors before, {fds(controller)} after)")
    began = time.monotonic()
    served = px_ok(profile)
    check(served, f"px is served on both engines ({time.monotonic() - began:.1f} s)")
    check(stat(profile, "hub", "heart_failures") == 0, "no engine was lost",
          run(["stats"] + profile.args()).stdout)

    # a client that sends and never reads
    engines = run(["engines"] + profile.args()).stdout.splitlines()
    uuid = engines[1].split()[1].encode()
    rss_before = status(controller, "VmHWM")
    flooder = Peer(json.load(open(os.path.join(
        profile.dir, "security", "ipcontroller-client.json")))["mux"])
    sent = 0
    began = time.monotonic()
    other = []
    while sent < FLOOD:
        flooder.send(b"".join(message(signer.frames("kernel_info_request", {},
                                                    idents=[uuid]))
                              for _ in range(1000)))
        sent += 1000
        if sent % 20000 == 0:
            start = time.monotonic()
            ok = px_ok(profile, "-t", "1")
            other.append((ok, time.monotonic() - start))
    check(all(ok for ok, _ in other) and max(t for _, t in other) < BOUND,
          f"another client is served during the flood "
          f"({max(t for _, t in other):.1f} s at most)", other)
    dropped = wait_until(lambda: stat(profile, "mux", "client_full") >= FLOOD - 1000 - 5000,
                         BOUND * 3, step=0.5)
    full = stat(profile, "mux", "client_full")
    check(dropped, f"{FLOOD} sent in {time.monotonic() - began:.1f} s: replies past "
          f"the client's 1,000 are dropped ({full})")
    rss_after = status(controller, "VmHWM")
    check(rss_after < 1024 * 1024,
          f"controller peak resident size {rss_before // 1024} MB before, "
          f"{rss_after // 1024} MB after")
    with open(os.path.join(profile.dir, "log", "banyan-controller.log")) as f:
        said = f.read().count("does not read its replies")
    check(1 <= said <= 3, f"said {said} time(s) in the log, not once a reply")
    check(px_ok(profile) and px_ok(profile, "--direct"),
          "px is served on both engines after the flood")
    flooder.close()

    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))

    # the same against a tree of banyan-scheduler processes, whose root and
    # leaves own the broadcast ports
    start = run(["cluster", "start", "-n", "2", "-k", "1", "--depth", "1",
                 "--tree-mode", "processes"] + profile.args(), timeout=90, env=ENV)
    check(start.returncode == 0, "cluster start --depth 1 --tree-mode processes",
          describe(start))
    controller = profile.record()["controller_pid"]
    nodes = node_pids(controller)
    owners = [controller] + nodes
    before = sum(fds(pid) for pid in owners)
    every = ports(profile)
    signer = Signer(os.path.join(profile.dir, "security", "ipcontroller-client.json"))
    took = storm(every, signer)
    check(len(nodes) == 3 and node_pids(controller) == nodes,
          f"{len(every)} ports stormed in {took:.1f} s: no node process died", nodes)
    check(wait_until(lambda: sum(fds(pid) for pid in owners) <= before + 2, BOUND),
          f"the controller and its nodes keep none of them ({before} descriptors "
          f"before, {sum(fds(pid) for pid in owners)} after)")
    check(px_ok(profile), "px is served on both engines")
    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0, "cluster stop", describe(stop))
finish()
