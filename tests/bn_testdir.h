/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_testdir: the temporary folder a test removes with all it holds,
    without starting a shell (czmq's zdir), so that a unit test starts no
    process.  Included by test programs; everything here is static.  */
#ifndef BN_TESTDIR_H_INCLUDED
#define BN_TESTDIR_H_INCLUDED

#include <czmq.h>

//  Remove folder and everything in it; nothing if it does not exist.
static inline void
t_rmtree (const char *folder)
{
    zdir_t *dir = zdir_new (folder, NULL);
    if (dir) {
        zdir_remove (dir, true);
        zdir_destroy (&dir);
    }
}

#endif
