/*  bn_args: the small pieces of command-line handling the daemons'
    mains share (banyan-controller, banyan-scheduler, banyan-engine).  */
#ifndef BN_ARGS_H_INCLUDED
#define BN_ARGS_H_INCLUDED

#include <stdbool.h>

//  Print "program: message" and a pointer to --help on stderr; returns
//  the usage-error exit status, 2.
int bn_args_usage_error (const char *program, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

//  The value of flag when argv[*index] is "--flag=value" or "--flag value"
//  (then *index moves past the value); NULL when argv[*index] is not flag,
//  or when its value is missing (then *missing is set).
const char *bn_args_flag_value (int argc, char **argv, int *index,
                                const char *flag, bool *missing);

//  A whole number from 0 to max written in text; -1 if text is not one.
int bn_args_number (const char *text, int max);

#endif
