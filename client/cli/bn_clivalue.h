/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clivalue: command-line words as Python values for `banyan apply`: a
    reference to a value on the engine, an integer, a float, or a string.  */
#ifndef BN_CLIVALUE_H_INCLUDED
#define BN_CLIVALUE_H_INCLUDED

#include "bn_value.h"

//  The value a word stands for: "@name" is ipyparallel's Reference
//  ("name"), which the engine replaces by the value push stored under
//  name ("@@x" is the string "@x"); "42" and "-7" are ints, "3.5", "1e3" and
//  "-0.5" floats (words such as "nan" or "inf" stay strings), anything
//  else, including an int too large for 64 bits, a string. Returns NULL
//  if out of memory.
bn_value_t *bn_clivalue_parse (const char *word);

//  A LIST of the values of count words; NULL if out of memory.
bn_value_t *bn_clivalue_list (char **words, int count);

#endif
