/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_error: banyan's error codes, one table, negative values.  */
#ifndef BN_ERROR_H_INCLUDED
#define BN_ERROR_H_INCLUDED

#include <stddef.h>

//  X(name, value, text)
#define BN_ERRNO_MAP(X)                                                        \
    X (EINVAL, -1, "invalid argument")                                         \
    X (ENOMEM, -2, "out of memory")                                            \
    X (ETIMEDOUT, -3, "timed out")                                             \
    X (ECONNECT, -4, "cannot connect to the controller")                       \
    X (ENOCONTROLLER, -5, "controller is gone")                                \
    X (ENOENGINE, -6, "no such engine")                                        \
    X (EENGINEDIED, -7, "engine died")                                         \
    X (EREMOTE, -8, "remote error")                                            \
    X (EABORTED, -9, "task aborted")                                           \
    X (EPROTO, -10, "malformed message")                                       \
    X (ESIGNATURE, -11, "bad message signature")                               \
    X (EREPLAY, -12, "replayed message")                                       \
    X (ENOTSUP, -13, "not supported")                                          \
    X (ECONNFILE, -14, "bad connection file")                                  \
    X (ECONFIG, -15, "bad configuration")                                      \
    X (EPICKLE, -16, "cannot decode pickle")                                   \
    X (ENOTREADY, -17, "result not ready")                                     \
    X (EIO, -18, "input/output error")                                         \
    X (ENOENT, -19, "no such file or key")                                     \
    X (ECLOSED, -20, "closed")

typedef enum {
#define BN_ERR_ENUM(name, value, text) BN_##name = value,
    BN_ERRNO_MAP (BN_ERR_ENUM)
#undef BN_ERR_ENUM
} bn_error_t;

//  Text for an error code; "unknown error" for codes not in the table.
const char *bn_strerror (int code);

//  Write a printf-style message into a caller's error buffer (err may be
//  NULL or errsize 0, then nothing is written).
void bn_error_set (char *err, size_t errsize, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

//  Symbolic name for an error code ("BN_ETIMEDOUT"), or "BN_UNKNOWN".
const char *bn_err_name (int code);

#endif
