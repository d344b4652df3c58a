# SPDX-License-Identifier: BSD-3-Clause
"""CurveZMQ between banyan and the stock IPython Parallel 7.1.0, both ways.

banyan-controller --curve (the tree's nodes as threads and as processes)
with banyan engines and a stock ipengine (IPP_ENABLE_CURVE=1): the stock
Client finds curve_serverkey in the connection file and runs direct,
broadcast and load-balanced work; banyan px (libbanyan) does too; a client
with another server key, or none, gets no service while the others keep
theirs. Then a stock ipcontroller with IPP_ENABLE_CURVE=1 with banyan
engines, the stock Client and banyan px.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

TIMEOUT = 30  # seconds any one result may take


def px(cluster, *args):
    return subprocess.run(
        [bnharness.binary("banyan"), "px", "--profile-dir",
         cluster.profile_dir, "--timeout", "20"] + list(args),
        capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL)


def copy_with_key(cluster, name, serverkey):
    """The client connection file as name, with curve_serverkey replaced."""
    with open(cluster.client_file) as f:
        info = json.load(f)
    info["curve_serverkey"] = serverkey
    path = os.path.join(cluster.profile_dir, name)
    with open(path, "w") as f:
        json.dump(info, f)
    return path


def refused(path):
    """The exception a stock Client of path raises within 3 s, or None."""
    import ipyparallel
    try:
        client = ipyparallel.Client(path, timeout=3)
    except Exception as error:  # noqa: BLE001 - we report what it was
        return "%s: %s" % (type(error).__name__, error)
    client.close(linger=0)
    return None


def banyan_controller(checks, mode):
    import ipyparallel
    import zmq
    from ipyparallel import Reference
    with bnharness.Cluster() as cluster:
        cluster.start_banyan_controller("--curve", "--depth", "1",
                                        "--tree-mode", mode)
        with open(cluster.client_file) as f:
            client_info = json.load(f)
        with open(cluster.engine_file) as f:
            engine_info = json.load(f)
        cert = os.path.join(cluster.profile_dir, "security",
                            "banyan-controller.cert")
        with open(cert) as f:
            public = [line.split('"')[1] for line in f
                      if line.strip().startswith("public-key")]
        key = client_info.get("curve_serverkey")
        checks.check("%s: curve_serverkey in both files is the public key "
                     "of the profile's certificate" % mode,
                     key and len(key) == 40 and public == [key]
                     and engine_info.get("curve_serverkey") == key,
                     (key, public))
        checks.check("%s: the secret half is mode 0600" % mode,
                     os.stat(cert + "_secret").st_mode & 0o777 == 0o600)

        cluster.start_banyan_engines(2)
        client = cluster.client()
        cluster.wait_for_engines(client, 2)
        stock = cluster.spawn("ipengine", [
            bnharness.PYTHON, "-m", "ipyparallel.engine",
            "--file=%s" % cluster.engine_file, "--log-level=WARN"],
            env={"IPP_ENABLE_CURVE": "1"})
        ids = cluster.wait_for_engines(client, 3)
        checks.check("%s: two banyan engines and a stock ipengine with "
                     "IPP_ENABLE_CURVE=1 registered" % mode,
                     sorted(ids) == [0, 1, 2] and stock.poll() is None, ids)

        value = client[[0, 1]].apply_sync(Reference("echo"), "direct")
        checks.check("%s: direct apply on the banyan engines" % mode,
                     value == ["direct", "direct"], value)
        value = client[2].apply_sync(lambda x: x * 2, 21)
        checks.check("%s: direct apply on the stock engine" % mode,
                     value == 42, value)
        for coalescing in (False, True):
            view = client.broadcast_view(targets=[0, 1],
                                         is_coalescing=coalescing)
            value = view.apply_sync(Reference("echo"), 7)
            checks.check("%s: broadcast to the banyan engines "
                         "(coalescing %s)" % (mode, coalescing),
                         value == [7, 7], value)
        value = client.broadcast_view(targets=[2]).apply_sync(lambda: 5)
        checks.check("%s: broadcast to the stock engine" % mode,
                     value == [5], value)
        view = client.broadcast_view()
        view.push({"a": 5}, block=True)
        value = view.pull("a", block=True)
        checks.check("%s: push and pull through the tree on all three" % mode,
                     value == [5, 5, 5], value)
        value = client.load_balanced_view([0, 1]).apply_sync(
            Reference("echo"), 8)
        checks.check("%s: load-balanced apply" % mode, value == 8, value)

        run = px(cluster, "-t", "0-1", "echo via px")
        checks.check("%s: banyan px (libbanyan) with the server key" % mode,
                     run.returncode == 0
                     and sorted(run.stdout.splitlines())
                     == ["[stdout:0] via px", "[stdout:1] via px"],
                     repr(run))

        other = zmq.curve_keypair()[0].decode("ascii")
        why = refused(copy_with_key(cluster, "wrong.json", other))
        checks.check("%s: a stock Client with another server key gets no "
                     "service (%s)" % (mode, why), why is not None)
        why = refused(copy_with_key(cluster, "none.json", None))
        checks.check("%s: a stock Client without the server key gets no "
                     "service (%s)" % (mode, why), why is not None)
        wrong = os.path.join(cluster.profile_dir, "security",
                             "ipcontroller-client.json")
        os.replace(copy_with_key(cluster, "wrong.json", other), wrong)
        run = px(cluster, "-t", "0", "echo never")
        checks.check("%s: banyan px with another server key is refused, "
                     "saying why" % mode,
                     run.returncode != 0 and "never" not in run.stdout
                     and "curve_serverkey" in run.stderr, repr(run))
        value = client[[0, 1]].apply_sync(Reference("echo"), "on")
        checks.check("%s: the good client is still served" % mode,
                     value == ["on", "on"], value)
        value = client.broadcast_view(targets=[0, 1]).apply_sync(
            Reference("echo"), "still")
        checks.check("%s: ...through the tree too" % mode,
                     value == ["still", "still"], value)


def stock_controller(checks):
    with bnharness.Cluster() as cluster:
        os.environ["IPP_ENABLE_CURVE"] = "1"
        try:
            cluster.start_stock_controller(
                "--IPController.broadcast_scheduler_depth=1")
        finally:
            del os.environ["IPP_ENABLE_CURVE"]
        with open(cluster.engine_file) as f:
            info = json.load(f)
        checks.check("stock ipcontroller: its engine file has a "
                     "curve_serverkey (and no HMAC key)",
                     len(info.get("curve_serverkey") or "") == 40
                     and info.get("key") == "", info)
        cluster.start_banyan_engines(2)
        client = cluster.client()
        ids = cluster.wait_for_engines(client, 2)
        checks.check("stock ipcontroller: banyan engines register over "
                     "CURVE", sorted(ids) == [0, 1], ids)
        from ipyparallel import Reference
        value = client[:].apply_sync(Reference("echo"), "x")
        checks.check("stock ipcontroller: direct apply",
                     value == ["x", "x"], value)
        value = client.broadcast_view().apply_sync(Reference("echo"), 3)
        checks.check("stock ipcontroller: broadcast apply",
                     value == [3, 3], value)
        run = px(cluster, "echo px")
        checks.check("stock ipcontroller: banyan px over CURVE",
                     run.returncode == 0
                     and sorted(run.stdout.splitlines())
                     == ["[stdout:0] px", "[stdout:1] px"], repr(run))


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("CURVE with stock IPython Parallel")
    for mode in ("threads", "processes"):
        banyan_controller(checks, mode)
    stock_controller(checks)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
