/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_malloc: fixed mmap and trim thresholds for glibc's allocator (other
    C libraries keep their own behaviour).  */
#include "bn_malloc.h"

#include <stdlib.h> //  __GLIBC__
#ifdef __GLIBC__
#include <malloc.h>
#endif

int
bn_malloc_setup (void)
{
#ifdef __GLIBC__
    //  Setting either threshold turns glibc's dynamic adjustment off
    if (mallopt (M_MMAP_THRESHOLD, BN_MALLOC_MMAP_THRESHOLD) != 1 ||
        mallopt (M_TRIM_THRESHOLD, BN_MALLOC_TRIM_THRESHOLD) != 1)
        return -1;
#endif
    return 0;
}
