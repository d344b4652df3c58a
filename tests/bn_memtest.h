/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_memtest: the memory a test process holds, from /proc/self/status,
    and whether it means anything: under AddressSanitizer or valgrind the
    allocator is theirs, and freed memory stays held in their quarantine.
    Included by test programs; everything here is static.  */
#ifndef BN_MEMTEST_H_INCLUDED
#define BN_MEMTEST_H_INCLUDED

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A field of /proc/self/status in kB, e.g. t_status_kb ("VmRSS").
static inline long
t_status_kb (const char *field)
{
    FILE *file = fopen ("/proc/self/status", "r");
    ck_assert_ptr_nonnull (file);
    char line[256];
    long kb = -1;
    size_t length = strlen (field);
    while (fgets (line, sizeof line, file))
        if (strncmp (line, field, length) == 0 && line[length] == ':')
            kb = atol (line + length + 1);
    fclose (file);
    ck_assert_int_ge (kb, 0);
    return kb;
}

//  True when the process's resident memory is malloc's own.
static inline bool
t_memory_measurable (void)
{
#if defined(__SANITIZE_ADDRESS__)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return false;
#endif
#endif
    //  valgrind preloads its allocator (vgpreload_<tool>-<platform>.so)
    const char *preload = getenv ("LD_PRELOAD");
    return !preload || !strstr (preload, "vgpreload_");
}

#endif
