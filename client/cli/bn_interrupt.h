/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_interrupt: counts Ctrl-C (SIGINT) and SIGTERM for commands that react
    to them in their own loops: the first Ctrl-C reports, the second
    aborts; SIGTERM counts as both.  */
#ifndef BN_INTERRUPT_H_INCLUDED
#define BN_INTERRUPT_H_INCLUDED

//  Install the handlers of SIGINT and SIGTERM (process-wide).
void bn_interrupt_install (void);

//  Number of interruptions so far (SIGTERM counts 2).
int bn_interrupt_count (void);

#endif
