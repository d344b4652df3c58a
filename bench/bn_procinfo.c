/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_procinfo: a process's memory figures and open descriptors from
    /proc, the largest peak among a parent's children, and resetting a
    peak.  */
#include "bn_procinfo.h"

#include <assert.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long
bn_procinfo_status_kb (pid_t pid, const char *field)
{
    assert (field);
    char path[64], line[256];
    snprintf (path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *file = fopen (path, "r");
    if (!file)
        return -1;
    size_t length = strlen (field);
    long kb = -1;
    while (fgets (line, sizeof line, file))
        if (strncmp (line, field, length) == 0 && line[length] == ':')
            kb = atol (line + length + 1);
    fclose (file);
    return kb;
}

double
bn_procinfo_peak (pid_t pid)
{
    long kb = bn_procinfo_status_kb (pid, "VmHWM");
    return kb < 0 ? -1 : kb * 1024.0;
}

int
bn_procinfo_fds (pid_t pid)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *dir = opendir (path);
    if (!dir)
        return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir (dir)))
        count += entry->d_name[0] != '.';
    closedir (dir);
    //  the descriptor opendir held is not the process's own
    if (pid == getpid ())
        count--;
    return count;
}

//  The largest peak resident size among the processes running program
//  whose parent is parent; -1 if there are none.
double
bn_procinfo_largest_child (pid_t parent, const char *program)
{
    DIR *proc = opendir ("/proc");
    struct dirent *entry;
    double largest = -1;
    while (proc && (entry = readdir (proc))) {
        pid_t pid = (pid_t)atoi (entry->d_name);
        if (pid <= 0)
            continue;
        char path[64], stat[512];
        snprintf (path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *file = fopen (path, "r");
        if (!file)
            continue;
        size_t size = fread (stat, 1, sizeof stat - 1, file);
        fclose (file);
        stat[size] = 0;
        //  pid (comm) state ppid ...: comm is cut to 15 characters
        char *close = strrchr (stat, ')');
        char *open = strchr (stat, '(');
        if (!open || !close || close < open)
            continue;
        char comm[16];
        size_t length = (size_t)(close - open - 1);
        snprintf (comm, sizeof comm, "%.*s", (int)(length < 15 ? length : 15),
                  open + 1);
        char wanted[16];
        snprintf (wanted, sizeof wanted, "%.15s", program); //  comm is cut
        int ppid = 0;
        if (sscanf (close + 2, "%*c %d", &ppid) != 1 || ppid != parent ||
            strcmp (comm, wanted) != 0)
            continue;
        double bytes = bn_procinfo_peak (pid);
        if (bytes > largest)
            largest = bytes;
    }
    if (proc)
        closedir (proc);
    return largest;
}

int
bn_procinfo_reset_peak (pid_t pid)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/clear_refs", (int)pid);
    FILE *file = fopen (path, "w");
    if (!file)
        return -1;
    //  5: reset the peak resident size to the present one
    int rc = fputs ("5", file) < 0 ? -1 : 0;
    if (fclose (file) != 0)
        rc = -1;
    return rc;
}
