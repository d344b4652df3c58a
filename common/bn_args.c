/*  bn_args: command-line pieces the daemons' mains share.  */
#include "bn_args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
bn_args_usage_error (const char *program, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    fprintf (stderr, "%s: ", program);
    vfprintf (stderr, format, args);
    va_end (args);
    fprintf (stderr, "\nTry '%s --help' for more information.\n", program);
    return 2;
}

const char *
bn_args_flag_value (int argc, char **argv, int *index, const char *flag,
                    bool *missing)
{
    const char *arg = argv[*index];
    size_t len = strlen (flag);
    if (strncmp (arg, flag, len) != 0)
        return NULL;
    if (arg[len] == '=')
        return arg + len + 1;
    if (arg[len] != 0)
        return NULL;
    if (*index + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*index];
}

int
bn_args_number (const char *text, int max)
{
    char *end;
    errno = 0;
    long value = strtol (text, &end, 10);
    if (errno || end == text || *end || value < 0 || value > max)
        return -1;
    return (int)value;
}
