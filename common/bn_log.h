/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_log: level-gated logging with one ident per process or thread.  */
#ifndef BN_LOG_H_INCLUDED
#define BN_LOG_H_INCLUDED

#include <stdarg.h>

typedef enum {
    BN_LOG_ERROR = 0,
    BN_LOG_WARN = 1,
    BN_LOG_INFO = 2,
    BN_LOG_DEBUG = 3
} bn_log_level_t;

//  Set the process-wide level; messages above it are not formatted at all.
void bn_log_set_level (bn_log_level_t level);

//  Current process-wide level.
bn_log_level_t bn_log_level (void);

//  Parse "error", "warn", "info", "debug" (or 0-3); returns -1 if unknown.
int bn_log_level_parse (const char *name);

//  Name of a level ("error"...).
const char *bn_log_level_name (bn_log_level_t level);

//  Set the ident printed on every line of the calling thread
//  ("controller", "engine.7"); the default is the process-wide ident.
void bn_log_set_ident (const char *ident);

//  Set the process-wide ident.
void bn_log_set_default_ident (const char *ident);

//  Send log lines to this file (append) instead of stderr; NULL reverts.
//  Returns -1 if the file cannot be opened.
int bn_log_set_file (const char *path);

void bn_log_msg (bn_log_level_t level, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

#define bn_log_error(...) bn_log_msg (BN_LOG_ERROR, __VA_ARGS__)
#define bn_log_warn(...)                                                       \
    do {                                                                       \
        if (bn_log_level () >= BN_LOG_WARN)                                    \
            bn_log_msg (BN_LOG_WARN, __VA_ARGS__);                             \
    } while (0)
#define bn_log_info(...)                                                       \
    do {                                                                       \
        if (bn_log_level () >= BN_LOG_INFO)                                    \
            bn_log_msg (BN_LOG_INFO, __VA_ARGS__);                             \
    } while (0)
#define bn_log_debug(...)                                                      \
    do {                                                                       \
        if (bn_log_level () >= BN_LOG_DEBUG)                                   \
            bn_log_msg (BN_LOG_DEBUG, __VA_ARGS__);                            \
    } while (0)

#endif
