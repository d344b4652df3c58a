# SPDX-License-Identifier: BSD-3-Clause
"""A client that joins while engines register sees every one of them.

IPython Parallel 7.1.0's Client asks the hub for the engines
(connection_request) and only then subscribes to the notification port;
it never asks again. Engines that register between the reply and the
subscription would be missing from client.ids for good, and
wait_for_engines would time out. The test takes the client's steps one
by one, with the engines registering in between: connection_request
(no engines yet), the engines started and seen registered through
another socket's queue_request, and only then the subscription, which
must still bring every engine's registration_notification. Then the
stock Client, made while engines are starting, sees them all."""
import json
import sys
import time

import zmq
from jupyter_client.session import Session

import bnharness

ENGINES = 4


def session_for(path):
    with open(path) as f:
        info = json.load(f)
    return info, Session(key=info["key"].encode(),
                         signature_scheme=info["signature_scheme"],
                         username="test")


def url(info, port_name):
    # 7.1.0's connection file: interface "tcp://127.0.0.1" and a port each
    return "%s:%d" % (info["interface"], info[port_name])


def request(session, socket, msg_type, content, timeout=20):
    session.send(socket, msg_type, content=content)
    if not socket.poll(timeout * 1000):
        raise TimeoutError("no %s reply in %d s" % (msg_type, timeout))
    idents, msg = session.feed_identities(socket.recv_multipart())
    return session.deserialize(msg)["content"]


def main():
    checks = bnharness.Checks("notify_join")
    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller("--log-level", "warn")
        info, session = session_for(cluster.client_file)
        context = zmq.Context()
        joining = context.socket(zmq.DEALER)
        joining.linger = 0
        joining.connect(url(info, "registration"))
        reply = request(session, joining, "connection_request", {})
        checks.check("connection_reply before the engines: none",
                     reply.get("status") == "ok" and not reply["engines"],
                     reply)

        cluster.start_banyan_engines(ENGINES)
        observer = context.socket(zmq.DEALER)
        observer.linger = 0
        observer.connect(url(info, "registration"))
        registered = {}

        def all_registered():
            registered.update(request(session, observer, "queue_request",
                                      {"targets": None, "verbose": False}))
            registered.pop("unassigned", None)
            return len(registered) >= ENGINES
        bnharness.wait_until(all_registered, 60,
                             "%d engines in the hub" % ENGINES)

        sub = context.socket(zmq.SUB)
        sub.linger = 0
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(url(info, "notification"))
        seen = set()
        stop = time.monotonic() + 20
        while len(seen) < ENGINES and time.monotonic() < stop:
            if not sub.poll(200):
                continue
            idents, msg = session.feed_identities(sub.recv_multipart())
            msg = session.deserialize(msg)
            if msg["header"]["msg_type"] == "registration_notification":
                seen.add(msg["content"]["id"])
        checks.check("the client subscribed after the engines registered "
                     "gets each one's registration_notification",
                     seen == set(range(ENGINES)), sorted(seen))
        for socket in (joining, observer, sub):
            socket.close()
        context.term()

        cluster.start_banyan_engines(ENGINES)
        client = cluster.client()
        ids = cluster.wait_for_engines(client, 2 * ENGINES)
        checks.check("a stock Client made while engines start sees them all",
                     ids == list(range(2 * ENGINES)), ids)
    return checks.finish()


if __name__ == "__main__":
    bnharness.deadline(240)
    sys.exit(main())
