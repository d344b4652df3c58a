/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_topology: the shape of the broadcast spanning tree.

    A topology is parsed from a spec and a depth and holds a table of
    nodes numbered 0 ... size-1 in breadth-first order, the root being 0.
    Each node knows its level (root 0), parent, children (contiguous in
    node order), whether it is a leaf, its leaf index and its routing id.

    Specs:
        kary:K     every inner node has K children (K >= 1); with depth D
                   the tree has K^D leaves. IPython Parallel's tree is
                   kary:2.
        AxBxC      per-level fanouts: the root has A children, each of
                   them B, ... (a single number "16" is a depth-1 tree);
                   the depth is the number of factors, and a depth given
                   with it must agree.
        binomial   a binomial tree of order D (2^D nodes): a node of order
                   k has children of orders k-1, k-2, ..., 0 (child 0 is
                   the largest); leaves sit at different levels.
        auto       a shape chosen from the expected number of engines by
                   the rule below.
    The depth is 0 ... BN_TOPOLOGY_MAX_DEPTH; BN_TOPOLOGY_DEPTH_DEFAULT
    means "not given": 1 for kary and binomial (IPython Parallel's default
    broadcast_scheduler_depth), the number of factors for fanouts, the
    rule's choice for auto. At depth 0 the root is the only node and is
    the leaf.

    Leaves: the leaf index of a leaf is its position among the leaves in
    node order; it is the index of its engine broadcast port (the
    connection file's `broadcast` list), and engine e is served by leaf
    e % leaves, which is what a stock ipengine computes from that list.

    Routing ids: "sub_scheduler_" + path. The root's path is "0"; child i
    of a node with path X has path X + i. When every fanout of the tree is
    at most 10 the indices are single digits, so kary:2 gives exactly
    IPython Parallel 7.1.0's names (sub_scheduler_0, sub_scheduler_00,
    sub_scheduler_01, sub_scheduler_000, ...); otherwise each index is
    written as "." + decimal ("0.12.3"), which stays unique and printable.

    Cap: a tree has at most BN_TOPOLOGY_MAX_NODES nodes (the controller
    runs each node as a thread or a process); a larger spec is refused
    with an error naming its size.

    The auto rule (one table in bn_topology.c, s_auto_rules, to tune from
    benchmarks): a banyan node is a C relay that sends to its engines
    cheaply, so the tree is kept wide and shallow; each row gives, up to
    a number of expected engines, the shape to use:
        engines unknown (0)   kary:8, depth 1    (8 leaf ports)
        1 ... 64              depth 0            (the root serves all)
        65 ... 512            kary:8, depth 1    (<= 64 engines a leaf)
        513 ... 2048          kary:32, depth 1   (<= 64 engines a leaf)
        more                  kary:16, depth 2   (256 leaves, 273 nodes)
    With auto and a given depth D > 0, the tree is kary:K with the
    smallest K >= 2 such that K^D * 64 covers the engines (K = 8 when the
    count is unknown), capped by BN_TOPOLOGY_MAX_NODES.

    A resolved topology's spec (bn_topology_spec) and depth rebuild the
    same tree without the engine count, so a node process can be given
    "kary:8" and 1 rather than "auto".

    Folded: bn_topology_fold makes the root the one node, serving every
    leaf of the tree, so that the levels of the tree run in one node
    (doc/broadcast.md, "A folded tree"). The leaves stay: their number, the
    engine ports and engine e's leaf (e % leaves) are the tree's, and so
    are the ways down to the leaves (bn_topology_leaf_step), by which the
    root orders a merged reply as the tree would; each leaf's node is the
    root.
    The folded tree has depth 0 and one node; it is built as the tree,
    from its spec and depth, and folded.  */
#ifndef BN_TOPOLOGY_H_INCLUDED
#define BN_TOPOLOGY_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#include "bn_limits.h" //  BN_TOPOLOGY_MAX_DEPTH, the deepest tree
//  Most nodes in a tree, threads and processes alike.
#define BN_TOPOLOGY_MAX_NODES 1024
//  Depth argument meaning "not given".
#define BN_TOPOLOGY_DEPTH_DEFAULT (-1)
//  Prefix of every routing id.
#define BN_TOPOLOGY_ID_PREFIX "sub_scheduler_"
//  Longest routing id, with its terminating NUL.
#define BN_TOPOLOGY_ID_MAX 64

typedef struct _bn_topology_t bn_topology_t;

//  One target of a broadcast request: an engine's identity and id.
typedef struct {
    const char *uuid; //  engine identity (borrowed from the request)
    int eid;          //  engine id
    const void *ref;  //  the caller's, carried through a split
} bn_target_t;

//  Build the tree for spec and depth (BN_TOPOLOGY_DEPTH_DEFAULT if not
//  given); engines is the expected engine count for "auto" (0 = unknown,
//  ignored by other specs). Returns NULL with a message in err on a bad
//  spec, a bad depth, a tree past the node cap, or out of memory.
bn_topology_t *bn_topology_new (const char *spec, int depth, int engines,
                                char *err, size_t errsize);

//  Fold the tree into its root (see above); a tree of one node is left
//  as it is. Returns -1 if out of memory (the tree is then unchanged).
int bn_topology_fold (bn_topology_t *self);

//  True if the tree was folded into its root.
bool bn_topology_folded (bn_topology_t *self);

//  Destroy a topology and NULL the caller's reference; NULL-safe.
void bn_topology_destroy (bn_topology_t **self_p);

//  The resolved spec: "kary:2", "4x16", "binomial" ("auto" resolved to
//  the shape it chose). With bn_topology_depth it rebuilds the same tree.
const char *bn_topology_spec (bn_topology_t *self);

//  Levels below the root (0 ... BN_TOPOLOGY_MAX_DEPTH).
int bn_topology_depth (bn_topology_t *self);

//  Number of nodes.
int bn_topology_size (bn_topology_t *self);

//  Number of leaves, which is the number of engine broadcast ports.
int bn_topology_leaves (bn_topology_t *self);

//  Largest number of children of any node (0 at depth 0).
int bn_topology_max_fanout (bn_topology_t *self);

//  One-line description for logs: "kary:2 depth 2: 7 nodes, 4 leaves";
//  borrowed.
const char *bn_topology_describe (bn_topology_t *self);

//  Level of a node (root 0). Node indices are asserted in range.
int bn_topology_level (bn_topology_t *self, int node);

//  Parent of a node, -1 for the root.
int bn_topology_parent (bn_topology_t *self, int node);

//  Number of children of a node (0 for a leaf).
int bn_topology_nchildren (bn_topology_t *self, int node);

//  Node index of child `index` (0 ... nchildren-1) of a node, or -1 if
//  out of range. A node's children have consecutive node indices.
int bn_topology_child (bn_topology_t *self, int node, int index);

//  Position of a node among its parent's children (0 for the root).
int bn_topology_child_index (bn_topology_t *self, int node);

//  True if the node has no children (serves engines).
bool bn_topology_is_leaf (bn_topology_t *self, int node);

//  Leaf index of a leaf node (its engine broadcast port index), or -1 for
//  an inner node.
int bn_topology_leaf_index (bn_topology_t *self, int node);

//  Node index of leaf `leaf` (0 ... leaves-1), or -1 if out of range.
int bn_topology_leaf_node (bn_topology_t *self, int leaf);

//  Routing id of a node: "sub_scheduler_" + path; borrowed.
const char *bn_topology_routing_id (bn_topology_t *self, int node);

//  Path of a node: "0", "01", "0.12.3"; borrowed.
const char *bn_topology_path (bn_topology_t *self, int node);

//  Node whose routing id (or, without the prefix, path) is `id`, or -1;
//  it walks the path, so the cost is the depth, not the size.
int bn_topology_find (bn_topology_t *self, const char *id);

//  The child index taken at level `level` on the way from the root down to
//  leaf `leaf` (a folded tree keeps its tree's ways), or -1 if the leaf is
//  at that level or above it, or out of range. A merged reply's engines are
//  ordered by the step at the first level where their ways part (the
//  node that merges; the nodes above it pass its message on), the
//  client's order within a step.
int bn_topology_leaf_step (bn_topology_t *self, int leaf, int level);

//  Leaf index serving engine eid (eid % leaves), or -1 if eid < 0.
int bn_topology_engine_leaf (bn_topology_t *self, int eid);

//  Node index of the leaf serving engine eid, or -1 if eid < 0.
int bn_topology_engine_node (bn_topology_t *self, int eid);

//  True if engine eid is served by a leaf in node's subtree (the node
//  itself when it is a leaf).
bool bn_topology_serves (bn_topology_t *self, int node, int eid);

//  True if leaf `leaf` is node itself or in node's subtree.
bool bn_topology_serves_leaf (bn_topology_t *self, int node, int leaf);

//  Position (0 ... nchildren-1) of the child of `node` whose subtree holds
//  leaf `leaf`, or -1 if node is a leaf or the leaf is not below it.
int bn_topology_child_toward (bn_topology_t *self, int node, int leaf);

//  Split the targets of a request arriving at inner node `node` among its
//  children: writes the n targets into out (n entries, grouped by child,
//  in the given order within each child) and offsets (nchildren + 1
//  entries): child c's targets are out[offsets[c]] ... out[offsets[c+1]-1],
//  an empty range for a child with no targets. Returns 0, or -1 with a
//  message in err if node is a leaf or a target's engine is not below it
//  (eid < 0 or served by another subtree); out and offsets are then
//  unspecified.
int bn_topology_split (bn_topology_t *self, int node,
                       const bn_target_t *targets, size_t n, bn_target_t *out,
                       size_t *offsets, char *err, size_t errsize);

//  As bn_topology_split, where leaves (when not NULL) gives the leaf that
//  serves each target instead of eid % leaves, for targets whose entry is
//  not -1: an engine behind a host node is served by the leaf its host
//  node hangs below (doc/hosts.md).
int bn_topology_split_leaves (bn_topology_t *self, int node,
                              const bn_target_t *targets, const int *leaves,
                              size_t n, bn_target_t *out, size_t *offsets,
                              char *err, size_t errsize);

#endif
