/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_launchwatch: a launch program's per-host processes, from /proc.  */
#include "bn_launchwatch.h"
#include "bn_proctable.h"

#include <assert.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  One child of the launch program.
typedef struct {
    pid_t pid;
    unsigned long long starttime;
    char comm[16];
    int rank;   //  The host it serves, -1 until known
    bool ended; //  A zombie, or gone
    bool told;  //  bn_launchwatch_ended gave it
    int status; //  Its wait status once ended, -1 if unknown
} s_child_t;

struct _bn_launchwatch_t {
    pid_t pid;
    char comm[16]; //  The launch program's name, "" until read
    zlist_t *hosts;
    int count;
    bool *taken; //  Ranks a child serves
    s_child_t *children;
    size_t size;
    size_t alloc;
};

bn_launchwatch_t *
bn_launchwatch_new (pid_t pid, zlist_t *hosts, int count)
{
    bn_launchwatch_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->pid = pid;
    self->hosts = hosts;
    self->count = count > 0 ? count : 0;
    self->taken = calloc ((size_t)self->count + 1, sizeof *self->taken);
    if (!self->taken)
        bn_launchwatch_destroy (&self);
    return self;
}

void
bn_launchwatch_destroy (bn_launchwatch_t **self_p)
{
    assert (self_p);
    bn_launchwatch_t *self = *self_p;
    if (self) {
        free (self->taken);
        free (self->children);
        free (self);
        *self_p = NULL;
    }
}

static s_child_t *
s_find (bn_launchwatch_t *self, pid_t pid)
{
    for (size_t index = 0; index < self->size; index++)
        if (self->children[index].pid == pid)
            return &self->children[index];
    return NULL;
}

//  The rank of the first host not yet taken that an argument of pid's
//  command line names (as HOST or USER@HOST), or -1.
static int
s_rank_named (bn_launchwatch_t *self, pid_t pid)
{
    if (!self->hosts)
        return -1;
    char path[64], text[4096];
    snprintf (path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *file = fopen (path, "r");
    if (!file)
        return -1;
    size_t size = fread (text, 1, sizeof text - 1, file);
    fclose (file);
    text[size] = 0;
    for (size_t at = 0; at < size; at += strlen (text + at) + 1) {
        const char *arg = text + at;
        const char *at_sign = strrchr (arg, '@');
        int rank = 0;
        for (const char *name = zlist_first (self->hosts);
             name && rank < self->count;
             name = zlist_next (self->hosts), rank++)
            if (!self->taken[rank] &&
                (strcmp (arg, name) == 0 ||
                 (at_sign && strcmp (at_sign + 1, name) == 0)))
                return rank;
    }
    return -1;
}

static void
s_add (bn_launchwatch_t *self, pid_t pid)
{
    bn_procinfo_t info;
    if (s_find (self, pid) || bn_proctable_stat (pid, &info) != 0)
        return;
    //  Forked but not yet the program it runs: a copy of the launch
    //  program, whose arguments (-hosts h1) say nothing of the host; it
    //  is looked at again next time, unless it ended so
    if (strcmp (info.comm, self->comm) == 0 && info.state != 'Z' &&
        info.state != 'X')
        return;
    if (self->size == self->alloc) {
        size_t alloc = self->alloc ? self->alloc * 2 : 16;
        s_child_t *grown = realloc (self->children, alloc * sizeof *grown);
        if (!grown)
            return;
        self->children = grown;
        self->alloc = alloc;
    }
    s_child_t *child = &self->children[self->size++];
    *child = (s_child_t){.pid = pid,
                         .starttime = info.starttime,
                         .rank = s_rank_named (self, pid),
                         .status = -1};
    snprintf (child->comm, sizeof child->comm, "%s", info.comm);
    if (child->rank >= 0)
        self->taken[child->rank] = true;
}

//  Add the children the launch program has now (each of its threads
//  lists its own).
static void
s_read_children (bn_launchwatch_t *self)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/task", (int)self->pid);
    DIR *dir = opendir (path);
    struct dirent *entry;
    while (dir && (entry = readdir (dir))) {
        if (entry->d_name[0] == '.')
            continue;
        char file[96];
        snprintf (file, sizeof file, "/proc/%d/task/%.24s/children",
                  (int)self->pid, entry->d_name);
        FILE *in = fopen (file, "r");
        int pid;
        while (in && fscanf (in, "%d", &pid) == 1)
            s_add (self, (pid_t)pid);
        if (in)
            fclose (in);
    }
    if (dir)
        closedir (dir);
}

static int
s_compare_start (const void *a, const void *b)
{
    const s_child_t *left = *(const s_child_t *const *)a;
    const s_child_t *right = *(const s_child_t *const *)b;
    if (left->starttime != right->starttime)
        return left->starttime < right->starttime ? -1 : 1;
    return (left->pid > right->pid) - (left->pid < right->pid);
}

//  Once there is a child for every host, the children no argument named
//  take the hosts left, in the order they were started (one for each).
static void
s_assign_in_order (bn_launchwatch_t *self)
{
    size_t unnamed = 0, left = 0;
    for (size_t index = 0; index < self->size; index++)
        unnamed += self->children[index].rank < 0;
    for (int rank = 0; rank < self->count; rank++)
        left += !self->taken[rank];
    if (!unnamed || unnamed != left || self->size != (size_t)self->count)
        return;
    s_child_t **order = calloc (unnamed, sizeof *order);
    if (!order)
        return;
    size_t used = 0;
    for (size_t index = 0; index < self->size; index++)
        if (self->children[index].rank < 0)
            order[used++] = &self->children[index];
    qsort (order, used, sizeof *order, s_compare_start);
    int rank = 0;
    for (size_t index = 0; index < used; index++) {
        while (self->taken[rank])
            rank++;
        order[index]->rank = rank;
        self->taken[rank] = true;
    }
    free (order);
}

void
bn_launchwatch_update (bn_launchwatch_t *self)
{
    assert (self);
    bn_procinfo_t info;
    if (!*self->comm && bn_proctable_stat (self->pid, &info) == 0)
        snprintf (self->comm, sizeof self->comm, "%s", info.comm);
    if (*self->comm)
        s_read_children (self);
    s_assign_in_order (self);
    for (size_t index = 0; index < self->size; index++) {
        s_child_t *child = &self->children[index];
        if (child->ended)
            continue;
        if (bn_proctable_stat (child->pid, &info) != 0 ||
            info.starttime != child->starttime)
            child->ended = true;
        else if (info.state == 'Z' || info.state == 'X') {
            child->ended = true;
            child->status = info.exit_code;
        }
    }
}

bool
bn_launchwatch_ended (bn_launchwatch_t *self, bn_launchwatch_end_t *end)
{
    assert (self);
    assert (end);
    for (size_t index = 0; index < self->size; index++) {
        s_child_t *child = &self->children[index];
        if (!child->ended || child->told || child->rank < 0)
            continue;
        child->told = true;
        *end = (bn_launchwatch_end_t){
            .rank = child->rank, .pid = child->pid, .status = child->status};
        snprintf (end->comm, sizeof end->comm, "%s", child->comm);
        return true;
    }
    return false;
}
