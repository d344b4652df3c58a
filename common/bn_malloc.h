/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_malloc: the C library allocator's settings every banyan daemon
    starts with, so that its memory follows what it holds.  */
#ifndef BN_MALLOC_H_INCLUDED
#define BN_MALLOC_H_INCLUDED

//  Allocations of BN_MALLOC_MMAP_THRESHOLD bytes or more get pages of their
//  own, returned to the system when freed
#define BN_MALLOC_MMAP_THRESHOLD (1024 * 1024)
//  Free memory at the top of a heap beyond this is returned to the system
#define BN_MALLOC_TRIM_THRESHOLD (2 * 1024 * 1024)

//  Fix the allocator's thresholds; called once, first thing in main.
//  glibc raises its thresholds to the size of each large block freed, so
//  that after one 10 MB message is freed, later ones come from the heap
//  and stay with the process once freed: a daemon that passes large
//  payloads would keep the most it ever held. Returns 0, or -1 if the
//  allocator refused (the defaults then stay).
int bn_malloc_setup (void);

#endif
