/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_interrupt: counting SIGINT and SIGTERM.  */
#include "bn_interrupt.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int s_count;

static void
s_handler (int sig)
{
    atomic_fetch_add (&s_count, sig == SIGTERM ? 2 : 1);
}

void
bn_interrupt_install (void)
{
    struct sigaction action;
    memset (&action, 0, sizeof action);
    action.sa_handler = s_handler;
    sigemptyset (&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction (SIGINT, &action, NULL);
    sigaction (SIGTERM, &action, NULL);
}

int
bn_interrupt_count (void)
{
    return atomic_load (&s_count);
}
