/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clustertest: an in-process cluster for integration tests, a
    controller actor and banyan engine actors in a private profile folder,
    and a libbanyan client of it.  */
#ifndef BN_CLUSTERTEST_H_INCLUDED
#define BN_CLUSTERTEST_H_INCLUDED

#include "banyan.h"
#include "bn_config.h"
#include "bn_controller.h"
#include "bn_engine_actor.h"
#include "bn_stattest.h"

#include <check.h>
#include <czmq.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char dir[256];        //  profile folder of the cluster
    char *engine_file;    //  its engine connection file
    bn_config_t *config;  //  settings shared by both actors
    zactor_t *controller; //  the controller
    zactor_t *engines;    //  the engines (NULL with none)
} t_cluster_t;

//  Start a controller in a new folder /tmp/<name>-XXXXXX with settings
//  given as name, value pairs ending with NULL (heartbeats every 100 ms
//  before them), and engines banyan engines, waiting until they are
//  registered.
static inline void
t_cluster_start (t_cluster_t *self, const char *name, int engines, ...)
{
    memset (self, 0, sizeof *self);
    snprintf (self->dir, sizeof self->dir, "/tmp/%s-XXXXXX", name);
    ck_assert_ptr_nonnull (mkdtemp (self->dir));
    self->config = bn_config_new ();
    ck_assert_int_eq (bn_config_set (self->config,
                                     "controller.heartbeat_period", "100",
                                     BN_CONFIG_CMDLINE),
                      0);
    va_list args;
    va_start (args, engines);
    const char *setting;
    while ((setting = va_arg (args, const char *))) {
        const char *value = va_arg (args, const char *);
        ck_assert_int_eq (
            bn_config_set (self->config, setting, value, BN_CONFIG_CMDLINE), 0);
    }
    va_end (args);
    bn_controller_args_t start = {self->config, self->dir, 0};
    self->controller = zactor_new (bn_controller_actor, &start);
    ck_assert_ptr_nonnull (self->controller);
    ck_assert_int_eq (start.status, 0);
    zstr_send (self->controller, "CONNFILES");
    char *client_file = NULL;
    zstr_recvx (self->controller, &client_file, &self->engine_file, NULL);
    ck_assert_ptr_nonnull (self->engine_file);
    free (client_file);
    if (engines == 0)
        return;
    bn_engine_args_t engine_args = {self->engine_file, NULL, self->config,
                                    engines,           -1,   self->dir};
    self->engines = zactor_new (bn_engine_actor, &engine_args);
    ck_assert_ptr_nonnull (self->engines);
    zstr_sendx (self->engines, "WAIT", "20000", NULL);
    char *answer = zstr_recv (self->engines);
    ck_assert_str_eq (answer, "OK");
    free (answer);
}

//  Stop the cluster and remove its folder.
static inline void
t_cluster_stop (t_cluster_t *self)
{
    zactor_destroy (&self->engines);
    zactor_destroy (&self->controller);
    bn_config_destroy (&self->config);
    zstr_free (&self->engine_file);
    char command[300];
    snprintf (command, sizeof command, "rm -rf '%s'", self->dir);
    ck_assert_int_eq (system (command), 0);
}

//  A client of the cluster, once engines engines are registered.
static inline bn_client_t *
t_cluster_client (t_cluster_t *self, size_t engines)
{
    int rc;
    bn_client_t *client = bn_client_new (self->dir, 10, &rc);
    ck_assert_msg (client != NULL, "cannot connect: %s", bn_strerror (rc));
    ck_assert_int_eq (bn_client_wait_for_engines (client, engines, 20), 0);
    return client;
}

//  The controller's counters as client reads them (bn_client_stats): one
//  object per actor (caller decrefs).
static inline json_t *
t_client_stats (bn_client_t *client)
{
    char *text = NULL;
    int rc = bn_client_stats (client, 10, &text);
    ck_assert_msg (rc == 0, "bn_client_stats: %s", bn_strerror (rc));
    json_t *stats = json_loads (text, 0, NULL);
    free (text);
    ck_assert (json_is_object (stats));
    return stats;
}

//  One counter of an actor as client reads it, e.g. ("mux", "received").
static inline json_int_t
t_client_stat (bn_client_t *client, const char *actor, const char *counter)
{
    json_t *stats = t_client_stats (client);
    json_int_t result = t_counter (stats, actor, counter);
    json_decref (stats);
    return result;
}

#endif
