# SPDX-License-Identifier: BSD-3-Clause
"""The stock IPython Parallel 7.1.0 client on engines that are about to be
lost: stocklost.py CLIENT_FILE IDS WHY, where IDS are the engines
("2,3") and WHY what their errors must say ("host node on h1 (198.18.0.1)
stopped answering"). It connects, waits until it sees the engines, prints
"ready", and once a line comes on its standard input (the test has cut the
engines off meanwhile) sends each engine a request through the mux and all
of them one broadcast (not coalescing). Each must fail with an
EngineError, as the stock client unwraps a controller's error reply (a
RemoteError whose ename is EngineError), whose text says WHY. Prints an
"ok: ..." line a check; on the first that fails, "FAIL: ..." and exits 1.
Run with /usr/bin/python3."""
import sys
import time

import ipyparallel as ipp

TIMEOUT = 60  # seconds the requests may take to fail


def fail(what):
    print("FAIL: stock client: " + what, flush=True)
    sys.exit(1)


def ok(what):
    print("ok: stock client: " + what, flush=True)


def check(what, results, count, why):
    errors = []
    for result in results:
        got = result.exception()
        if isinstance(got, ipp.error.CompositeError):
            errors += [(ename, evalue) for ename, evalue, *_ in got.elist]
        else:
            errors.append((getattr(got, "ename", None), repr(got)
                           if not hasattr(got, "evalue") else got.evalue))
    if len(errors) != count or any(ename != "EngineError" or why not in evalue
                                   for ename, evalue in errors):
        fail("%s: %s" % (what, errors))
    ok("%s: %d x EngineError: %s" % (what, count, errors[0][1]))


def main():
    client_file, ids, why = sys.argv[1], sys.argv[2], sys.argv[3]
    ids = [int(i) for i in ids.split(",")]
    client = ipp.Client(client_file, timeout=TIMEOUT)
    deadline = time.monotonic() + 60
    while not set(ids) <= set(client.ids):
        if time.monotonic() > deadline:
            fail("sees engines %s, not %s" % (client.ids, ids))
        time.sleep(0.1)
    print("ready", flush=True)
    sys.stdin.readline()
    direct = [client[i].apply_async(time.sleep, 1) for i in ids]
    broadcast = client.broadcast_view(targets=ids, is_coalescing=False)
    every = broadcast.apply_async(time.sleep, 1)
    for result in direct + [every]:
        if not result.wait(TIMEOUT):
            fail("no answer within %d s" % TIMEOUT)
    check("direct (mux)", direct, len(ids), why)
    check("broadcast", [every], len(ids), why)
    client.close()


if __name__ == "__main__":
    main()
