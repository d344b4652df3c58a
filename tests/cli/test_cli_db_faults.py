# SPDX-License-Identifier: BSD-3-Clause
"""CLI: banyan-controller --db sqlite: on a disk that fails under it. The
controller runs in a mount namespace of its own with the database on a
small tmpfs (skipped, status 77, where a mount namespace cannot be made):

- the filesystem fills up: the write fails, the error is logged once, the
  records stay in memory (history and results), px goes on;
- the filesystem (ext4 on a loop device, errors=remount-ro) turns
  read-only mid-run, as the kernel makes it on an error: the same."""

import os
import signal
import subprocess
import sys
import time

from clitest import BIN, Profile, check, describe, finish, run, wait_until

BOUND = 20  # s
BIG = "head -c 100000 /dev/zero | tr '\\0' x"  # 100 kB of output a request

if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
    print("skipped: cannot make a mount namespace (unshare -m)")
    sys.exit(77)


def start(profile, mount):
    """A controller whose database folder is mounted with mount (the
    options and source of a mount command, ending in the folder) in a mount
    namespace of its own, and two engines; returns (controller, engines,
    database folder)."""
    folder = os.path.join(profile.dir, "db")
    os.makedirs(folder, exist_ok=True)
    log = os.path.join(profile.dir, "controller.log")
    controller = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"mount {mount} '{folder}' && exec "
         f"'{BIN}/banyan-controller' --profile-dir '{profile.dir}' "
         f"--db 'sqlite:{folder}/records.db' --ping 200 --log-file '{log}'"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    connection = os.path.join(profile.dir, "security", "ipcontroller-engine.json")
    check(wait_until(lambda: os.path.exists(connection), BOUND),
          "the controller wrote its connection files")
    engines = subprocess.Popen([f"{BIN}/banyan-engine", "--profile-dir", profile.dir,
                                "--count", "2"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    check(wait_until(lambda: len(run(["engines"] + profile.args()).stdout.splitlines()) == 3,
                     BOUND), "two engines registered")
    return controller, engines, folder


def stop(controller, engines):
    for proc in (engines, controller):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def records(profile):
    """{counter: value} of the controller's records."""
    table = {}
    for line in run(["stats"] + profile.args()).stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == "records":
            table[fields[1]] = fields[2]
    return table


def failures_logged(profile):
    """The log lines that say the database failed."""
    with open(os.path.join(profile.dir, "controller.log")) as f:
        return [line.strip() for line in f if "keeping records in memory only" in line]


def history(profile):
    lines = run(["history"] + profile.args()).stdout.splitlines()[1:]
    return [line.split()[0] for line in lines if line.strip()]


def exercise(profile, controller, what):
    """Requests go on after the database failed; their records stay in
    memory; the failure is logged once."""
    began = time.monotonic()
    failed = wait_until(lambda: records(profile).get("storage") == "memory", BOUND, step=0.2)
    check(failed, f"{what}: the controller keeps its records in memory "
          f"({time.monotonic() - began:.1f} s)", records(profile))
    for _ in range(3):
        done = run(["px"] + profile.args() + [BIG])
        check(done.returncode == 0 and len(done.stdout) > 200000,
              f"{what}: px goes on", describe(done)[:300])
    ids = history(profile)
    check(len(ids) >= 5, f"{what}: the history holds every request ({len(ids)})", ids)
    result = run(["result"] + profile.args() + [ids[-1]])
    check(result.returncode == 0 and "x" * 1000 in result.stdout,
          f"{what}: the last one's result is read from memory", describe(result)[:300])
    said = failures_logged(profile)
    check(len(said) == 1, f"{what}: the failure is logged once: "
          f"{said[0].split(' error: ')[-1] if said else ''}", said)
    check(controller.poll() is None, f"{what}: the controller runs")


with Profile("dbfull") as profile:
    controller, engines, folder = start(profile, "-t tmpfs -o size=256k tmpfs")
    try:
        # 100 kB of output a request in 256 kB: the disk is full by the
        # third request
        for _ in range(4):
            run(["px"] + profile.args() + [BIG])
        exercise(profile, controller, "disk full")
    finally:
        stop(controller, engines)

with Profile("dbro") as profile:
    image = os.path.join(profile.dir, "disk.img")
    with open(image, "wb") as f:
        f.truncate(16 << 20)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", image], capture_output=True, text=True)
    check(made.returncode == 0, "an ext4 image", made.stderr)
    controller, engines, folder = start(profile, f"-o loop,errors=remount-ro '{image}'")
    try:
        first = run(["px"] + profile.args() + ["echo written"])
        check(first.returncode == 0, "a request on a writable disk", describe(first))
        check(wait_until(lambda: records(profile).get("db_writes", "0") != "0", BOUND),
              "its record is written", records(profile))
        # an ext4 error, which remounts it read-only under the open file
        remount = subprocess.run(
            ["nsenter", "-t", str(controller.pid), "-m", "sh", "-c",
             f"echo 1 > /sys/fs/ext4/$(basename $(findmnt -n -o SOURCE '{folder}'))"
             f"/trigger_fs_error && findmnt -n -o OPTIONS '{folder}'"],
            capture_output=True, text=True)
        options = remount.stdout.strip().split(",")
        check(remount.returncode == 0 and ("ro" in options or "emergency_ro" in options),
              "the database's filesystem turned read-only", remount.stdout + remount.stderr)
        for _ in range(2):
            run(["px"] + profile.args() + [BIG])
        exercise(profile, controller, "read-only")
    finally:
        stop(controller, engines)
finish()
