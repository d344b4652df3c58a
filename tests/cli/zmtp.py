# SPDX-License-Identifier: BSD-3-Clause
"""zmtp: a ZeroMQ peer written by hand (ZMTP 3.0, NULL mechanism) for the
CLI tests that must misbehave as no libzmq socket can: send half a
multipart message, or send and never read. Messages are signed as the
connection file says (doc/wire.md)."""

import hashlib
import hmac
import json
import socket
import uuid as uuids
from datetime import datetime, timezone

DELIM = b"<IDS|MSG>"


def greeting():
    """The 64-byte ZMTP 3.0 greeting of a NULL-mechanism client."""
    return (b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00")
            + b"\x00" + b"\x00" * 31)


def command(name, properties=()):
    body = bytes([len(name)]) + name
    for key, value in properties:
        body += bytes([len(key)]) + key + len(value).to_bytes(4, "big") + value
    return frame(body, command=True)


def frame(data, more=False, command=False):
    flags = (0x01 if more else 0) | (0x04 if command else 0)
    if len(data) > 255:
        return bytes([flags | 0x02]) + len(data).to_bytes(8, "big") + data
    return bytes([flags, len(data)]) + data


def message(frames):
    return b"".join(frame(f, more=i + 1 < len(frames)) for i, f in enumerate(frames))


class Peer:
    """A DEALER connected to port, its handshake done."""

    def __init__(self, port, identity=b"", host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.sendall(greeting())
        self.sock.sendall(command(b"READY", [(b"Socket-Type", b"DEALER"),
                                             (b"Identity", identity)]))
        seen = b""
        while len(seen) < 64:
            chunk = self.sock.recv(64 - len(seen))
            if not chunk:
                raise ConnectionError("closed during the greeting")
            seen += chunk

    def send(self, data):
        self.sock.sendall(data)

    def close(self):
        self.sock.close()


class Signer:
    """Builds signed Jupyter messages with a connection file's key."""

    def __init__(self, connection_file):
        with open(connection_file) as f:
            info = json.load(f)
        self.key = info["key"].encode()
        self.session = str(uuids.uuid4())

    def frames(self, msg_type, content, idents=(), metadata=None):
        header = {"msg_id": str(uuids.uuid4()), "msg_type": msg_type,
                  "username": "faults", "session": self.session,
                  "date": datetime.now(timezone.utc).isoformat(), "version": "5.3"}
        parts = [json.dumps(p).encode()
                 for p in (header, {}, metadata or {}, content)]
        mac = hmac.new(self.key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part)
        return list(idents) + [DELIM, mac.hexdigest().encode()] + parts
