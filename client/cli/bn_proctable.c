/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_proctable: a snapshot of this host's processes, read from /proc.  */
#include "bn_proctable.h"

#include <assert.h>
#include <ctype.h>
#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct _bn_proctable_t {
    bn_procinfo_t *procs; //  Sorted by pid
    size_t size;
    size_t alloc;
};

//  Parse the text of /proc/<pid>/stat. The executable name sits in
//  parentheses and may itself hold spaces and parentheses, so the fields
//  after it are found from the last ')'.
static int
s_parse_stat (const char *text, bn_procinfo_t *info)
{
    const char *open = strchr (text, '(');
    const char *close = strrchr (text, ')');
    if (!open || !close || close < open)
        return -1;
    memset (info, 0, sizeof *info);
    info->pid = (pid_t)strtol (text, NULL, 10);
    size_t length = (size_t)(close - open - 1);
    if (length >= sizeof info->comm)
        length = sizeof info->comm - 1;
    memcpy (info->comm, open + 1, length);
    info->comm[length] = 0;

    //  Fields 3 (state) to 22 (starttime), counted as in proc(5)
    const char *cursor = close + 1;
    long long fields[23] = {0};
    for (int field = 3; field <= 22; field++) {
        while (*cursor == ' ')
            cursor++;
        if (!*cursor)
            return -1;
        if (field == 3)
            info->state = *cursor++;
        else {
            char *end;
            fields[field] = strtoll (cursor, &end, 10);
            if (end == cursor)
                return -1;
            cursor = end;
        }
        while (*cursor && *cursor != ' ')
            cursor++;
    }
    info->ppid = (pid_t)fields[4];
    info->pgrp = (pid_t)fields[5];
    info->sid = (pid_t)fields[6];
    info->starttime = (unsigned long long)fields[22];
    //  Field 52 (exit_code, Linux 3.5 on), after 29 more numbers
    info->exit_code = -1;
    int field = 23;
    while (field <= 52) {
        while (*cursor == ' ')
            cursor++;
        char *end;
        long long value = strtoll (cursor, &end, 10);
        if (end == cursor)
            break;
        if (field == 52)
            info->exit_code = (int)value;
        cursor = end;
        field++;
    }
    return info->pid > 0 ? 0 : -1;
}

int
bn_proctable_stat (pid_t pid, bn_procinfo_t *info)
{
    assert (info);
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *file = fopen (path, "r");
    if (!file)
        return -1;
    char text[1024];
    size_t size = fread (text, 1, sizeof text - 1, file);
    fclose (file);
    text[size] = 0;
    return s_parse_stat (text, info);
}

bool
bn_proctable_alive (pid_t pid, unsigned long long starttime)
{
    bn_procinfo_t info;
    if (pid <= 0 || bn_proctable_stat (pid, &info) != 0)
        return false;
    if (info.state == 'Z' || info.state == 'X' || info.state == 'x')
        return false;
    return starttime == 0 || info.starttime == starttime;
}

static int
s_compare_pid (const void *a, const void *b)
{
    pid_t left = ((const bn_procinfo_t *)a)->pid;
    pid_t right = ((const bn_procinfo_t *)b)->pid;
    return (left > right) - (left < right);
}

void
bn_proctable_describe_status (int status, char *text, size_t size)
{
    if (WIFEXITED (status))
        snprintf (text, size, "exited with status %d", WEXITSTATUS (status));
    else if (WIFSIGNALED (status))
        snprintf (text, size, "killed by signal %d (%s)", WTERMSIG (status),
                  strsignal (WTERMSIG (status)));
    else
        snprintf (text, size, "ended with wait status %d", status);
}

bn_proctable_t *
bn_proctable_new (void)
{
    DIR *dir = opendir ("/proc");
    if (!dir)
        return NULL;
    bn_proctable_t *self = calloc (1, sizeof *self);
    if (!self) {
        closedir (dir);
        return NULL;
    }
    struct dirent *entry;
    while ((entry = readdir (dir))) {
        if (!isdigit ((unsigned char)entry->d_name[0]))
            continue;
        bn_procinfo_t info;
        //  A process may end between readdir and the read: skip it
        if (bn_proctable_stat ((pid_t)atoi (entry->d_name), &info) != 0)
            continue;
        if (self->size == self->alloc) {
            size_t alloc = self->alloc ? self->alloc * 2 : 256;
            bn_procinfo_t *procs = realloc (self->procs, alloc * sizeof *procs);
            if (!procs) {
                closedir (dir);
                bn_proctable_destroy (&self);
                return NULL;
            }
            self->procs = procs;
            self->alloc = alloc;
        }
        self->procs[self->size++] = info;
    }
    closedir (dir);
    if (self->size)
        qsort (self->procs, self->size, sizeof *self->procs, s_compare_pid);
    return self;
}

void
bn_proctable_destroy (bn_proctable_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        free ((*self_p)->procs);
        free (*self_p);
        *self_p = NULL;
    }
}

size_t
bn_proctable_size (bn_proctable_t *self)
{
    assert (self);
    return self->size;
}

const bn_procinfo_t *
bn_proctable_find (bn_proctable_t *self, pid_t pid)
{
    assert (self);
    bn_procinfo_t key = {.pid = pid};
    if (!self->size)
        return NULL;
    return bsearch (&key, self->procs, self->size, sizeof *self->procs,
                    s_compare_pid);
}

int
bn_proctable_collect (bn_proctable_t *self, pid_t pgid, const pid_t *roots,
                      size_t nroots, pid_t **pids_p)
{
    assert (self);
    assert (pids_p);
    bool *in = calloc (self->size + 1, sizeof *in);
    if (!in)
        return -1;
    for (size_t index = 0; index < self->size; index++) {
        const bn_procinfo_t *proc = &self->procs[index];
        if (pgid > 0 && proc->pgrp == pgid)
            in[index] = true;
    }
    for (size_t root = 0; root < nroots; root++) {
        const bn_procinfo_t *proc = bn_proctable_find (self, roots[root]);
        if (proc)
            in[proc - self->procs] = true;
    }
    //  Descent: add children of members until nothing changes; each pass
    //  reaches one generation further down.
    bool changed = true;
    while (changed) {
        changed = false;
        for (size_t index = 0; index < self->size; index++) {
            if (in[index])
                continue;
            const bn_procinfo_t *parent =
                bn_proctable_find (self, self->procs[index].ppid);
            if (parent && in[parent - self->procs]) {
                in[index] = true;
                changed = true;
            }
        }
    }
    pid_t *pids = malloc ((self->size + 1) * sizeof *pids);
    if (!pids) {
        free (in);
        return -1;
    }
    int count = 0;
    pid_t me = getpid ();
    for (size_t index = 0; index < self->size; index++) {
        const bn_procinfo_t *proc = &self->procs[index];
        if (in[index] && proc->pid != me && proc->state != 'Z' &&
            proc->state != 'X')
            pids[count++] = proc->pid;
    }
    free (in);
    *pids_p = pids;
    return count;
}

//  A process met while terminating: its start time tells it from a later
//  process that got the same pid.
typedef struct {
    pid_t pid;
    unsigned long long starttime;
    bool killed; //  Got SIGKILL
} s_victim_t;

typedef struct {
    s_victim_t *items;
    size_t size;
    size_t alloc;
} s_victims_t;

static s_victim_t *
s_victims_find (s_victims_t *victims, pid_t pid, unsigned long long starttime)
{
    for (size_t index = 0; index < victims->size; index++)
        if (victims->items[index].pid == pid &&
            victims->items[index].starttime == starttime)
            return &victims->items[index];
    return NULL;
}

//  Add every process of the tree not seen yet and send it sig (unless 0).
//  Returns the number added, or -1 if out of memory.
static int
s_victims_gather (s_victims_t *victims, pid_t pgid, const pid_t *roots,
                  size_t nroots, int sig)
{
    bn_proctable_t *table = bn_proctable_new ();
    if (!table)
        return -1;
    //  Roots are the given ones and every victim still alive, so that the
    //  descendants of a process that left the group are still found
    size_t count = nroots + victims->size;
    pid_t *all = malloc ((count + 1) * sizeof *all);
    pid_t *pids = NULL;
    int found = -1;
    if (all) {
        memcpy (all, roots, nroots * sizeof *roots);
        for (size_t index = 0; index < victims->size; index++)
            all[nroots + index] = victims->items[index].pid;
        found = bn_proctable_collect (table, pgid, all, count, &pids);
    }
    int added = found < 0 ? -1 : 0;
    for (int index = 0; index < found; index++) {
        const bn_procinfo_t *proc = bn_proctable_find (table, pids[index]);
        if (!proc || s_victims_find (victims, proc->pid, proc->starttime))
            continue;
        if (victims->size == victims->alloc) {
            size_t alloc = victims->alloc ? victims->alloc * 2 : 64;
            s_victim_t *items = realloc (victims->items, alloc * sizeof *items);
            if (!items) {
                added = -1;
                break;
            }
            victims->items = items;
            victims->alloc = alloc;
        }
        victims->items[victims->size++] =
            (s_victim_t){proc->pid, proc->starttime, false};
        if (sig)
            kill (proc->pid, sig);
        added++;
    }
    free (all);
    free (pids);
    bn_proctable_destroy (&table);
    return added;
}

static void
s_reap (bn_proctable_reap_fn *on_reap, void *arg)
{
    int status;
    pid_t pid;
    while ((pid = waitpid (-1, &status, WNOHANG)) > 0)
        if (on_reap)
            on_reap (pid, status, arg);
}

int
bn_proctable_terminate (pid_t pgid, const pid_t *roots, size_t nroots, int sig,
                        double grace, double kill_wait,
                        bn_proctable_reap_fn *on_reap, void *arg)
{
    s_victims_t victims = {NULL, 0, 0};
    double start = zclock_usecs () / 1e6;
    bool killing = false;
    int rc = 0;
    while (true) {
        s_reap (on_reap, arg);
        if (s_victims_gather (&victims, pgid, roots, nroots,
                              killing ? SIGKILL : sig) < 0) {
            rc = -1;
            break;
        }
        size_t alive = 0;
        for (size_t index = 0; index < victims.size; index++) {
            s_victim_t *victim = &victims.items[index];
            if (!bn_proctable_alive (victim->pid, victim->starttime))
                continue;
            alive++;
            if (killing && !victim->killed) {
                kill (victim->pid, SIGKILL);
                victim->killed = true;
            }
        }
        if (alive == 0)
            break;
        double elapsed = zclock_usecs () / 1e6 - start;
        if (!killing && elapsed >= grace)
            killing = true;
        else if (killing && elapsed >= grace + kill_wait) {
            rc = -1;
            break;
        } else
            usleep (20000);
    }
    s_reap (on_reap, arg);
    if (rc == 0)
        rc = (int)victims.size;
    free (victims.items);
    return rc;
}
