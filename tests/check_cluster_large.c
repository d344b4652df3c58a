/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_cluster_large: a push past 2 GiB from libbanyan through banyan's
    controller to a banyan engine over TCP, the controller and the engine
    run in this process as actors; the client sends from a mapping never
    written, so the memory spent is the controller's and the engine's
    copies, and no more.  */
#include "banyan.h"
#include "bn_apply.h"
#include "bn_config.h"
#include "bn_controller.h"
#include "bn_engine_actor.h"
#include "bn_memtest.h"

#include <check.h>
#include <czmq.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

//  Past 2^31, and odd
#define S_SIZE ((size_t)(1ull << 31) + 4097)

static atomic_int s_released; //  calls of s_unmap (libzmq's I/O thread)

static void
s_unmap (void *data, void *hint)
{
    munmap (data, S_SIZE);
    atomic_fetch_add (&s_released, 1);
}

START_TEST (test_push_past_2gib)
{
    char dir[] = "/tmp/bn-check-cluster-large-XXXXXX";
    ck_assert_ptr_nonnull (mkdtemp (dir));
    bn_config_t *config = bn_config_new ();
    ck_assert_int_eq (bn_config_set (config, "controller.heartbeat_period",
                                     "100", BN_CONFIG_CMDLINE),
                      0);
    //  the engine's loop is busy for seconds with 2 GiB to check, on a
    //  loaded machine maybe tens of them
    ck_assert_int_eq (bn_config_set (config, "controller.heartbeat_misses",
                                     "3000", BN_CONFIG_CMDLINE),
                      0);
    bn_controller_args_t args = {config, dir, 0};
    zactor_t *controller = zactor_new (bn_controller_actor, &args);
    ck_assert_ptr_nonnull (controller);
    ck_assert_int_eq (args.status, 0);
    zstr_send (controller, "CONNFILES");
    char *client_file = NULL, *engine_file = NULL;
    zstr_recvx (controller, &client_file, &engine_file, NULL);
    ck_assert_ptr_nonnull (engine_file);
    bn_engine_args_t engine_args = {engine_file, NULL, config, 1, -1, dir};
    zactor_t *engines = zactor_new (bn_engine_actor, &engine_args);
    ck_assert_ptr_nonnull (engines);
    zstr_sendx (engines, "WAIT", "20000", NULL);
    char *answer = zstr_recv (engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
    int rc;
    bn_client_t *client = bn_client_new (dir, 10, &rc);
    ck_assert_msg (client != NULL, "cannot connect: %s", bn_strerror (rc));
    ck_assert_int_eq (bn_client_wait_for_engines (client, 1, 20), 0);
    bn_view_t *view = bn_view_new (client, BN_VIEW_DIRECT);

    //  zeros that cost nothing until written, which nothing does
    char *map =
        mmap (NULL, S_SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne (map, MAP_FAILED);
    int64_t crc = (int64_t)crc32_z (0, (const Bytef *)map, S_SIZE);
    //  the peak from here is what the push costs (clear_refs 5; where it
    //  cannot be written, the peak so far is that of a started cluster)
    FILE *clear = fopen ("/proc/self/clear_refs", "w");
    if (clear) {
        fputs ("5", clear);
        fclose (clear);
    }
    long before = t_status_kb ("VmRSS");

    bn_value_t *ns = bn_value_new_dict ();
    ck_assert_int_eq (
        bn_value_dict_set_str (
            ns, "x", bn_value_new_bytes_shared (map, S_SIZE, s_unmap, NULL)),
        0);
    bn_result_t *result = NULL;
    ck_assert_int_eq (bn_view_push (view, ns, &result), 0);
    bn_value_destroy (&ns);
    ck_assert_int_eq (bn_result_get (result, 600), 0);
    bn_result_destroy (&result);
    //  sent, the client lets go of the mapping
    int64_t deadline = zclock_mono () + 60000;
    while (atomic_load (&s_released) == 0 && zclock_mono () < deadline)
        zclock_sleep (10);
    ck_assert_int_eq (atomic_load (&s_released), 1);

    //  the engine holds every byte, in order
    bn_value_t *call = bn_value_new_list ();
    ck_assert_int_eq (bn_value_append (call, bn_apply_reference_new ("x")), 0);
    ck_assert_int_eq (bn_view_apply (view, "crc32", call, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 600), 0);
    ck_assert_int_eq (bn_value_int (bn_result_value (result, 0)), crc);
    bn_result_destroy (&result);
    bn_value_destroy (&call);
    bn_value_t *len = bn_value_new_list ();
    ck_assert_int_eq (bn_value_append (len, bn_apply_reference_new ("x")), 0);
    ck_assert_int_eq (bn_view_apply (view, "len", len, NULL, &result), 0);
    ck_assert_int_eq (bn_result_get (result, 60), 0);
    ck_assert_int_eq (bn_value_int (bn_result_value (result, 0)),
                      (int64_t)S_SIZE);
    bn_result_destroy (&result);
    bn_value_destroy (&len);

    //  the controller's copy and the engine's: one each, and no more
    long grown = t_status_kb ("VmHWM") - before;
    ck_assert_msg (grown < (long)(S_SIZE / 1024 * 5 / 2),
                   "%ld kB more for a push of %zu kB", grown, S_SIZE / 1024);

    bn_view_destroy (&view);
    bn_client_destroy (&client);
    zactor_destroy (&engines);
    zactor_destroy (&controller);
    bn_config_destroy (&config);
    free (client_file);
    free (engine_file);
    char command[300];
    snprintf (command, sizeof command, "rm -rf '%s'", dir);
    ck_assert_int_eq (system (command), 0);
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("cluster_large");
    TCase *tc = tcase_create ("core");
    tcase_set_timeout (tc, 900);
    tcase_add_test (tc, test_push_past_2gib);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
