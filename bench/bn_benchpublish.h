/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchpublish: asv's `publish`: a static HTML site from a results
    folder: an index, a page per benchmark with a plot across its
    parameters and one across commits (drawn by gnuplot's SVG terminal),
    and table.md, the latest figures with their ratio to the floor; and
    the same table as a markdown page of its own (doc/performance.md),
    and the README's targets table.  */
#ifndef BN_BENCHPUBLISH_H_INCLUDED
#define BN_BENCHPUBLISH_H_INCLUDED

#include <stddef.h>

//  Write the site for results_dir into html_dir, drawing with gnuplot
//  (the program named by $BANYAN_GNUPLOT, else gnuplot on PATH); when
//  markdown is not NULL the table as a markdown page there; when readme
//  is not NULL the targets' table (bn_benchtargets) of machine_name (NULL:
//  the only machine with results) in that file. Returns 0, or -1 with
//  the reason in err.
int bn_benchpublish_run (const char *results_dir, const char *html_dir,
                         const char *markdown, const char *readme,
                         const char *machine_name, char *err, size_t errsize);

#endif
