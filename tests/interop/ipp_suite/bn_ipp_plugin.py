# SPDX-License-Identifier: BSD-3-Clause
"""pytest plugin: run IPython Parallel's own test files (Debian's copies in
ipyparallel/tests/) with banyan-controller in place of ipcontroller.

Load it with `-p bn_ipp_plugin` (this folder on PYTHONPATH). Environment:
  BN_IPP_CONTROLLER  "banyan" (default) or "stock" (leave ipcontroller)
  BN_BUILD_DIR       build tree holding bin/banyan-controller
  BN_IPP_XFAIL       list of known failures (default: xfail-<controller>.txt
                     beside this file)
  BN_IPP_REPORT      write a JSON summary of the outcomes here

Their test package starts its controller in ipyparallel/tests/__init__.py
(setup(), from the module global ipcontroller_cmd_argv); engines stay the
stock ipengine. The known-failure list has one test a line:
    test_client.py::TestClient::test_get_result | why it fails
A line naming a file or a class covers every test in it. Listed tests are
marked xfail (not strict: one that passes shows as XPASS in the summary, so
the list can be pruned); a reason starting "flaky:" marks a test that fails
only sometimes, which is not offered for pruning when it passes.
"""
import collections
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def controller():
    return os.environ.get("BN_IPP_CONTROLLER", "banyan")


def load_xfails(path):
    """{nodeid tail: reason} from a known-failure list."""
    entries = {}
    if not path or not os.path.exists(path):
        return entries
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition("|")
            entries[name.strip()] = reason.strip() or "known failure"
    return entries


def _tail(nodeid, path):
    """The nodeid from the test file's base name on (nodeids of files
    outside the rootdir lose their path)."""
    rest = nodeid.partition("::")[2]
    return os.path.basename(str(path)) + "::" + rest


def _match(entries, tail):
    if tail in entries:
        return entries[tail]
    # a parametrised test by its base name, a class, or a whole file
    base = tail.split("[", 1)[0]
    parts = base.split("::")
    for n in range(len(parts), 0, -1):
        key = "::".join(parts[:n])
        if key in entries:
            return entries[key]
    return None


_outcomes = collections.OrderedDict()
_listed = set()  # tests our list marked


def pytest_configure(config):
    if controller() == "banyan":
        import ipyparallel.tests as ipp_tests
        ipp_tests.ipcontroller_cmd_argv = [
            sys.executable, os.path.join(HERE, "bn_ipcontroller.py")]
    path = os.environ.get("BN_IPP_XFAIL",
                          os.path.join(HERE, "xfail-%s.txt" % controller()))
    config._bn_xfails = load_xfails(path)


def pytest_collection_modifyitems(config, items):
    entries = config._bn_xfails
    for item in items:
        reason = _match(entries, _tail(item.nodeid, item.path))
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
            if not reason.startswith("flaky:"):
                _listed.add(_tail(item.nodeid, item.path))


def pytest_runtest_logreport(report):
    tail = _tail(report.nodeid, report.location[0])
    if report.when == "call" or (report.when == "setup" and
                                 report.outcome != "passed"):
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.outcome == "passed" else "xfailed"
        else:
            outcome = report.outcome
        _outcomes[tail] = outcome
    elif report.when == "teardown" and report.outcome == "failed":
        _outcomes[tail] = "error"


def pytest_terminal_summary(terminalreporter):
    per_file = collections.OrderedDict()
    for tail, outcome in _outcomes.items():
        name = tail.split("::", 1)[0]
        per_file.setdefault(name, collections.Counter())[outcome] += 1
    tr = terminalreporter
    tr.write_sep("=", "IPython Parallel test files against %s" % (
        "banyan-controller" if controller() == "banyan" else "ipcontroller"))
    for name, counts in per_file.items():
        tr.write_line("%-24s %s" % (name, ", ".join(
            "%d %s" % (n, k) for k, n in sorted(counts.items()))))
    xpassed = [t for t, o in _outcomes.items()
               if o == "xpassed" and t in _listed]
    if xpassed:
        tr.write_line("listed as known failures but passed (prune the list):")
        for tail in xpassed:
            tr.write_line("  " + tail)
    path = os.environ.get("BN_IPP_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({"controller": controller(), "tests": _outcomes}, f,
                      indent=1)
