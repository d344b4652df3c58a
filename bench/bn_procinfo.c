/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_procinfo: a process's memory figures and open descriptors from
    /proc.  */
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
