/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_log: level-gated logging with one ident per process or thread.  */
#include "bn_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_int s_level = BN_LOG_WARN;
static char s_default_ident[64] = "banyan";
static _Thread_local char s_ident[64];
static FILE *s_file;
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *s_names[] = {"error", "warn", "info", "debug"};

void
bn_log_set_level (bn_log_level_t level)
{
    atomic_store (&s_level, level);
}

bn_log_level_t
bn_log_level (void)
{
    return (bn_log_level_t)atomic_load (&s_level);
}

int
bn_log_level_parse (const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp (name, s_names[i]) == 0)
            return i;
    if (strcasecmp (name, "warning") == 0)
        return BN_LOG_WARN;
    if (name[0] >= '0' && name[0] <= '3' && name[1] == 0)
        return name[0] - '0';
    return -1;
}

const char *
bn_log_level_name (bn_log_level_t level)
{
    return level <= BN_LOG_DEBUG ? s_names[level] : "?";
}

void
bn_log_set_ident (const char *ident)
{
    snprintf (s_ident, sizeof s_ident, "%s", ident ? ident : "");
}

void
bn_log_set_default_ident (const char *ident)
{
    pthread_mutex_lock (&s_lock);
    snprintf (s_default_ident, sizeof s_default_ident, "%s", ident);
    pthread_mutex_unlock (&s_lock);
}

int
bn_log_set_file (const char *path)
{
    FILE *file = NULL;
    if (path) {
        file = fopen (path, "a");
        if (!file)
            return -1;
        setvbuf (file, NULL, _IOLBF, 0);
    }
    pthread_mutex_lock (&s_lock);
    if (s_file)
        fclose (s_file);
    s_file = file;
    pthread_mutex_unlock (&s_lock);
    return 0;
}

void
bn_log_msg (bn_log_level_t level, const char *format, ...)
{
    if ((int)level > atomic_load (&s_level))
        return;
    char text[1024];
    va_list args;
    va_start (args, format);
    vsnprintf (text, sizeof text, format, args);
    va_end (args);

    struct timeval tv;
    gettimeofday (&tv, NULL);
    struct tm tm;
    localtime_r (&tv.tv_sec, &tm);
    char stamp[32];
    strftime (stamp, sizeof stamp, "%H:%M:%S", &tm);

    pthread_mutex_lock (&s_lock);
    FILE *out = s_file ? s_file : stderr;
    fprintf (out, "%s.%03d %s[%d] %s: %s\n", stamp, (int)(tv.tv_usec / 1000),
             s_ident[0] ? s_ident : s_default_ident, (int)getpid (),
             s_names[level], text);
    pthread_mutex_unlock (&s_lock);
}
