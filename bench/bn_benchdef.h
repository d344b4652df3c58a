/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_benchdef: the shape of a banyan-bench benchmark (asv's): a name
    <suite>.<Class>.<kind>_<name>, a parameter grid, setup, the measured
    call, teardown, repeat, number, warm-up and timeout. Its functions get
    one parameter set as a bn_benchcase.  */
#ifndef BN_BENCHDEF_H_INCLUDED
#define BN_BENCHDEF_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

//  What setup and run return.
#define BN_BENCH_OK 0    //  carry on
#define BN_BENCH_FAIL -1 //  the case failed (reason given to the case)
#define BN_BENCH_SKIP 1  //  the case does not apply (asv's NaN)

//  Kinds, from the name's last part: time_, track_, peakmem_.
typedef enum { BN_BENCH_TIME, BN_BENCH_TRACK, BN_BENCH_PEAKMEM } bn_benchkind_t;

#define BN_BENCH_MAX_PARAMS 4

//  The floors figures are stated against (suite table entry names): one
//  message to each echo socket at a time, M to each in flight, the
//  payload one way (an empty answer back), or N commands started with
//  posix_spawn.
#define BN_BENCH_FLOOR_NAME "floor.ZmqFloor.time_echo"
#define BN_BENCH_FLOOR_MANY "floor.ZmqFloor.time_many"
#define BN_BENCH_FLOOR_PUSH "floor.ZmqFloor.time_push"
#define BN_BENCH_FLOOR_RELAY_ECHO "floor.ZmqRelayFloor.time_echo"
#define BN_BENCH_FLOOR_RELAY_MANY "floor.ZmqRelayFloor.time_many"
#define BN_BENCH_FLOOR_RELAY_PUSH "floor.ZmqRelayFloor.time_push"
#define BN_BENCH_FLOOR_SPAWN "floor.Spawn.time_spawn"

typedef struct _bn_benchcase_t bn_benchcase_t;
typedef struct _bn_benchdef_t bn_benchdef_t;

//  Prepare a case (start a cluster, build arguments): BN_BENCH_*.
typedef int (bn_bench_setup_fn) (bn_benchcase_t *self);
//  One measured call. A time_ benchmark is timed around it; track_ and
//  peakmem_ ones put their figure in *value. Returns BN_BENCH_*.
typedef int (bn_bench_run_fn) (bn_benchcase_t *self, double *value);
//  Release what setup made; called whenever setup was called.
typedef void (bn_bench_teardown_fn) (bn_benchcase_t *self);

struct _bn_benchdef_t {
    const char *name;               //  suite.Class.time_name
    const char *param_names;        //  "engines bytes", or "" for none
    const char *params;             //  values per name, "1 2 16 | 1000 10000"
    const char *quick_params;       //  the grid under --quick (NULL: params)
    const char *unit;               //  track_ unit (NULL: seconds / bytes)
    bn_bench_setup_fn *setup;       //  may be NULL
    bn_bench_run_fn *run;           //  the measured call
    bn_bench_teardown_fn *teardown; //  may be NULL
    int repeat;                     //  samples (0: 10)
    int number;                     //  calls per time_ sample (0: automatic)
    int warmup;                     //  untimed calls first (0: calls for
                                    //  0.1 s, -1: none)
    double timeout;                 //  seconds for the whole case (0: 120)
    const char *floor;              //  the two parameters of the floor to
                                    //  state the figure against ("ENGINES
                                    //  BYTES"): each a param name or a
                                    //  number; NULL: none
    const char *floor_bench;        //  that floor's name (NULL:
                                    //  BN_BENCH_FLOOR_NAME)
    const char *description;        //  one line for list and the site
    const char *osu;                //  OSU test title ("Latency", "Bandwidth",
                                    //  "Bcast Latency"...), or NULL
    const char *version;            //  asv's version: set, or changed, when
                                    //  what the benchmark measures changes;
                                    //  NULL: a hash of the definition
};

//  The kind a benchmark's name says.
bn_benchkind_t bn_benchdef_kind (const bn_benchdef_t *def);

//  The name of the floor def's figures are stated against, or NULL.
const char *bn_benchdef_floor (const bn_benchdef_t *def);

//  The unit of its figures ("seconds", "bytes", or its own).
const char *bn_benchdef_unit (const bn_benchdef_t *def);

//  The benchmark's grid as its table gives it (quick: under --quick), as
//  asv's list of lists of repr texts.
json_t *bn_benchdef_grid (const bn_benchdef_t *def, bool quick);

//  Add value (a repr text) to a grid's list of values unless it holds it:
//  numbers in ascending order, other values at the end.
void bn_benchdef_grid_add (json_t *values, const char *value);

#endif
