#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Remake the seed corpora of tests/fuzz from real traffic.

Runs banyan-controller (from a dev build) with stock ipengines (Debian's
python3-ipyparallel 7.1.0) and banyan engines, drives it with the stock
Python client (direct, load-balanced and broadcast views, push/pull,
execute, errors, hub queries), and records every message the client and
the stock engines send and receive, as jupyter_client's Session frames it.
The seeds of each harness are then cut from those messages:

  wire          whole messages, re-signed with fuzz_wire's key
  header        every JSON part (header, parent, metadata, content)
  pickle        every pickled buffer
  value         the buffer lists of apply requests and replies
  query         [query, records...]: each db_request's query and whole
                TaskRecords from the db_replies
  connfile      the connection files the controller wrote
  bcast_reply   merged broadcast replies (broadcast_targets, bn_groups,
                bn_reduced): their four parts and buffers

to which go the pickles and buffer lists of tests/data/pickle (made by
Python's serializer) and hand-made seeds of the text formats (idset,
config).
With --fuzz-dir (a build of the fuzz preset) each corpus is minimised
with libFuzzer's -merge=1.

    /usr/bin/python3 tests/fuzz/capture.py [--build-dir build/dev]
                                            [--fuzz-dir build/fuzz]
"""
import argparse
import hashlib
import hmac
import json
import os
import runpy
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
FUZZ_KEY = b"fuzz-e05ab558-73805a94e21c7ce24a0654fe"  # fuzz_wire.c S_KEY
DELIM = b"<IDS|MSG>"
TIMEOUT = 30


# recording --------------------------------------------------------------
class Recorder:
    """Writes each message a Session sends or receives to a folder."""

    def __init__(self, folder, who):
        self.folder = folder
        self.who = who
        self.count = 0
        self.lock = threading.Lock()
        os.makedirs(folder, exist_ok=True)

    def record(self, direction, frames):
        frames = [bytes(getattr(f, "bytes", f)) for f in frames]
        with self.lock:
            self.count += 1
            name = "%s-%s-%05d" % (self.who, direction, self.count)
        with open(os.path.join(self.folder, name), "wb") as f:
            f.write(pack_frames(frames))

    def install(self):
        """Hook jupyter_client's Session in this process."""
        from jupyter_client.session import Session
        recorder = self
        serialize = Session.serialize
        send = Session.send
        feed = Session.feed_identities

        def hooked_serialize(self, msg, ident=None):
            frames = serialize(self, msg, ident)
            self._bn_frames = list(frames)
            return frames

        def hooked_send(self, stream, msg_or_type, content=None, parent=None,
                        ident=None, buffers=None, *args, **kwargs):
            self._bn_frames = None
            msg = send(self, stream, msg_or_type, content, parent, ident,
                       buffers, *args, **kwargs)
            if self._bn_frames is not None and stream is not None:
                if isinstance(msg_or_type, dict):
                    buffers = buffers or msg_or_type.get("buffers", [])
                recorder.record("sent", self._bn_frames + list(buffers or []))
            return msg

        def hooked_feed(self, msg_list, copy=True):
            recorder.record("recv", msg_list)
            return feed(self, msg_list, copy)

        Session.serialize = hooked_serialize
        Session.send = hooked_send
        Session.feed_identities = hooked_feed


def pack_frames(frames):
    """The frame list of bn_fuzz.h: u32 size then bytes, per frame."""
    return b"".join(struct.pack("<I", len(f)) + f for f in frames)


def unpack_frames(data):
    frames = []
    while len(data) >= 4:
        (size,) = struct.unpack_from("<I", data)
        frames.append(data[4:4 + size])
        data = data[4 + size:]
    return frames


def run_engine(folder, argv):
    """A stock ipengine whose Session records its traffic."""
    Recorder(folder, "engine%d" % os.getpid()).install()
    sys.argv = ["ipengine"] + argv
    runpy.run_module("ipyparallel.engine", run_name="__main__",
                     alter_sys=True)


# traffic ----------------------------------------------------------------
def traffic(client, stock, banyan):
    """Requests of every kind; failures are traffic too."""
    import datetime
    import ipyparallel as ipp
    from ipyparallel import Reference

    def quietly(call):
        try:
            return call()
        except Exception as error:  # noqa: BLE001 - errors are wanted
            return error

    def square(x, power=2):
        return x ** power

    def fail():
        return 1 / 0

    sv = client[stock]
    bv = client[banyan]
    sv.apply_sync(square, 7)
    sv.apply_sync(square, 3, power=5)
    sv.apply_sync(lambda *a, **k: (a, k), 1, 2.5, "é", b"x" * 2000,
                  None, True, [1, (2, 3)], {"a": {1, 2}}, frozenset([4]),
                  2 ** 70, -1, k=bytearray(b"yz"), n=float("inf"))
    sv.apply_sync(lambda d: d, {"k%d" % i: i for i in range(100)})
    sv.apply_sync(lambda d: d, list(range(70)))
    quietly(lambda: sv.apply_sync(fail))
    sv.push({"a": 5, "b": [1, 2, 3], "c": b"q" * 3000, "d": {"e": "f"}},
            block=True)
    sv.pull(["a", "b", "d"], block=True)
    sv.execute("z = a * 2", block=True)
    quietly(lambda: sv.execute("raise ValueError('no')", block=True))
    sv.scatter("s", list(range(10)), block=True)
    sv.gather("s", block=True)
    quietly(lambda: bv.apply_sync(Reference("echo"), 1, "two", b"3" * 1500))
    quietly(lambda: bv.apply_sync(sum, [1, 2, 3]))
    quietly(lambda: bv.apply_sync(square, 2))
    quietly(lambda: bv.execute("echo hello", block=True))
    quietly(lambda: client[:].apply_sync(sum, [4, 5]))

    lv = client.load_balanced_view()
    first = lv.apply_async(sum, [1, 2])
    first.get(timeout=TIMEOUT)
    with lv.temp_flags(after=[first], retries=1):
        lv.apply_async(sum, [3, 4]).get(timeout=TIMEOUT)
    with lv.temp_flags(follow=[first], timeout=5):
        quietly(lambda: lv.apply_async(sum, [5, 6]).get(timeout=TIMEOUT))
    quietly(lambda: lv.map_sync(abs, [-1, -2, -3]))
    quietly(lambda: lv.apply_sync(fail))

    # banyan's merged shapes (doc/broadcast.md), asked for in the request
    # metadata; the stock client does not read them, the recorder does
    for extra in ({"bn_group": True}, {"bn_reduce": "sum"},
                  {"bn_group": True, "bn_output": "reply"},
                  {"bn_levels": ["merge", "forward"]}):
        view = client.broadcast_view(is_coalescing=True)
        init = view._init_metadata
        view._init_metadata = (lambda targets, init=init, extra=extra:
                               dict(init(targets), **extra))
        for f, args in ((sum, [[1, 2]]), (abs, ["x"]), (os.getpid, [])):
            quietly(lambda: view.apply_async(f, *args).wait(3))

    for coalescing in (False, True):
        view = client.broadcast_view(is_coalescing=coalescing)
        quietly(lambda: view.apply_sync(sum, [1, 2, 3]))
        quietly(lambda: view.apply_sync(abs, "x"))
        quietly(lambda: view.execute("", block=True))
        some = client.broadcast_view(targets=[stock],
                                     is_coalescing=coalescing)
        quietly(lambda: some.apply_sync(square, 9))

    client.queue_status()
    client.queue_status(targets=stock, verbose=True)
    history = client.hub_history()
    quietly(lambda: client.get_result(history[:3]).get(timeout=TIMEOUT))
    quietly(lambda: client.result_status(history[:3]))
    quietly(lambda: client.resubmit(history[0]).get(timeout=TIMEOUT))
    now = datetime.datetime.now(datetime.timezone.utc)
    for query, keys in [
            ({"msg_id": {"$in": history[:4]}}, None),
            ({"completed": {"$ne": None}}, ["msg_id", "completed"]),
            ({"started": {"$gte": now - datetime.timedelta(hours=1)}},
             ["msg_id", "started", "engine_uuid"]),
            ({"msg_id": history[-1]}, ["msg_id", "result_content"]),
            ({"engine_uuid": {"$exists": True}, "resubmitted": None},
             ["msg_id"]),
            ({"msg_id": {"$nin": history[:2]},
              "submitted": {"$lt": now}}, ["msg_id", "submitted"]),
            ({"bogus": {"$regex": "x"}}, None)]:
        quietly(lambda: client.db_query(query, keys=keys))
    quietly(lambda: client.purge_results(history[:1]))
    quietly(lambda: client.abort(targets=stock))
    quietly(lambda: client.clear(targets=stock, block=True))


def capture(build_dir, raw):
    sys.path.insert(0, os.path.join(SOURCE, "tests", "interop"))
    os.environ["BN_BUILD_DIR"] = build_dir
    import bnharness
    bnharness.BUILD_DIR = build_dir
    bnharness.BIN_DIR = os.path.join(build_dir, "bin")
    recorder = Recorder(raw, "client")
    recorder.install()
    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller("--depth", "1")
        engine = cluster.spawn("ipengine", [
            bnharness.PYTHON, os.path.abspath(__file__), "--engine", raw,
            "--", "--file=%s" % cluster.engine_file, "--log-level=WARN"])
        cluster.start_banyan_engines(1)
        client = cluster.client()
        cluster.wait_for_engines(client, 2)
        ids = sorted(client.ids)
        stock = banyan = None
        for eid in ids:
            try:
                client[eid].apply_sync(lambda: 1)
                stock = eid
            except Exception:  # noqa: BLE001 - a banyan engine refuses
                banyan = eid
        if stock is None or banyan is None:
            raise RuntimeError("want a stock and a banyan engine: %s" % ids)
        traffic(client, stock, banyan)
        files = {}
        for kind in ("client", "engine"):
            with open(cluster.connection_file(kind), "rb") as f:
                files[kind] = f.read()
        cluster.kill(engine)
        return files


# corpora ----------------------------------------------------------------
class Corpus:
    """One harness's seeds, named by their SHA-1 as libFuzzer names them."""

    def __init__(self, name):
        self.folder = os.path.join(HERE, "corpus", name)
        self.seeds = {}

    def add(self, data):
        self.seeds[hashlib.sha1(data).hexdigest()] = data

    def write(self):
        shutil.rmtree(self.folder, ignore_errors=True)
        os.makedirs(self.folder)
        for name, data in self.seeds.items():
            with open(os.path.join(self.folder, name), "wb") as f:
                f.write(data)
        return len(self.seeds)


def split(frames):
    """idents, signature, the four parts, buffers; None if not framed."""
    if DELIM not in frames:
        return None
    at = frames.index(DELIM)
    rest = frames[at + 1:]
    if len(rest) < 5:
        return None
    return frames[:at], rest[0], rest[1:5], rest[5:]


def loads(part):
    try:
        return json.loads(part)
    except ValueError:
        return None


def cut(raw, connection_files):
    corpora = {name: Corpus(name) for name in (
        "wire", "header", "pickle", "value", "query", "connfile", "config",
        "idset", "bcast_reply")}
    per_type = {}
    queries = []
    records = []  # whole TaskRecords (db_replies without keys)
    for name in sorted(os.listdir(raw), key=lambda n: n.split("-")[-1]):
        with open(os.path.join(raw, name), "rb") as f:
            frames = unpack_frames(f.read())
        parts = split(frames)
        if not parts:
            continue
        idents, _, jsons, buffers = parts
        header = loads(jsons[0]) or {}
        msg_type = header.get("msg_type", "?")
        direction = name.split("-")[1]
        key = (direction, msg_type, bool(idents))
        if per_type.get(key, 0) < 4:
            per_type[key] = per_type.get(key, 0) + 1
            sig = hmac.new(FUZZ_KEY, b"".join(jsons),
                           hashlib.sha256).hexdigest().encode()
            corpora["wire"].add(pack_frames(idents + [DELIM, sig] + jsons
                                            + buffers))
        for part in jsons:
            corpora["header"].add(part)
        for buf in buffers:
            if buf[:1] == b"\x80":
                corpora["pickle"].add(buf)
        if buffers and msg_type in ("apply_request", "apply_reply",
                                    "data_message", "result_reply",
                                    "db_reply"):
            corpora["value"].add(pack_frames(buffers))
        metadata = loads(jsons[2]) or {}
        content = loads(jsons[3]) or {}
        if "broadcast_targets" in metadata or "bn_groups" in metadata \
                or "bn_reduced" in metadata:
            corpora["bcast_reply"].add(pack_frames(jsons + buffers))
        if msg_type == "db_request":
            queries.append(content.get("query"))
        if msg_type == "db_reply":
            records += [r for r in content.get("records") or []
                        if "header" in r]
    for query in queries:
        corpora["query"].add(json.dumps([query] + records[:6]).encode())
    # the pickles and buffer lists Python's serializer made for
    # check_bn_pickle (tests/data/pickle/make.py): every protocol
    pickles = os.path.join(SOURCE, "tests", "data", "pickle")
    for name in sorted(os.listdir(pickles)):
        with open(os.path.join(pickles, name), "rb") as f:
            data = f.read()
        if name.endswith(".pickle"):
            corpora["pickle"].add(data)
        elif name.endswith(".frames"):
            corpora["value"].add(data[4:])  # without the frame count
    for data in connection_files.values():
        corpora["connfile"].add(data)
    for name in sorted(os.listdir(os.path.join(SOURCE, "tests", "data",
                                               "connfile"))):
        with open(os.path.join(SOURCE, "tests", "data", "connfile", name),
                  "rb") as f:
            corpora["connfile"].add(f.read())
    with open(os.path.join(SOURCE, "conf", "banyan.conf"), "rb") as f:
        corpora["config"].add(f.read())
    for text in (b"controller\n    ip = 10.0.0.1\n    depth = 2\n"
                 b"    topology = \"4x16\"   # a comment\n",
                 b"engine.count = 4\nlog.level = debug\n",
                 b"client\n    timeout = 2.5\nprofile\n    name = 'x y'\n",
                 b"controller.reuse_files = true\n"):
        corpora["config"].add(text)
    for text in (b"0-15,32", b"3", b"", b" 0 - 3 , 5,7-9 ", b"2147483647",
                 b"0-2147483647", b"1,1,2-4,3"):
        corpora["idset"].add(text)
    return corpora


def merge(fuzz_dir, corpora):
    """Keep the seeds that add coverage (libFuzzer -merge=1)."""
    for name, corpus in corpora.items():
        harness = os.path.join(fuzz_dir, "tests", "fuzz", "fuzz_" + name)
        if not os.access(harness, os.X_OK):
            print("%s: no harness in %s, not minimised" % (name, fuzz_dir))
            continue
        kept = tempfile.mkdtemp(prefix="bn-merge-")
        subprocess.run([harness, "-merge=1", kept, corpus.folder],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(corpus.folder)
        shutil.move(kept, corpus.folder)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--engine":
        return run_engine(sys.argv[2], sys.argv[4:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(SOURCE, "build",
                                                            "dev"))
    parser.add_argument("--fuzz-dir")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep the recorded messages in DIR")
    args = parser.parse_args()
    raw = args.keep or tempfile.mkdtemp(prefix="bn-capture-")
    try:
        files = capture(os.path.abspath(args.build_dir), raw)
        corpora = cut(raw, files)
        for corpus in corpora.values():
            corpus.write()
        if args.fuzz_dir:
            merge(os.path.abspath(args.fuzz_dir), corpora)
        for name, corpus in sorted(corpora.items()):
            print("%-12s %d seeds" % (name, len(os.listdir(corpus.folder))))
    finally:
        if not args.keep:
            shutil.rmtree(raw, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
