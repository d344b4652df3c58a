# SPDX-License-Identifier: BSD-3-Clause
"""Start banyan-controller in place of ipcontroller: translate the
ipcontroller flags that IPython Parallel's test package and Cluster pass
into banyan-controller's, then exec it.

ipcontroller finds its profile under $IPYTHONDIR (profile_<name>); banyan's
own --profile looks under ~/.banyan, so --profile becomes --profile-dir.
Flags banyan has no use for (--dictdb, --IPController.*) are dropped and
listed on stderr.
"""
import os
import sys

BUILD_DIR = os.environ.get("BN_BUILD_DIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "build",
    "dev"))

#  ipcontroller's numeric log levels (logging module) to banyan's names
LEVELS = {"0": "debug", "10": "debug", "20": "info", "30": "warn",
          "40": "error", "50": "error", "DEBUG": "debug", "INFO": "info",
          "WARN": "warn", "WARNING": "warn", "ERROR": "error",
          "CRITICAL": "error"}

#  flags whose value passes through under banyan's name
RENAMED = {"--ip": "--ip", "--ping": "--ping", "--cluster-id": "--cluster-id",
           "--profile-dir": "--profile-dir", "--hwm": "--hwm",
           "--scheme": "--scheme", "--db": "--db"}

#  flags that take no value and map to banyan flags (None: dropped)
SWITCHES = {"--dictdb": None, "--nodb": "--nodb", "--sqlitedb": None,
            "--reuse": "--reuse", "--restore": "--restore"}


def ipython_dir():
    path = os.environ.get("IPYTHONDIR")
    if path:
        return path
    try:
        from IPython.paths import get_ipython_dir
        return get_ipython_dir()
    except ImportError:
        return os.path.expanduser("~/.ipython")


def translate(argv, known=None):
    """banyan-controller arguments for ipcontroller's argv; also returns the
    list of dropped arguments. known: flags the banyan binary accepts
    (None: all in RENAMED and SWITCHES)."""
    out, dropped = [], []
    profile, profile_dir = "default", None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        takes = name in RENAMED or name in ("--profile", "--log-level")
        if takes and not eq:
            if i + 1 < len(argv):
                value = argv[i + 1]
                i += 1
        i += 1
        if name == "--profile":
            profile = value
        elif name == "--profile-dir":
            profile_dir = value
        elif name == "--log-level":
            out += ["--log-level", LEVELS.get(value.upper(), "info")]
        elif name in RENAMED:
            if known is None or RENAMED[name] in known:
                out += [RENAMED[name], value]
            else:
                dropped.append(arg)
        elif name in SWITCHES and SWITCHES[name] and (
                known is None or SWITCHES[name] in known):
            out.append(SWITCHES[name])
        else:
            dropped.append(arg)
    if profile_dir is None:
        profile_dir = os.path.join(ipython_dir(), "profile_" + profile)
    return ["--profile-dir", profile_dir] + out, dropped


def known_flags(binary):
    """Flags that banyan-controller's --help lists."""
    import subprocess
    try:
        text = subprocess.run([binary, "--help"], capture_output=True,
                              text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    flags = set()
    for word in text.split():
        if word.startswith("--"):
            flags.add(word.split("=")[0].rstrip(",]"))
    return flags


def main():
    binary = os.path.join(BUILD_DIR, "bin", "banyan-controller")
    if not os.access(binary, os.X_OK):
        sys.stderr.write("bn_ipcontroller: %s is not built\n" % binary)
        return 127
    args, dropped = translate(sys.argv[1:], known_flags(binary))
    if dropped:
        sys.stderr.write("bn_ipcontroller: ignored %s\n" % " ".join(dropped))
    os.execv(binary, [binary] + args)


if __name__ == "__main__":
    sys.exit(main())
