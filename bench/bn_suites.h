/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_suites: the table of banyan-bench's benchmarks, and the suites'
    setup, run and teardown functions it names.  */
#ifndef BN_SUITES_H_INCLUDED
#define BN_SUITES_H_INCLUDED

#include "bn_benchcase.h"

//  The table, in the order `list` shows and `run` runs it.
const bn_benchdef_t *bn_suites_table (size_t *count);

//  Cluster suites (bn_suite_cluster.c): a cluster of `engines` (stack,
//  depth from the params) and a view of the kind the setup names.
int bn_suite_direct_setup (bn_benchcase_t *c);
int bn_suite_coalescing_setup (bn_benchcase_t *c);
int bn_suite_noncoalescing_setup (bn_benchcase_t *c);
int bn_suite_one_engine_setup (bn_benchcase_t *c);
int bn_suite_push_run (bn_benchcase_t *c, double *value);
int bn_suite_echo_run (bn_benchcase_t *c, double *value);
int bn_suite_many_run (bn_benchcase_t *c, double *value);
int bn_suite_window_run (bn_benchcase_t *c, double *value);
int bn_suite_gather_run (bn_benchcase_t *c, double *value);
int bn_suite_reduce_run (bn_benchcase_t *c, double *value);
int bn_suite_allreduce_run (bn_benchcase_t *c, double *value);
int bn_suite_barrier_run (bn_benchcase_t *c, double *value);
void bn_suite_cluster_teardown (bn_benchcase_t *c);

//  The stock Python client (bn_suite_pyclient.c).
int bn_suite_pyclient_direct_setup (bn_benchcase_t *c);
int bn_suite_pyclient_coalescing_setup (bn_benchcase_t *c);
int bn_suite_pyclient_noncoalescing_setup (bn_benchcase_t *c);
int bn_suite_pyclient_echo_run (bn_benchcase_t *c, double *value);
void bn_suite_pyclient_teardown (bn_benchcase_t *c);

//  The floor (bn_suite_floor.c).
int bn_suite_floor_setup (bn_benchcase_t *c);
int bn_suite_floor_push_setup (bn_benchcase_t *c);
int bn_suite_floor_relay_setup (bn_benchcase_t *c);
int bn_suite_floor_relay_push_setup (bn_benchcase_t *c);
int bn_suite_floor_run (bn_benchcase_t *c, double *value);
int bn_suite_floor_many_run (bn_benchcase_t *c, double *value);
void bn_suite_floor_teardown (bn_benchcase_t *c);

//  The machine's price of waking a thread (bn_suite_wakeup.c).
int bn_suite_wakeup_setup (bn_benchcase_t *c);
int bn_suite_wakeup_run (bn_benchcase_t *c, double *value);
void bn_suite_wakeup_teardown (bn_benchcase_t *c);

//  Test hosts (bn_suite_hosts.c): a host node and engines on each of
//  `hosts` network-namespace hosts.
int bn_suite_hosts_coalescing_setup (bn_benchcase_t *c);
int bn_suite_hosts_direct_setup (bn_benchcase_t *c);
int bn_suite_hosts_payload_setup (bn_benchcase_t *c);
int bn_suite_hosts_resources_setup (bn_benchcase_t *c);
int bn_suite_hosts_echo_run (bn_benchcase_t *c, double *value);
int bn_suite_hosts_payload_run (bn_benchcase_t *c, double *value);
int bn_suite_hosts_registered_run (bn_benchcase_t *c, double *value);
int bn_suite_hosts_controller_fds_run (bn_benchcase_t *c, double *value);
int bn_suite_hosts_controller_mem_run (bn_benchcase_t *c, double *value);
int bn_suite_hosts_node_mem_run (bn_benchcase_t *c, double *value);
void bn_suite_hosts_teardown (bn_benchcase_t *c);

//  banyan px and its floor, posix_spawn (bn_suite_px.c).
int bn_suite_spawn_setup (bn_benchcase_t *c);
int bn_suite_spawn_run (bn_benchcase_t *c, double *value);
int bn_suite_px_setup (bn_benchcase_t *c);
int bn_suite_px_run (bn_benchcase_t *c, double *value);
void bn_suite_px_teardown (bn_benchcase_t *c);
//  Payloads past 2 GiB (bn_suite_large.c): a transfer of `bytes` on
//  `view` in setup, then its time or a `process`'s peak.
int bn_suite_large_setup (bn_benchcase_t *c);
int bn_suite_large_seconds_run (bn_benchcase_t *c, double *value);
int bn_suite_large_peak_run (bn_benchcase_t *c, double *value);
void bn_suite_large_teardown (bn_benchcase_t *c);

//  Start-up and memory (bn_suite_system.c).
int bn_suite_registered_run (bn_benchcase_t *c, double *value);
int bn_suite_memory_setup (bn_benchcase_t *c);
int bn_suite_controller_mem_run (bn_benchcase_t *c, double *value);
int bn_suite_tree_node_mem_run (bn_benchcase_t *c, double *value);
int bn_suite_engine_mem_run (bn_benchcase_t *c, double *value);
int bn_suite_engine_bytes_run (bn_benchcase_t *c, double *value);
void bn_suite_memory_teardown (bn_benchcase_t *c);

#endif
