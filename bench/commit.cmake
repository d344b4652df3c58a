# SPDX-License-Identifier: BSD-3-Clause
# commit.cmake: write the header that tells banyan-bench which commit it
# was built from and that commit's date, rewriting it only when they
# change (so that a build at the same commit recompiles nothing).
#
#   cmake -DGIT=/usr/bin/git -DSOURCE_DIR=... -DOUTPUT=bn_benchcommit.h
#         -P commit.cmake

set (commit "")
set (date 0)
if (GIT)
    execute_process (COMMAND ${GIT} -C ${SOURCE_DIR} log -1 --format=%H.%ct
                     OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_QUIET
                     OUTPUT_STRIP_TRAILING_WHITESPACE)
    if (rc EQUAL 0 AND out MATCHES "^([0-9a-f]+)\\.([0-9]+)$")
        set (commit ${CMAKE_MATCH_1})
        set (date ${CMAKE_MATCH_2})
    endif ()
endif ()
set (text "/*  bn_benchcommit: the commit this banyan-bench was built from.  */
#define BN_BENCH_COMMIT \"${commit}\"
#define BN_BENCH_COMMIT_DATE ${date}
")
set (old "")
if (EXISTS ${OUTPUT})
    file (READ ${OUTPUT} old)
endif ()
if (NOT old STREQUAL text)
    file (WRITE ${OUTPUT} "${text}")
endif ()
