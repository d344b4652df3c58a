/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchfmt: figures printed as asv prints them.  */
#ifndef BN_BENCHFMT_H_INCLUDED
#define BN_BENCHFMT_H_INCLUDED

#include <stddef.h>

//  Format value (in unit) as asv prints it: three significant digits in
//  the best unit, "12.3±0.4ms"; err < 0 leaves out the ±.
void bn_benchfmt_value (double value, double err, const char *unit, char *buf,
                        size_t size);

#endif
