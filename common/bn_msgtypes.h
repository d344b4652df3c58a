/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_msgtypes: every message type and fixed wire string banyan speaks
    (doc/wire.md); the only place these strings are spelled.  */
#ifndef BN_MSGTYPES_H_INCLUDED
#define BN_MSGTYPES_H_INCLUDED

#define BN_DELIM "<IDS|MSG>"
#define BN_DELIM_SIZE 9
#define BN_PROTOCOL_VERSION "5.3"

//  Shell
#define BN_MSG_APPLY_REQUEST "apply_request"
#define BN_MSG_APPLY_REPLY "apply_reply"
#define BN_MSG_EXECUTE_REQUEST "execute_request"
#define BN_MSG_EXECUTE_REPLY "execute_reply"
#define BN_MSG_KERNEL_INFO_REQUEST "kernel_info_request"
#define BN_MSG_KERNEL_INFO_REPLY "kernel_info_reply"

//  Control
#define BN_MSG_CLEAR_REQUEST "clear_request"
#define BN_MSG_CLEAR_REPLY "clear_reply"
#define BN_MSG_ABORT_REQUEST "abort_request"
#define BN_MSG_ABORT_REPLY "abort_reply"
#define BN_MSG_SHUTDOWN_REQUEST "shutdown_request"
#define BN_MSG_SHUTDOWN_REPLY "shutdown_reply"
#define BN_MSG_SIGNAL_REQUEST "signal_request"
#define BN_MSG_SIGNAL_REPLY "signal_reply"

//  IOPub
#define BN_MSG_STATUS "status"
#define BN_MSG_STREAM "stream"
#define BN_MSG_EXECUTE_INPUT "execute_input"
#define BN_MSG_EXECUTE_RESULT "execute_result"
#define BN_MSG_DISPLAY_DATA "display_data"
#define BN_MSG_ERROR "error"
#define BN_MSG_DATA_MESSAGE "data_message"

//  Hub queries and registration
#define BN_MSG_REGISTRATION_REQUEST "registration_request"
#define BN_MSG_REGISTRATION_REPLY "registration_reply"
#define BN_MSG_UNREGISTRATION_REQUEST "unregistration_request"
#define BN_MSG_CONNECTION_REQUEST "connection_request"
#define BN_MSG_CONNECTION_REPLY "connection_reply"
#define BN_MSG_QUEUE_REQUEST "queue_request"
#define BN_MSG_QUEUE_REPLY "queue_reply"
#define BN_MSG_RESULT_REQUEST "result_request"
#define BN_MSG_HISTORY_REQUEST "history_request"
#define BN_MSG_DB_REQUEST "db_request"
#define BN_MSG_PURGE_REQUEST "purge_request"
#define BN_MSG_RESUBMIT_REQUEST "resubmit_request"
#define BN_MSG_RESULT_REPLY "result_reply"
#define BN_MSG_HISTORY_REPLY "history_reply"
#define BN_MSG_DB_REPLY "db_reply"
#define BN_MSG_PURGE_REPLY "purge_reply"
#define BN_MSG_RESUBMIT_REPLY "resubmit_reply"
#define BN_MSG_HUB_ERROR "hub_error"

//  banyan's extension of the hub queries (not in 7.1.0, whose hub answers
//  it with hub_error KeyError "Bad Message Type"): every actor's counters
#define BN_MSG_STATS_REQUEST "bn_stats_request"
#define BN_MSG_STATS_REPLY "bn_stats_reply"

//  banyan's extension for host nodes (doc/hosts.md): a host node's own
//  messages to the hub, and the prefix of its link id
#define BN_MSG_HOST_REQUEST "bn_host_request"
#define BN_MSG_HOST_REPLY "bn_host_reply"
#define BN_MSG_HOST_ENGINES "bn_host_engines"
#define BN_HOST_LINK_PREFIX "bn-host "
//  ... and of the sockets the engines of one banyan-engine process share
//  towards their host node (mux, task, broadcast, control, hb_pong): a
//  message on one names its engine in the frame after this routing id (no
//  engine uuid holds a space)
#define BN_SHARED_PREFIX "bn-shared "

//  banyan's extension of registration: what a banyan engine understands,
//  a list in its registration_request's content, which the hub passes on
//  in registration_notification and connection_reply (doc/wire.md 4.1);
//  a stock engine sends none and a stock hub passes none on
#define BN_REG_FEATURES "bn_features"
#define BN_FEATURE_OUTPUT "bn_output" //  honours BN_BCAST_OUTPUT "reply"
//  ...and of the engines of one process that share one broadcast
//  connection: the request names its routing id (BN_SHARED_PREFIX and a
//  uuid), and banyan's hub answers with the broadcast port to connect it
//  to (an index into the connection file's list), when its tree takes one
#define BN_REG_BROADCAST_VIA "bn_broadcast_via"
#define BN_REG_BROADCAST_PORT "bn_broadcast_port"

//  Hub notifications
#define BN_MSG_REGISTRATION_NOTIFICATION "registration_notification"
#define BN_MSG_UNREGISTRATION_NOTIFICATION "unregistration_notification"
#define BN_MSG_SHUTDOWN_NOTIFICATION "shutdown_notification"

//  Fixed routing ids of the controller's engine-facing ROUTERs (doc/wire.md 3)
#define BN_ROUTING_MUX_OUT "mux_out"
#define BN_ROUTING_CONTROL_OUT "control_out"
#define BN_ROUTING_TASK_OUT "task_out"
#define BN_ROUTING_MUX_IN "mux_in"
#define BN_ROUTING_CONTROL_IN "control_in"
#define BN_ROUTING_TASK_IN "task_in"
#define BN_ROUTING_SCHEDULER_PREFIX "sub_scheduler_"

//  Broadcast requests: metadata keys of banyan's extensions
//  (doc/broadcast.md)
#define BN_BCAST_LEVELS "bn_levels"
#define BN_BCAST_RELEASE "bn_release"
#define BN_BCAST_WINDOW "bn_window_ms"
#define BN_BCAST_GROUP "bn_group"
#define BN_BCAST_REDUCE "bn_reduce"
#define BN_BCAST_DEADLINE "bn_deadline_ms"
#define BN_BCAST_TIMESTAMPS "bn_timestamps"
#define BN_BCAST_OUTPUT "bn_output"

//  stream content: the output as bn_rawtext encodes it, beside its text,
//  when the two differ (bytes that are not UTF-8, NULs)
#define BN_STREAM_BYTES "bn_text"

//  execute_request metadata: true when the request's first buffer is the
//  command's standard input (banyan engines; others ignore it)
#define BN_EXEC_STDIN "bn_stdin"

//  Broadcast metadata, as 7.1.0's broadcast scheduler sets it on a
//  request and on each engine's reply to it
#define BN_MD_IS_BROADCAST "is_broadcast"
#define BN_MD_IS_COALESCING "is_coalescing"
#define BN_MD_ORIGINAL_MSG_ID "original_msg_id"

//  Merged broadcast replies: metadata keys of their entries, one of the
//  three shapes (bn_merged_writer.h), and of what every merged reply says
#define BN_BCAST_TARGETS "broadcast_targets"
#define BN_BCAST_REPLIES "bn_replies"
#define BN_BCAST_GROUPS "bn_groups"
#define BN_BCAST_REDUCED "bn_reduced"
#define BN_BCAST_PARTIAL "bn_partial"
#define BN_BCAST_HOPS "bn_hops"

//  Status strings
#define BN_STATUS_OK "ok"
#define BN_STATUS_ERROR "error"
#define BN_STATUS_ABORTED "aborted"

#endif
