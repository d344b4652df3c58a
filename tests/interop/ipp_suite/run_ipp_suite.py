# SPDX-License-Identifier: BSD-3-Clause
"""Run IPython Parallel's own test files with pytest against
banyan-controller (or, with --controller stock, against ipcontroller),
through bn_ipp_plugin. Known failures are listed in xfail-<controller>.txt;
the run fails only on a test that is not listed.

usage: run_ipp_suite.py [--controller banyan|stock] [--report FILE]
                        [TEST_FILE_OR_NODEID ...] [-- PYTEST_ARGS]
(arguments after -- that start with '-' go to pytest)
With no tests named, runs test_lbview, test_dependency, test_client,
test_asyncresult, test_view, test_remotefunction and test_magics.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
FILES = ["test_lbview.py", "test_dependency.py", "test_client.py",
         "test_asyncresult.py", "test_view.py", "test_remotefunction.py",
         "test_magics.py"]


def ipp_tests_dir():
    out = subprocess.run(
        [PYTHON, "-c", "import os, ipyparallel.tests as t; "
         "print(os.path.dirname(t.__file__))"],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--controller", choices=["banyan", "stock"],
                        default="banyan")
    parser.add_argument("--report", help="write a JSON summary here")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds for each test file")
    parser.add_argument("tests", nargs="*")
    args, extra = parser.parse_known_args()
    try:
        import pytest  # noqa: F401
    except ImportError:
        print("python3-pytest is not installed (.ci/setup installs it)")
        return 1
    extra += [t for t in args.tests if t.startswith("-")]
    tests = [t for t in args.tests if not t.startswith("-")]
    tests_dir = ipp_tests_dir()
    targets = [t if os.path.isabs(t) else os.path.join(tests_dir, t)
               for t in (tests or FILES)]
    # one pytest process per test file: a test that crashes its process
    # (libzmq aborts in the client on some failures) costs only its file
    rc = 0
    report = {}
    for target in targets:
        part = run_pytest(args, extra, target)
        if args.report and os.path.exists(part["report"]):
            with open(part["report"]) as f:
                report.update(json.load(f).get("tests", {}))
            os.unlink(part["report"])
        if part["rc"] not in (0, 5):
            print("%s: pytest exited with %d" % (target, part["rc"]),
                  flush=True)
            rc = 1
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"controller": args.controller, "tests": report}, f,
                      indent=1)
    return rc


def run_pytest(args, extra, target):
    """Run pytest on one file; returns its exit status and report path."""
    home = tempfile.mkdtemp(prefix="bn-ipp-")
    env = dict(os.environ)
    env.update({
        "BN_IPP_CONTROLLER": args.controller,
        "PYTHONPATH": HERE + os.pathsep + env.get("PYTHONPATH", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
        # the test package's setup() starts its controller in profile_iptest
        # under IPYTHONDIR; keep it out of the user's ~/.ipython
        "IPYTHONDIR": os.path.join(home, "ipython"),
        "HOME": home,
    })
    report = os.path.join(tempfile.gettempdir(),
                          "bn-ipp-report-%d.json" % os.getpid())
    env["BN_IPP_REPORT"] = report
    cmd = [PYTHON, "-m", "pytest", "-p", "bn_ipp_plugin", "-p",
           "no:cacheprovider", "-q", "-rfE", "--rootdir", home,
           "-o", "asyncio_mode=auto"] + extra + [target]
    print("running:", " ".join(cmd), flush=True)
    # own session so that a run out of time takes its controller and
    # engines with it
    proc = subprocess.Popen(cmd, env=env, cwd=home, start_new_session=True)
    try:
        rc = proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print("%s ran out of time (%ss)" % (target, args.timeout))
        rc = 3
    finally:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        shutil.rmtree(home, ignore_errors=True)
    return {"rc": rc, "report": report}


if __name__ == "__main__":
    sys.exit(main())
