/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_error: text and names for banyan's error codes.  */
#include "bn_error.h"

#include <stdarg.h>
#include <stdio.h>

const char *
bn_strerror (int code)
{
    switch (code) {
    case 0:
        return "success";
#define BN_ERR_TEXT(name, value, text)                                         \
    case value:                                                                \
        return text;
        BN_ERRNO_MAP (BN_ERR_TEXT)
#undef BN_ERR_TEXT
    }
    return "unknown error";
}

const char *
bn_err_name (int code)
{
    switch (code) {
#define BN_ERR_NAME(name, value, text)                                         \
    case value:                                                                \
        return "BN_" #name;
        BN_ERRNO_MAP (BN_ERR_NAME)
#undef BN_ERR_NAME
    }
    return "BN_UNKNOWN";
}

void
bn_error_set (char *err, size_t errsize, const char *format, ...)
{
    if (!err || errsize == 0)
        return;
    va_list args;
    va_start (args, format);
    vsnprintf (err, errsize, format, args);
    va_end (args);
}
