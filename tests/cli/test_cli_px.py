# SPDX-License-Identifier: BSD-3-Clause
"""CLI: px (prefixed output, -b on identical and on differing outputs, -S,
-q, -t, --timeout, Ctrl-C), apply, push and pull on a real cluster."""

import os
import signal
import subprocess
import time

from clitest import (BANYAN, Profile, check, describe, finish, processes,
                     run, wait_until)

HEADER = "---------------\nengines[{}] ({})\n---------------\n"

with Profile("px") as profile:
    start = run(["cluster", "start", "-n", "4"] + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 4", describe(start))
    px = profile.args()

    # engines finish in reverse order; the output is in engine order all
    # the same, as %px prints it
    reverse = "sleep 0.$((3 - BANYAN_ENGINE_ID))"
    plain = run(["px"] + px + [reverse + "; echo out $BANYAN_ENGINE_ID; "
                               "echo err >&2"])
    check(plain.returncode == 0
          and plain.stdout.splitlines()
          == [f"[stdout:{i}] out {i}" for i in range(4)]
          and plain.stderr.splitlines()
          == [f"[stderr:{i}] err" for i in range(4)],
          "px prefixes each line with its engine, stdout and stderr apart, "
          "in engine order", describe(plain))

    direct = run(["px", "--direct"] + px
                 + [reverse + "; echo out $BANYAN_ENGINE_ID; echo err >&2"])
    check(direct.returncode == 0 and direct.stdout == plain.stdout
          and direct.stderr == plain.stderr,
          "px --direct (one request per engine) prints what px through the "
          "broadcast tree prints", describe(direct))

    words = run(["px"] + px + ["printf", "'%s-%s\\n'", "a", "b"])
    check(words.returncode == 0 and words.stdout.count("[stdout:0] a-b\n") == 1,
          "px joins its words into one command line", describe(words))

    same = run(["px", "-b"] + px + ["echo same; echo two"])
    check(same.returncode == 0
          and same.stdout == HEADER.format("0-3", 4) + "same\ntwo\n",
          "px -b: identical outputs in one block", describe(same))

    differ = run(["px", "-b"] + px + ["echo $((BANYAN_ENGINE_ID % 2))"])
    check(differ.returncode == 0
          and differ.stdout == HEADER.format("0,2", 2) + "0\n"
          + HEADER.format("1,3", 2) + "1\n",
          "px -b: differing outputs, one block per output", describe(differ))

    direct = run(["px", "-b", "--direct"] + px + ["echo $((BANYAN_ENGINE_ID % 2))"])
    check(direct.returncode == 0 and direct.stdout == differ.stdout,
          "px -b --direct groups as px -b through the tree does", describe(direct))

    status = run(["px", "-b"] + px + ["echo x; exit $((BANYAN_ENGINE_ID / 2))"])
    check(status.returncode == 0
          and status.stdout == HEADER.format("0-1", 2) + "x\n"
          + HEADER.format("2-3", 2) + "x\n[status] exited with exit code 1\n",
          "px -b: same output, different status: two blocks", describe(status))

    largest = run(["px", "-S"] + px + ["exit $BANYAN_ENGINE_ID"])
    check(largest.returncode == 3 and "[status:3] exited with exit code 3"
          in largest.stderr, "px -S exits with the largest remote status",
          describe(largest))
    quiet = run(["px", "-S", "-q"] + px + ["exit $BANYAN_ENGINE_ID"])
    check(quiet.returncode == 3 and quiet.stderr == "" and quiet.stdout == "",
          "px -q prints no status lines", describe(quiet))
    balanced = run(["px", "--balanced"] + px + ["echo once $BANYAN_ENGINE_ID"])
    lines = balanced.stdout.splitlines()
    check(balanced.returncode == 0 and len(lines) == 1
          and lines[0].startswith("[stdout:")
          and lines[0].endswith("] once " + lines[0][8:lines[0].index("]")]),
          "px --balanced runs the command once, on one engine",
          describe(balanced))
    pinned = run(["px", "--balanced", "-t", "2"] + px
                 + ["echo on $BANYAN_ENGINE_ID"])
    check(pinned.returncode == 0 and pinned.stdout == "[stdout:2] on 2\n",
          "px --balanced -t 2 runs it on engine 2", describe(pinned))
    lb_apply = run(["apply", "--balanced"] + px + ["echo", "42"])
    check(lb_apply.returncode == 0 and len(lb_apply.stdout.splitlines()) == 1
          and lb_apply.stdout.endswith("] 42\n"),
          "apply --balanced calls the function once", describe(lb_apply))
    both = run(["apply", "--balanced", "--broadcast"] + px + ["echo", "1"])
    check(both.returncode == 2, "--balanced with --broadcast is a usage error",
          describe(both))
    plain_status = run(["px"] + px + ["exit 5"])
    check(plain_status.returncode == 0,
          "px without -S: 0 when every engine ran the command",
          describe(plain_status))
    signalled = run(["px", "-S", "-t", "1"] + px + ["kill -9 $$"])
    check(signalled.returncode == 137 and "killed by signal 9" in signalled.stderr,
          "a command killed by a signal: 128 + signal with -S",
          describe(signalled))

    targets = run(["px", "-t", "1,3", "-b"] + px + ["echo hi"])
    check(targets.returncode == 0 and targets.stdout == HEADER.format("1,3", 2)
          + "hi\n", "px -t 1,3 runs on those engines only", describe(targets))
    missing = run(["px", "-t", "2-9"] + px + ["true"])
    check(missing.returncode == 1 and "not registered: engines[4-9] (6)"
          in missing.stderr, "px -t naming unknown engines", describe(missing))

    slow = run(["px", "--timeout", "1"] + px
               + ["[ $BANYAN_ENGINE_ID = 0 ] && sleep 5; echo done"], timeout=30)
    check(slow.returncode == 1 and "[status:0] timed out" in slow.stderr
          and "[stdout:3] done" in slow.stdout and slow.elapsed < 4.5,
          f"px --timeout 1: the slow engine is reported ({slow.elapsed:.1f} s)",
          describe(slow))

    # Ctrl-C: the first says who is still running, the second aborts
    proc = subprocess.Popen([BANYAN, "px"] + px
                            + ["[ $BANYAN_ENGINE_ID = 2 ] && sleep 6; true"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    check(proc.returncode == 130
          and "still running on engines[2] (1)" in err
          and "aborting engines[2] (1)" in err,
          "Ctrl-C once: who is running; twice: abort, status 130",
          f"rc={proc.returncode}\n{out}\n{err}")

    apply = run(["apply"] + px + ["echo", "42", "hi", "-1.5"])
    check(apply.returncode == 0
          and apply.stdout.splitlines()
          == [f"[{i}] (42, 'hi', -1.5)" for i in range(4)],
          "apply echo: ints, strings and floats, results as Python reprs, in "
          "engine order", describe(apply))
    summed = run(["apply", "-b"] + px + ["sum", "1", "2", "3"])
    check(summed.returncode == 0 and summed.stdout == HEADER.format("0-3", 4) + "6\n",
          "apply -b sum", describe(summed))
    nosuch = run(["apply"] + px + ["no_such_function"])
    check(nosuch.returncode == 1 and "[status:0] NotImplementedError" in nosuch.stderr,
          "apply of an unknown function: status 1 and the remote error",
          describe(nosuch))

    data = os.path.join(profile.dir, "data.bin")
    with open(data, "wb") as f:
        f.write(b"hello\x00world")
    push = run(["push", "blob", data] + px)
    check(push.returncode == 0 and "pushed to engines[0-3] (4)" in push.stdout,
          "push NAME FILE", describe(push))
    pull = run(["pull", "-b", "blob"] + px)
    check(pull.returncode == 0
          and pull.stdout == HEADER.format("0-3", 4) + "b'hello\\x00world'\n",
          "pull -b NAME gives the bytes back", describe(pull))
    stdin_push = run(["push", "-t", "2", "note", "-"] + px, input="from stdin")
    pull = run(["pull", "note"] + px)
    check(stdin_push.returncode == 0 and pull.stdout == "[2] b'from stdin'\n"
          and pull.returncode == 1
          and [line.split(" ")[0] for line in pull.stderr.splitlines()]
          == ["[status:0]", "[status:1]", "[status:3]"]
          and "NameError" in pull.stderr,
          "push - reads stdin; pull of a name some engines lack: status 1, "
          "in engine order", describe(pull))

    by_name = run(["apply"] + px + ["len", "@blob"])
    check(by_name.returncode == 0
          and by_name.stdout == "".join(f"[{e}] 11\n" for e in range(4)),
          "apply len @blob: the engines' stored value is the argument",
          describe(by_name))
    literal = run(["apply", "-t", "2"] + px + ["echo", "@note", "@@note"])
    check(literal.returncode == 0
          and literal.stdout == "[2] (b'from stdin', '@note')\n",
          "apply echo @note @@note: a reference and a string that starts "
          "with @", describe(literal))
    unbound = run(["apply", "--broadcast", "-t", "1-2"] + px
                  + ["len", "@note"])
    check(unbound.returncode == 1 and unbound.stdout == "[2] 10\n"
          and "[status:1] NameError: name 'note' is not defined"
          in unbound.stderr,
          "apply --broadcast len @note where engine 1 has no note: NameError "
          "for it, the value for the other", describe(unbound))

    piped = run(["px"] + px + ["cat"], input="hi\n")
    check(piped.returncode == 0
          and piped.stdout == "".join(f"[stdout:{e}] hi\n" for e in range(4)),
          "echo hi | px cat: every engine's command reads px's stdin",
          describe(piped))
    lines = "".join(f"line {n}\n" for n in range(5000))
    direct_in = run(["px", "--direct", "-b"] + px
                    + ["awk 'END { print NR, $0 }'"], input=lines)
    check(direct_in.returncode == 0
          and direct_in.stdout == HEADER.format("0-3", 4)
          + "5000 line 4999\n",
          "px --direct -b with 5000 lines on stdin: each engine reads them "
          "all", describe(direct_in))
    balanced_in = run(["px", "--balanced"] + px + ["cat"], input="once\n")
    check(balanced_in.returncode == 0
          and balanced_in.stdout.endswith("] once\n")
          and len(balanced_in.stdout.splitlines()) == 1,
          "px --balanced: the one engine that runs it reads stdin",
          describe(balanced_in))
    unread = run(["px", "--no-stdin", "-t", "0"] + px + ["cat; echo end"],
                 input="not read\n")
    check(unread.returncode == 0 and unread.stdout == "[stdout:0] end\n",
          "px --no-stdin: the command reads /dev/null", describe(unread))

    # Output is byte-transparent: bytes that are not UTF-8, a NUL, and a
    # character that looks like banyan's escapes reach stdout unchanged
    raw = b"caf\xe9 \xff\xfe a\x00b caf\xc3\xa9 \xf4\x8f\xbd\x81\n"
    command = "printf 'caf\\351 \\377\\376 a\\000b caf\\303\\251 " \
              "\\364\\217\\275\\201\\n'; printf '\\351rr\\n' >&2"
    for mode in ([], ["--direct"], ["--balanced"]):
        exact = subprocess.run([BANYAN, "px", "-t", "1"] + mode + px
                               + [command], capture_output=True, timeout=60,
                               stdin=subprocess.DEVNULL)
        check(exact.returncode == 0
              and exact.stdout.endswith(b"] " + raw)
              and exact.stderr.endswith(b"] \xe9rr\n"),
              "px %s: output bytes as the command wrote them"
              % (" ".join(mode) or "(tree)"), repr(exact))
    grouped = subprocess.run([BANYAN, "px", "-b"] + px + [command],
                             capture_output=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    check(grouped.returncode == 0
          and grouped.stdout == HEADER.format("0-3", 4).encode() + raw
          + b"[stderr] \xe9rr\n",
          "px -b: the bytes too, every engine in one group", repr(grouped))

    run(["cluster", "stop"] + profile.args(), timeout=60)

# a process of 128 engines starts its commands from its spawning helper:
# each is still the engine process's child, and nothing is left at the end
with Profile("px-many") as profile:
    start = run(["cluster", "start", "-n", "128", "-k", "128"]
                + profile.args(), timeout=90)
    check(start.returncode == 0, "cluster start -n 128 -k 128",
          describe(start))
    record = profile.record()
    engine_pid = record["engine_procs"][0][0] if record else -1
    table = processes()
    spawners = [pid for pid, info in table.items()
                if info[1] == engine_pid and info[4] == "banyan-spawner"]
    check(len(spawners) == 1, "the engine process has one banyan-spawner",
          {pid: info[4] for pid, info in table.items()
           if info[1] == engine_pid})
    parents = run(["px", "-t", "5,77"] + profile.args() + ["echo $PPID"])
    check(parents.returncode == 0
          and parents.stdout.splitlines()
          == [f"[stdout:{i}] {engine_pid}" for i in (5, 77)],
          "a command's parent is the engine process", describe(parents))
    stop = run(["cluster", "stop"] + profile.args(), timeout=60)
    check(stop.returncode == 0
          and wait_until(lambda: not any(pid in processes()
                                         for pid in spawners), 10),
          "cluster stop leaves no spawning helper", describe(stop))
finish()
