/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_client_stats: the controller's counters, by actor, through banyan's
    bn_stats_request on the hub's query socket.  */
#include "bn_client_private.h"
#include "bn_msgtypes.h"

#include <string.h>

int
bn_client_stats (bn_client_t *self, double timeout, char **stats)
{
    if (!self || !stats)
        return BN_EINVAL;
    *stats = NULL;
    json_t *content = json_object ();
    if (!content)
        return BN_ENOMEM;
    bn_result_t *result = NULL;
    int rc =
        bn_client_query (self, BN_MSG_STATS_REQUEST, content, timeout, &result);
    //  a hub that does not know the request answers hub_error (7.1.0:
    //  KeyError "Bad Message Type"); banyan's answers bn_stats_reply
    bn_msg_t *reply = result ? bn_result_reply_msg (result, 0) : NULL;
    const char *type = reply ? bn_msg_type (reply) : NULL;
    if (rc == BN_EREMOTE && type && strcmp (type, BN_MSG_HUB_ERROR) == 0)
        rc = BN_ENOTSUP;
    else if (rc == 0) {
        json_t *actors =
            json_object_get (bn_result_reply (result, 0), "actors");
        if (!type || strcmp (type, BN_MSG_STATS_REPLY) != 0 ||
            !json_is_object (actors))
            rc = BN_EPROTO;
        else if (!(*stats = json_dumps (actors, JSON_COMPACT)))
            rc = BN_ENOMEM;
    }
    bn_result_destroy (&result);
    return rc;
}
