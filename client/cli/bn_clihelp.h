/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clihelp: the --help text of every banyan command, which is also the
    source of the man pages.  */
#ifndef BN_CLIHELP_H_INCLUDED
#define BN_CLIHELP_H_INCLUDED

#include <stdbool.h>
#include <stdio.h>

//  Write the help of a command ("" or NULL for banyan itself, "px",
//  "cluster start"...) to file. Returns 0, or -1 if there is no such
//  command.
int bn_clihelp_print (const char *command, FILE *file);

//  Write "banyan <command> --version" output: "banyan <version>".
void bn_clihelp_version (FILE *file);

#endif
