#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Regenerate the pickles check_bn_pickle reads, from the stock IPython
Parallel 7.1.0 serializer under Python 3.11 (/usr/bin/python3 make.py).

<name>.pickle    one pickle
<name>.frames    a list of frames: u32 count, then u32 size + bytes each
<name>.repr      Python's repr of what the pickle or frames decode to
large.sha256     digests of big pickles the test rebuilds in C
c_*.frames       made by banyan's encoder; checked here to decode in Python
"""
import builtins
import collections
import hashlib
import math
import os
import pickle
import random
import struct
import sys

from ipyparallel.serialize import (deserialize_object, pack_apply_message,
                                   serialize_object, unpack_apply_message)
from ipyparallel.serialize.canning import Reference

HERE = os.path.dirname(os.path.abspath(__file__))


def put(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def put_frames(name, frames):
    out = [struct.pack("<I", len(frames))]
    for frame in frames:
        frame = bytes(frame)
        out += [struct.pack("<I", len(frame)), frame]
    put(name + ".frames", b"".join(out))


def read_frames(name):
    with open(os.path.join(HERE, name), "rb") as f:
        data = f.read()
    (count,) = struct.unpack_from("<I", data)
    offset, frames = 4, []
    for _ in range(count):
        (size,) = struct.unpack_from("<I", data, offset)
        frames.append(data[offset + 4:offset + 4 + size])
        offset += 4 + size
    return frames


def norm(value):
    """What banyan's value tree holds: bytearray as bytes, frozenset as set."""
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, frozenset):
        return {norm(v) for v in value}
    if isinstance(value, list):
        return [norm(v) for v in value]
    if isinstance(value, tuple):
        return tuple(norm(v) for v in value)
    if isinstance(value, set):
        return {norm(v) for v in value}
    if isinstance(value, dict):
        return {norm(k): norm(v) for k, v in value.items()}
    return value


def put_value(name, value, protocol=4, with_repr=True):
    put(name + ".pickle", pickle.dumps(value, protocol))
    if with_repr:
        loaded = pickle.loads(pickle.dumps(value, protocol))
        put(name + ".repr", repr(norm(loaded)).encode())


def f(a, b=2):
    return a + b


def main():
    # Single values, protocol 4 (what Python 3.11 peers send).
    put_value("int_2", 2)
    put_value("none", None)
    put_value("true", True)
    put_value("float_3_5", 3.5)
    put_value("str_hi", "hi")
    put_value("ints", [0, 1, 255, 256, 65535, 65536, -1, -300, -70000,
                       2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**40, -2**40,
                       2**63 - 1, -2**63, 2**62, -2**55])
    put_value("floats", [0.0, -0.0, 0.1, 1.5, -2.25, 1e20, 1e16, 1e15,
                         123456789.125, 1e-5, 0.0001, 1e300, 5e-324,
                         float("inf"), float("-inf"), math.pi, 2.0**70])
    put_value("unicode", ["héllo wörld", "✓ ok", "😀", "a'b", 'a"b', "a'\"b",
                          "tab\tnl\nnul\x00del\x7f", "\x80\xa0\xad\xff",
                          "\u2028\ufeff\U000e0001", "\\", "\ud800x", ""])
    put_value("nested", [1, "hi", b"\x00", None, True, 3.5, {"a": 1}, (),
                         (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), [], {}, set(),
                         {5}, [[[["deep"]]]], {"k": {"j": [(None,)]}},
                         b"q'\"\\\r", frozenset([7])])
    put_value("info", {"nargs": 2, "narg_bufs": 3, "kw_keys": ["a", "b"]})
    put_value("toobig", [1, 2**64])
    put_value("list_1001", list(range(1001)))
    put_value("dict_1000", {i: i % 3 for i in range(1000)})
    put_value("shared", [["x", "y"]] * 3 + [("t",)] * 2)
    put_value("odict", collections.OrderedDict([("a", 1), ("b", [2])]),
              with_repr=False)

    # Float and str repr corpora, compared to Python's repr: random doubles
    # and the edges of every range of code points repr escapes.
    rng = random.Random(7)
    floats = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
              for _ in range(300)]
    floats += [rng.uniform(-1000, 1000) for _ in range(150)]
    floats += [rng.randint(-10**6, 10**6) / 10**rng.randint(0, 8)
               for _ in range(150)]
    floats += [10.0**e for e in range(-20, 25)]
    floats += [2.0**e for e in range(-60, 70, 3)]
    put_value("float_corpus", floats)
    strings, start = [], None
    for code in range(0x7e, 0x110001):
        printable = code <= 0x10ffff and chr(code).isprintable()
        if not printable and start is None:
            start = code
        elif printable and start is not None:
            edges = {start - 1, start, code - 1, min(code, 0x10ffff)}
            strings.append("".join(chr(c) for c in sorted(edges)))
            start = None
    strings.append("".join(chr(c) for c in range(0x7e, 0x7e + 0x90, 3)))
    put_value("str_corpus", strings)

    # The same data in every protocol.
    mixed = [1, -2, 300, 70000, 2**40, 1.5, "str", "é\u20ac", b"ab\xff", b"",
             (1, 2), {"k": [None, True, False]}, {1, 2}, frozenset([3]),
             bytearray(b"xy"), "line\nbreak"]
    for protocol in range(6):
        put_value("mixed_p%d" % protocol, mixed, protocol)

    # serialize_object (apply_reply buffers).
    cases = {
        "ser_int": 5,
        "ser_small_bytes": b"small",
        "ser_big_bytes": bytes(range(256)) * 8,
        "ser_list_bytes": [b"a" * 1500, "x", b"b" * 1100, b"c"],
        "ser_dict_bytes": {"b": b"B" * 1500, "a": b"A" * 1200, "c": 3},
        "ser_range": list(range(100)),
        "ser_str": "résultat",
        "ser_set_bytes": {b"only"},
    }
    for name, value in cases.items():
        frames = serialize_object(value)
        put_frames(name, frames)
        put(name + ".repr", repr(norm(deserialize_object(frames)[0])).encode())

    # pack_apply_message (apply_request buffers).
    put_frames("apply_reference", pack_apply_message(
        Reference("echo"), (1, "two", [3.0]), {"z": None, "a": b"x" * 2000}))
    put_frames("apply_sum", pack_apply_message(builtins.sum, ([1, 2, 3],), {}))
    put_frames("apply_function", pack_apply_message(f, (1,), {"b": 5}))
    put_frames("apply_lambda", pack_apply_message(lambda x: x * 3, (2,), {}))
    put_frames("apply_bigconst", pack_apply_message(lambda x: x * 10**20, (2,), {}))
    put_frames("apply_big_arg", pack_apply_message(
        Reference("size"), (b"\x01" * 5000, {"k": b"\x02" * 3000}), {}))
    put_frames("apply_noargs", pack_apply_message(Reference("now"), (), {}))
    put_frames("reference_myfunc", serialize_object(Reference("myfunc")))
    import numpy
    put_frames("ser_ndarray", serialize_object(numpy.arange(300, dtype="<i8")))

    # Digests of big pickles whose framing the C test checks.
    digests = {
        "strings_20000": ["s%09d" % i for i in range(20000)],
        "bytes_65530_list": [b"x" * 65530],
        "bytes_65530_then_ints": [b"x" * 65530, 5, 6],
        "bytes_70000": bytes(i * 7 % 256 for i in range(70000)),
        "dict_3000": {"k%05d" % i: i for i in range(3000)},
        "floats_1001": [i / 3 for i in range(1001)],
        "str_70000": "é" * 35000,
    }
    with open(os.path.join(HERE, "large.sha256"), "w") as out:
        for name, value in digests.items():
            out.write("%s %s\n" % (name, hashlib.sha256(pickle.dumps(value, 4)).hexdigest()))

    # What banyan's encoder made (the C test compares its output to these
    # files): each must decode in the stock Python to the value named.
    expect = {
        "c_mixed_keys": {1: "one", "two": 2, None: b"y" * 2000},
        "c_reference": None,
        "c_dict_bytes": {"b": b"B" * 1500, "a": b"A" * 1200, "c": 3},
        "c_list": [b"a" * 1500, "x", b"b" * 1100, b"c", 7],
    }
    for name, value in expect.items():
        path = os.path.join(HERE, name + ".frames")
        if not os.path.exists(path):
            print("missing %s (run the C test with BN_PICKLE_WRITE_C=1)" % path)
            continue
        frames = read_frames(name + ".frames")
        if name == "c_reference":
            g = {"echo": lambda *a, **k: (a, k)}
            fn, args, kwargs = unpack_apply_message(frames, g)
            got = fn(*args, **kwargs)
            value = ((1, "two", [3.0]), {"a": b"x" * 2000, "z": None})
        else:
            got = deserialize_object(frames)[0]
        if got != value:
            sys.exit("%s decodes to %r" % (name, got))
        print("%s ok" % name)


if __name__ == "__main__":
    main()
