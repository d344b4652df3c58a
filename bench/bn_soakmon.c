/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_soakmon: sample the RSS (VmRSS) and open descriptors (/proc/PID/fd)
    of a cluster's processes, and report their growth after warm-up.  */
#include "bn_soakmon.h"
#include "bn_procinfo.h"

#include <assert.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    double seconds; //  when, since the soak began
    long rss_kb;    //  VmRSS
    int fds;        //  entries of /proc/PID/fd
} s_sample_t;

typedef struct {
    pid_t pid;
    unsigned long long start; //  start time (clock ticks): pids are reused
    char name[64];            //  argv[0]'s base name
    bool client;              //  this process
    s_sample_t *samples;
    size_t count, size;
} s_proc_t;

struct _bn_soakmon_t {
    pid_t pgid;      //  the cluster's process group
    bool self_too;   //  sample this process as well
    s_proc_t *procs; //  every process ever seen
    size_t count, size;
    double rss_growth; //  largest judged growth of the last report
    double fd_growth;
};

bn_soakmon_t *
bn_soakmon_new (pid_t pgid, bool self_too)
{
    bn_soakmon_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->pgid = pgid;
    self->self_too = self_too;
    return self;
}

void
bn_soakmon_destroy (bn_soakmon_t **self_p)
{
    assert (self_p);
    bn_soakmon_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++)
        free (self->procs[i].samples);
    free (self->procs);
    free (self);
    *self_p = NULL;
}

//  Read /proc/PID/stat: its name (comm), process group and start time.
//  Returns 0, or -1 if the process is gone.
static int
s_read_stat (pid_t pid, char *comm, size_t comm_size, pid_t *pgid,
             unsigned long long *start)
{
    char path[64], stat[1024];
    snprintf (path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *file = fopen (path, "r");
    if (!file)
        return -1;
    size_t size = fread (stat, 1, sizeof stat - 1, file);
    fclose (file);
    stat[size] = 0;
    //  pid (comm) state ppid pgrp session tty_nr tpgid flags minflt
    //  cminflt majflt cmajflt utime stime cutime cstime priority nice
    //  num_threads itrealvalue starttime
    char *open = strchr (stat, '(');
    char *close = strrchr (stat, ')');
    if (!open || !close || close < open)
        return -1;
    snprintf (comm, comm_size, "%.*s", (int)(close - open - 1), open + 1);
    int group = 0;
    if (sscanf (close + 2,
                "%*c %*d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                "%*d %*d %*d %*d %llu",
                &group, start) != 2)
        return -1;
    *pgid = (pid_t)group;
    return 0;
}

//  argv[0]'s base name of pid into name; comm if it cannot be read.
static void
s_read_name (pid_t pid, const char *comm, char *name, size_t size)
{
    char path[64], cmdline[512];
    snprintf (path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *file = fopen (path, "r");
    size_t got = file ? fread (cmdline, 1, sizeof cmdline - 1, file) : 0;
    if (file)
        fclose (file);
    cmdline[got] = 0;
    const char *base = strrchr (cmdline, '/');
    base = base ? base + 1 : cmdline;
    //  (a longer name is cut: it only labels the process in the table)
    if (snprintf (name, size, "%s", *base ? base : comm) >= (int)size)
        name[size - 1] = 0;
}

//  VmRSS in kB and the open descriptors of pid; -1 if it is gone.
static int
s_read_usage (pid_t pid, long *rss_kb, int *fds)
{
    *rss_kb = bn_procinfo_status_kb (pid, "VmRSS");
    *fds = bn_procinfo_fds (pid);
    return *rss_kb < 0 || *fds < 0 ? -1 : 0;
}

static s_proc_t *
s_find (bn_soakmon_t *self, pid_t pid, unsigned long long start)
{
    for (size_t i = 0; i < self->count; i++)
        if (self->procs[i].pid == pid && self->procs[i].start == start)
            return &self->procs[i];
    if (self->count == self->size) {
        size_t size = self->size ? self->size * 2 : 16;
        s_proc_t *procs = realloc (self->procs, size * sizeof *procs);
        if (!procs)
            return NULL;
        self->procs = procs;
        self->size = size;
    }
    s_proc_t *proc = &self->procs[self->count++];
    memset (proc, 0, sizeof *proc);
    proc->pid = pid;
    proc->start = start;
    return proc;
}

static void
s_add_sample (s_proc_t *proc, double seconds, long rss_kb, int fds)
{
    if (proc->count == proc->size) {
        size_t size = proc->size ? proc->size * 2 : 64;
        s_sample_t *samples = realloc (proc->samples, size * sizeof *samples);
        if (!samples)
            return;
        proc->samples = samples;
        proc->size = size;
    }
    proc->samples[proc->count++] =
        (s_sample_t){.seconds = seconds, .rss_kb = rss_kb, .fds = fds};
}

static void
s_sample_one (bn_soakmon_t *self, pid_t pid, bool client, double seconds)
{
    char comm[64];
    pid_t pgid;
    unsigned long long start;
    if (s_read_stat (pid, comm, sizeof comm, &pgid, &start) != 0)
        return;
    if (!client && (pgid != self->pgid || strncmp (comm, "banyan-", 7) != 0 ||
                    strcmp (comm, "banyan-bench") == 0))
        return;
    long rss_kb;
    int fds;
    if (s_read_usage (pid, &rss_kb, &fds) != 0)
        return;
    s_proc_t *proc = s_find (self, pid, start);
    if (!proc)
        return;
    if (!proc->count) {
        proc->client = client;
        if (client)
            snprintf (proc->name, sizeof proc->name, "client");
        else
            s_read_name (pid, comm, proc->name, sizeof proc->name);
    }
    s_add_sample (proc, seconds, rss_kb, fds);
}

void
bn_soakmon_sample (bn_soakmon_t *self, double seconds)
{
    assert (self);
    DIR *proc = self->pgid > 0 ? opendir ("/proc") : NULL;
    struct dirent *entry;
    while (proc && (entry = readdir (proc))) {
        pid_t pid = (pid_t)atoi (entry->d_name);
        if (pid > 0 && pid != getpid ())
            s_sample_one (self, pid, false, seconds);
    }
    if (proc)
        closedir (proc);
    if (self->self_too)
        s_sample_one (self, getpid (), true, seconds);
}

static int
s_compare_long (const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

//  The floor of proc's RSS and descriptors in [from, to]: the 10th
//  percentile of its samples there. A leak raises it; what the process
//  holds for a while and lets go does not: a 10 MB payload an engine keeps
//  until its next push (the RSS of an engine process is 19 or 28 MB, in
//  runs of minutes, the higher in 36-45 % of the samples, so that a
//  median flips between the two), the records of a controller's window,
//  a connection. Returns false if there are none.
static bool
s_floor (s_proc_t *proc, double from, double to, long *rss_kb, int *fds)
{
    long *rss = malloc ((proc->count + 1) * sizeof *rss);
    long *open = malloc ((proc->count + 1) * sizeof *open);
    size_t count = 0;
    for (size_t i = 0; rss && open && i < proc->count; i++) {
        s_sample_t *sample = &proc->samples[i];
        if (sample->seconds >= from && sample->seconds <= to) {
            rss[count] = sample->rss_kb;
            open[count++] = sample->fds;
        }
    }
    if (count) {
        qsort (rss, count, sizeof *rss, s_compare_long);
        qsort (open, count, sizeof *open, s_compare_long);
        *rss_kb = rss[count / 10];
        *fds = (int)open[count / 10];
    }
    free (rss);
    free (open);
    return count > 0;
}

static double
s_growth (double before, double after)
{
    return before > 0 ? after / before - 1 : 0;
}

int
bn_soakmon_report (bn_soakmon_t *self, const char *title, double warm_up,
                   double window, double max_growth, FILE *out)
{
    assert (self);
    double last = 0;
    for (size_t i = 0; i < self->count; i++)
        if (self->procs[i].count &&
            self->procs[i].samples[self->procs[i].count - 1].seconds > last)
            last = self->procs[i].samples[self->procs[i].count - 1].seconds;
    fprintf (out,
             "%s: RSS (MiB) and open descriptors, the floor (10th "
             "percentile) of the samples in %.0f-%.0f s (after warm-up) and "
             "in %.0f-%.0f s (end)\n",
             title, warm_up, warm_up + window, last - window, last);
    fprintf (out, "  %-8s %-18s %9s %9s %9s %7s   %5s %5s %5s %7s\n", "pid",
             "process", "rss start", "warm", "end", "growth", "fds", "warm",
             "end", "growth");
    int failed = 0;
    size_t transient = 0;
    long transient_rss = 0;
    int transient_fds = 0;
    self->rss_growth = 0;
    self->fd_growth = 0;
    for (size_t i = 0; i < self->count; i++) {
        s_proc_t *proc = &self->procs[i];
        if (!proc->count)
            continue;
        s_sample_t *first = &proc->samples[0];
        s_sample_t *final = &proc->samples[proc->count - 1];
        long warm_rss, end_rss;
        int warm_fds, end_fds;
        bool lived =
            first->seconds <= warm_up && final->seconds >= last &&
            s_floor (proc, warm_up, warm_up + window, &warm_rss, &warm_fds) &&
            s_floor (proc, last - window, last, &end_rss, &end_fds);
        if (!lived) {
            //  engines that joined and died during the soak
            transient++;
            for (size_t k = 0; k < proc->count; k++) {
                if (proc->samples[k].rss_kb > transient_rss)
                    transient_rss = proc->samples[k].rss_kb;
                if (proc->samples[k].fds > transient_fds)
                    transient_fds = proc->samples[k].fds;
            }
            continue;
        }
        double rss_growth = s_growth ((double)warm_rss, (double)end_rss);
        double fd_growth = s_growth (warm_fds, end_fds);
        bool bad = !proc->client &&
                   (rss_growth > max_growth || fd_growth > max_growth);
        if (!proc->client) {
            if (rss_growth > self->rss_growth)
                self->rss_growth = rss_growth;
            if (fd_growth > self->fd_growth)
                self->fd_growth = fd_growth;
        }
        failed += bad;
        fprintf (out,
                 "  %-8d %-18.18s %9.1f %9.1f %9.1f %+6.1f%%   %5d %5d %5d "
                 "%+6.1f%%%s\n",
                 (int)proc->pid, proc->name, first->rss_kb / 1024.0,
                 warm_rss / 1024.0, end_rss / 1024.0, rss_growth * 100,
                 first->fds, warm_fds, end_fds, fd_growth * 100,
                 proc->client ? "  (not judged)"
                 : bad        ? "  GREW"
                              : "");
    }
    if (transient)
        fprintf (out,
                 "  %zu processes came and went (engines joining and dying): "
                 "at most %.1f MiB and %d descriptors each\n",
                 transient, transient_rss / 1024.0, transient_fds);
    return failed;
}

int
bn_soakmon_save (bn_soakmon_t *self, const char *path)
{
    assert (self);
    FILE *file = fopen (path, "w");
    if (!file)
        return -1;
    fprintf (file, "seconds,pid,process,rss_kb,fds\n");
    for (size_t i = 0; i < self->count; i++)
        for (size_t k = 0; k < self->procs[i].count; k++)
            fprintf (file, "%.1f,%d,%s,%ld,%d\n",
                     self->procs[i].samples[k].seconds, (int)self->procs[i].pid,
                     self->procs[i].name, self->procs[i].samples[k].rss_kb,
                     self->procs[i].samples[k].fds);
    return fclose (file) == 0 ? 0 : -1;
}

double
bn_soakmon_rss_growth (bn_soakmon_t *self)
{
    return self->rss_growth;
}

double
bn_soakmon_fd_growth (bn_soakmon_t *self)
{
    return self->fd_growth;
}
