# SPDX-License-Identifier: BSD-3-Clause
"""CLI: errors that name what is wrong. A profile folder that cannot be
made or written names its path and the reason; a profile path that is a
file is named; engines -t with an id nobody has names it; result and purge
with an unknown msg_id say the hub knows no such request; stop and px without
--cluster-id in a profile holding several clusters name them."""

import os
import shutil
import subprocess
import tempfile

from clitest import BANYAN, Profile, check, describe, finish, run

scratch = tempfile.mkdtemp(prefix="banyan-errors.")
try:
    # A path under a file
    a_file = os.path.join(scratch, "a-file")
    open(a_file, "w").close()
    start = run(["cluster", "start", "-n", "1", "--profile-dir",
                 os.path.join(a_file, "p")])
    check(start.returncode == 1 and start.stderr
          == f"banyan cluster start: cannot create the profile folder "
          f"{a_file}/p: {a_file} is a file, not a folder\n",
          "cluster start in a folder under a file names the file",
          describe(start))
    for command in (["cluster", "start", "-n", "1"], ["px", "hostname"],
                    ["status"]):
        proc = run(command[:-1] + ["--profile-dir", a_file] + command[-1:]
                   if command[0] == "px" else
                   command + ["--profile-dir", a_file])
        check(proc.returncode in (1, 2) and
              f"cannot use the profile folder {a_file}: it is a file, not a "
              f"folder" in proc.stderr,
              f"{' '.join(command)} with a profile path that is a file names "
              f"it", describe(proc))

    # A folder this user cannot write in: as root, drop to nobody
    locked = os.path.join(scratch, "locked")
    os.mkdir(locked)
    os.chmod(scratch, 0o755)
    os.chmod(locked, 0o555)
    prefix = []
    if os.geteuid() == 0 and shutil.which("setpriv"):
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup",
                  "--clear-groups"]
    for profile, doing in ((os.path.join(locked, "p"), "create"),
                           (locked, "write in")):
        proc = subprocess.run(prefix + [BANYAN, "cluster", "start", "-n", "1",
                                        "--profile-dir", profile],
                              capture_output=True, text=True, timeout=60)
        check(proc.returncode == 1 and proc.stderr
              == f"banyan cluster start: cannot {doing} the profile folder "
              f"{profile}: Permission denied\n",
              f"cluster start where it cannot {doing} the profile folder: "
              f"the path and Permission denied",
              f"rc={proc.returncode}\n{proc.stderr}")
finally:
    shutil.rmtree(scratch, ignore_errors=True)

with Profile("errors") as profile:
    for cluster_id, n in (("a", 3), ("b", 1)):
        start = run(["cluster", "start", "-n", str(n), "--cluster-id",
                     cluster_id] + profile.args(), timeout=90)
        check(start.returncode == 0, f"cluster start --cluster-id {cluster_id}",
              describe(start))
    a = profile.args("--cluster-id", "a")

    engines = run(["engines", "-t", "99"] + a)
    check(engines.returncode == 1 and engines.stderr
          == "banyan engines: not registered: engines[99] (1) (registered: "
          "engines[0-2] (3))\n",
          "engines -t 99 with 3 registered: 99 is not registered",
          describe(engines))
    engines = run(["engines", "-t", "1,99"] + a)
    check(engines.returncode == 1 and len(engines.stdout.splitlines()) == 2
          and engines.stdout.splitlines()[1].startswith("1 ")
          and "not registered: engines[99] (1)" in engines.stderr,
          "engines -t 1,99: engine 1's row, and 99 named", describe(engines))

    result = run(["result", "0123-nosuchid"] + a)
    check(result.returncode == 1 and
          "0123-nosuchid: no such msg_id: the hub knows no request by it" in
          result.stderr, "result with an unknown msg_id says so",
          describe(result))

    run(["px"] + a + ["true"])
    history = run(["history"] + a).stdout.splitlines()
    msg_id = history[-1].split()[0] if len(history) > 1 else "?"
    purge = run(["purge", "0123-nosuchid", msg_id] + a)
    gone = run(["result", msg_id] + a)
    check(purge.returncode == 1 and purge.stderr
          == "banyan purge: 0123-nosuchid: no such msg_id: the hub knows no "
          "request by it\n" and gone.returncode == 1,
          "purge with an unknown msg_id names it, and purges the known one",
          describe(purge) + describe(gone))

    several = ("no cluster without --cluster-id in "
               f"{profile.dir}, which holds the clusters a, b: say which "
               "with --cluster-id")
    px = run(["px"] + profile.args() + ["hostname"])
    check(px.returncode == 12 and several in px.stderr,
          "px without --cluster-id names the clusters a and b", describe(px))
    stop = run(["cluster", "stop"] + profile.args())
    check(stop.returncode == 11 and several in stop.stderr,
          "cluster stop without --cluster-id names them", describe(stop))
    for cluster_id in ("a", "b"):
        stop = run(["cluster", "stop", "-q"]
                   + profile.args("--cluster-id", cluster_id), timeout=60)
        check(stop.returncode == 0, f"cluster stop --cluster-id {cluster_id}",
              describe(stop))
finish()
