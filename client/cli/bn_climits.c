/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_climits: a cluster's needs against the host's and the user's limits.

    The figures are measured on a cluster of banyan-engine processes: a
    process of one engine has 4 threads (its own, the engines' actor and
    libzmq's I/O and reaper threads) and 9.8 MB resident, one of 64
    engines 20.3 MB (0.17 MB an engine); the controller has 7 threads,
    12.9 MB with 8 engines and 20.9 MB with 64 (0.14 MB an engine), and
    117 open files with 8 engines, 376 with 64 (about 4.6 an engine).
    An engine process raises its own limit of open files as far as the
    hard limit lets it (banyan_engine.c), and refuses to start below 8 an
    engine and 69 more (bn_engine_actor.c).  */
#include "bn_climits.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define S_THREADS_PER_PROCESS 4
//  The supervisor, the controller's threads, and room
#define S_CLUSTER_TASKS 16
#define S_MIB (1024L * 1024L)
#define S_PROCESS_MEMORY (10 * S_MIB)
#define S_ENGINE_MEMORY (S_MIB * 35 / 100)
//  The first 4 engines of a process size their replay histories whole
//  at the start (two tables of 65,536 digests and flags each)
#define S_RESERVED_HISTORIES 4
#define S_HISTORY_MEMORY (2 * 65536L * 33)
#define S_CLUSTER_MEMORY (32 * S_MIB)
#define S_CONTROLLER_FILES_PER_ENGINE 5
#define S_CONTROLLER_FILES 128
#define S_ENGINE_FILES_PER_ENGINE 8
#define S_ENGINE_FILES 69

//  The number after "key:" in a /proc file's text, or -1.
static long
s_field (const char *text, const char *key)
{
    const char *at = strstr (text, key);
    return at ? strtol (at + strlen (key), NULL, 10) : -1;
}

//  Threads of the processes whose real user is uid.
static long
s_user_tasks (uid_t uid)
{
    DIR *dir = opendir ("/proc");
    if (!dir)
        return 0;
    long tasks = 0;
    struct dirent *entry;
    while ((entry = readdir (dir))) {
        if (!isdigit ((unsigned char)entry->d_name[0]))
            continue;
        char path[300], text[4096];
        snprintf (path, sizeof path, "/proc/%s/status", entry->d_name);
        FILE *file = fopen (path, "r");
        if (!file)
            continue;
        size_t size = fread (text, 1, sizeof text - 1, file);
        fclose (file);
        text[size] = 0;
        if (s_field (text, "\nUid:") == (long)uid) {
            long threads = s_field (text, "\nThreads:");
            tasks += threads > 0 ? threads : 1;
        }
    }
    closedir (dir);
    return tasks;
}

//  The first number in a file, or -1.
static long
s_read_number (const char *path)
{
    FILE *file = fopen (path, "r");
    long value = -1;
    if (file) {
        if (fscanf (file, "%ld", &value) != 1)
            value = -1;
        fclose (file);
    }
    return value;
}

void
bn_climits_read (bn_climits_t *limits)
{
    assert (limits);
    *limits = (bn_climits_t){-1, 0, -1, 0, -1, -1, -1};
    struct rlimit limit;
    //  The kernel does not hold root to RLIMIT_NPROC
    if (getuid () != 0 && getrlimit (RLIMIT_NPROC, &limit) == 0 &&
        limit.rlim_cur != RLIM_INFINITY) {
        limits->tasks_limit = (long)limit.rlim_cur;
        limits->tasks_used = s_user_tasks (getuid ());
    }
    long threads = s_read_number ("/proc/sys/kernel/threads-max");
    long pids = s_read_number ("/proc/sys/kernel/pid_max");
    limits->machine_limit =
        threads > 0 && pids > 0 ? (threads < pids ? threads : pids) : -1;
    //  "0.10 0.20 0.30 RUNNING/TOTAL LAST": the host's tasks now
    FILE *file = fopen ("/proc/loadavg", "r");
    long running = 0, total = 0;
    if (file) {
        if (fscanf (file, "%*s %*s %*s %ld/%ld", &running, &total) == 2)
            limits->machine_used = total;
        fclose (file);
    }
    if (getrlimit (RLIMIT_NOFILE, &limit) == 0) {
        if (limit.rlim_cur != RLIM_INFINITY)
            limits->files_soft = (long)limit.rlim_cur;
        if (limit.rlim_max != RLIM_INFINITY)
            limits->files_hard = (long)limit.rlim_max;
    }
    file = fopen ("/proc/meminfo", "r");
    char line[256];
    while (file && fgets (line, sizeof line, file))
        if (strncmp (line, "MemAvailable:", 13) == 0) {
            long kib = strtol (line + 13, NULL, 10);
            limits->memory = kib > 0 ? kib * 1024 : -1;
        }
    if (file)
        fclose (file);
}

long
bn_climits_controller_files (long n)
{
    return n * S_CONTROLLER_FILES_PER_ENGINE + S_CONTROLLER_FILES;
}

typedef enum {
    S_LIMIT_NONE,
    S_LIMIT_TASKS,            //  the user's processes and threads
    S_LIMIT_MACHINE,          //  the host's
    S_LIMIT_CONTROLLER_FILES, //  the controller's open files
    S_LIMIT_ENGINE_FILES,     //  an engine process's open files
    S_LIMIT_MEMORY
} s_limit_t;

static long
s_processes (long n, long per_process)
{
    return (n + per_process - 1) / per_process;
}

static long
s_tasks (long n, long per_process)
{
    return s_processes (n, per_process) * S_THREADS_PER_PROCESS +
           S_CLUSTER_TASKS;
}

static long
s_memory (long n, long per_process)
{
    long reserved =
        per_process < S_RESERVED_HISTORIES ? per_process : S_RESERVED_HISTORIES;
    return s_processes (n, per_process) *
               (S_PROCESS_MEMORY + reserved * S_HISTORY_MEMORY) +
           n * S_ENGINE_MEMORY + S_CLUSTER_MEMORY;
}

static long
s_engine_files (long per_process)
{
    return per_process * S_ENGINE_FILES_PER_ENGINE + S_ENGINE_FILES;
}

//  The first limit that n engines, per_process a process, pass.
static s_limit_t
s_fits (const bn_climits_t *limits, long n, long per_process, bool local)
{
    if (limits->files_hard >= 0 &&
        bn_climits_controller_files (n) > limits->files_hard)
        return S_LIMIT_CONTROLLER_FILES;
    if (local && limits->tasks_limit >= 0 &&
        limits->tasks_used + s_tasks (n, per_process) > limits->tasks_limit)
        return S_LIMIT_TASKS;
    if (local && limits->machine_limit >= 0 &&
        limits->machine_used + s_tasks (n, per_process) > limits->machine_limit)
        return S_LIMIT_MACHINE;
    if (local && limits->files_hard >= 0 &&
        s_engine_files (per_process) > limits->files_hard)
        return S_LIMIT_ENGINE_FILES;
    if (local && limits->memory >= 0 &&
        s_memory (n, per_process) > limits->memory)
        return S_LIMIT_MEMORY;
    return S_LIMIT_NONE;
}

int
bn_climits_check (const bn_climits_t *limits, long n, int per_process,
                  bool local, char *error, size_t size)
{
    assert (limits);
    assert (error);
    if (per_process < 1)
        per_process = 1;
    s_limit_t limit =
        n > 0 ? s_fits (limits, n, per_process, local) : S_LIMIT_NONE;
    if (limit == S_LIMIT_NONE)
        return 0;
    long processes = s_processes (n, per_process);
    int used = 0;
    if (limit == S_LIMIT_TASKS)
        used = snprintf (error, size,
                         "-n %ld: %ld engine process%s and the cluster need "
                         "about %ld processes and threads of yours; %ld of "
                         "the %ld you may have (ulimit -u) run already",
                         n, processes, processes == 1 ? "" : "es",
                         s_tasks (n, per_process), limits->tasks_used,
                         limits->tasks_limit);
    else if (limit == S_LIMIT_MACHINE)
        used = snprintf (error, size,
                         "-n %ld: %ld engine process%s and the cluster need "
                         "about %ld processes and threads; this host runs "
                         "%ld of the %ld it can hold (kernel.threads-max, "
                         "kernel.pid_max)",
                         n, processes, processes == 1 ? "" : "es",
                         s_tasks (n, per_process), limits->machine_used,
                         limits->machine_limit);
    else if (limit == S_LIMIT_CONTROLLER_FILES)
        used =
            snprintf (error, size,
                      "the controller of %ld engines needs about %ld open "
                      "files, "
                      "more than the %ld a process may have here "
                      "(ulimit -Hn): raise that limit, or start fewer "
                      "engines",
                      n, bn_climits_controller_files (n), limits->files_hard);
    else if (limit == S_LIMIT_ENGINE_FILES)
        used = snprintf (error, size,
                         "--engines-per-process %d: a process of %d engine%s "
                         "needs about %ld open files, more than the %ld a "
                         "process may have here (ulimit -Hn)",
                         per_process, per_process, per_process == 1 ? "" : "s",
                         s_engine_files (per_process), limits->files_hard);
    else
        used = snprintf (error, size,
                         "-n %ld: %ld engine process%s and the controller "
                         "need about %ld MiB of memory; %ld MiB are "
                         "available",
                         n, processes, processes == 1 ? "" : "es",
                         s_memory (n, per_process) / S_MIB,
                         limits->memory / S_MIB);
    if (limit == S_LIMIT_CONTROLLER_FILES || used < 0 || (size_t)used >= size)
        return -1;
    //  More engines a process for fewer processes, fewer for fewer files
    long fit = 0;
    if (limit == S_LIMIT_ENGINE_FILES) {
        for (long k = per_process - 1; k >= 1 && !fit; k--)
            if (s_fits (limits, n, k, local) == S_LIMIT_NONE)
                fit = k;
    } else
        for (long k = per_process + 1; k <= n && !fit; k++)
            if (s_fits (limits, n, k, local) == S_LIMIT_NONE)
                fit = k;
    if (fit)
        snprintf (error + used, size - (size_t)used,
                  "; with --engines-per-process %ld (-k %ld) it fits in %ld "
                  "process%s",
                  fit, fit, s_processes (n, fit),
                  s_processes (n, fit) == 1 ? "" : "es");
    else
        snprintf (error + used, size - (size_t)used,
                  "; no --engines-per-process fits: start fewer engines");
    return -1;
}

void
bn_climits_raise_files (long files)
{
    struct rlimit limit;
    if (getrlimit (RLIMIT_NOFILE, &limit) != 0 ||
        limit.rlim_cur == RLIM_INFINITY || (long)limit.rlim_cur >= files)
        return;
    limit.rlim_cur =
        limit.rlim_max == RLIM_INFINITY || (long)limit.rlim_max > files
            ? (rlim_t)files
            : limit.rlim_max;
    setrlimit (RLIMIT_NOFILE, &limit);
}
