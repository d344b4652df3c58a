# SPDX-License-Identifier: BSD-3-Clause
"""libbanyan as a user gets it: installed with `cmake --install`, found
with pkg-config, the example built outside the tree (shared and static),
the header used from C99 and C++, then run against banyan's controller
and engines. Also checks that the library leaves the program's signal
handlers alone (it must not start czmq's global context).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bnharness  # noqa: E402

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..",
                                          ".."))
EXAMPLE = os.path.join(SOURCE_DIR, "client", "examples", "bn_example.c")

SIGNALS_PROGRAM = r"""
#include <banyan.h>
#include <signal.h>
#include <stdio.h>

static int
s_default (int sig)
{
    struct sigaction action;
    sigaction (sig, NULL, &action);
    return action.sa_handler == SIG_DFL;
}

int
main (int argc, char *argv[])
{
    int rc;
    bn_client_t *first = bn_client_new (argv[1], 10, &rc);
    bn_client_t *second = bn_client_new (argv[1], 10, &rc);
    if (!first || !second)
        return 2;
    bn_view_t *view = bn_view_new (first, BN_VIEW_DIRECT);
    bn_result_t *result = NULL;
    if (bn_client_wait_for_engines (first, 1, 30) != 0
        || bn_view_execute (view, "true", &result) != 0
        || bn_result_get (result, 30) != 0)
        return 3;
    bn_result_destroy (&result);
    bn_view_destroy (&view);
    bn_client_destroy (&second);
    bn_client_destroy (&first);
    if (!s_default (SIGINT) || !s_default (SIGTERM))
        return 4;
    printf ("signals untouched\n");
    return 0;
}
"""

CXX_PROGRAM = r"""
#include <banyan.h>
#include <cstdio>
int main ()
{
    std::printf ("%s\n", bn_strerror (BN_ETIMEDOUT));
    bn_idset_t *set = bn_idset_parse ("0-3");
    int ok = bn_idset_count (set) == 4;
    bn_idset_destroy (&set);
    return ok ? 0 : 1;
}
"""


# a sanitized build's libraries need the sanitizer runtimes linked first
SANITIZE = os.environ.get("BN_SANITIZE_FLAGS", "").split()


def run(checks, what, argv, env=None, expect_out=None, timeout=120):
    proc = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env, timeout=timeout)
    out = proc.stdout.decode(errors="replace")
    ok = proc.returncode == 0 and (expect_out is None or expect_out in out)
    checks.check(what, ok, "exit %d:\n%s" % (proc.returncode, out))
    return out


def main():
    bnharness.deadline(280)
    checks = bnharness.Checks("test_libbanyan_install")
    work = tempfile.mkdtemp(prefix="bn-install-")
    try:
        prefix = os.path.join(work, "prefix")
        run(checks, "cmake --install into a fresh prefix",
            ["cmake", "--install", bnharness.BUILD_DIR, "--prefix", prefix])
        pcfiles = [os.path.join(root, name)
                   for root, _, names in os.walk(prefix)
                   for name in names if name == "libbanyan.pc"]
        checks.check("libbanyan.pc is installed", len(pcfiles) == 1)
        if not pcfiles:
            return checks.finish()
        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.path.dirname(pcfiles[0])
        flags = run(checks, "pkg-config --cflags --libs libbanyan",
                    ["pkg-config", "--cflags", "--libs", "libbanyan"],
                    env=env).split()
        libdir = [f[2:] for f in flags if f.startswith("-L")][0]
        static_libs = run(checks, "pkg-config --static --libs libbanyan",
                          ["pkg-config", "--static", "--libs-only-l",
                           "libbanyan"], env=env).split()
        cflags = [f for f in flags if f.startswith("-I")]
        example = os.path.join(work, "bn_example")
        run(checks, "the example builds against the installed library",
            ["cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror",
             "-o", example, EXAMPLE] + SANITIZE + flags + ["-Wl,-rpath," + libdir])
        example_static = os.path.join(work, "bn_example_static")
        run(checks, "the example builds against libbanyan.a",
            ["cc", "-o", example_static, EXAMPLE] + cflags
            + SANITIZE
            + [os.path.join(libdir, "libbanyan.a")]
            + [lib for lib in static_libs if lib != "-lbanyan"])
        signals = os.path.join(work, "signals")
        with open(signals + ".c", "w") as f:
            f.write(SIGNALS_PROGRAM)
        run(checks, "a program using only banyan.h builds",
            ["cc", "-Wall", "-o", signals, signals + ".c"] + SANITIZE + flags
            + ["-Wl,-rpath," + libdir])
        cxx = os.path.join(work, "cxx")
        with open(cxx + ".cc", "w") as f:
            f.write(CXX_PROGRAM)
        run(checks, "banyan.h compiles and links as C++",
            ["c++", "-Wall", "-Wextra", "-pedantic", "-Werror", "-o", cxx,
             cxx + ".cc"] + SANITIZE + flags + ["-Wl,-rpath," + libdir])
        run(checks, "the C++ program runs", [cxx], expect_out="timed out")

        with bnharness.Cluster() as cluster:
            cluster.start_banyan_controller()
            cluster.start_banyan_engines(2)
            hostname = os.uname().nodename
            for binary in (example, example_static):
                out = run(checks, "%s runs against banyan" %
                          os.path.basename(binary),
                          [binary, cluster.client_file, "2"])
                checks.check("it printed each engine's hostname",
                             "[0] %s\n" % hostname in out
                             and "[1] %s\n" % hostname in out, out)
                checks.check("and each engine's echo",
                             out.count("echo -> 'hello from libbanyan'") == 2,
                             out)
            run(checks, "two clients in one program, signals untouched",
                [signals, cluster.client_file],
                expect_out="signals untouched")
            if checks.failed:
                cluster.dump_logs()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
