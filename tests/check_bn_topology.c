/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  check_bn_topology: tree shapes, node tables, routing ids, engine to
    leaf mapping and target splitting.  */
#include "bn_topology.h"

#include <check.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Assertions for the loops over whole trees: Check records every passing
//  ck_assert, which would dominate the run time of these walks.
#define S_EQ(a, b)                                                             \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ != b_)                                                          \
            ck_abort_msg ("%s == %s failed: %lld != %lld", #a, #b, a_, b_);    \
    } while (0)
#define S_TRUE(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            ck_abort_msg ("%s failed", #c);                                    \
    } while (0)

//  Build a topology that must exist.
static bn_topology_t *
s_new (const char *spec, int depth, int engines)
{
    char err[256] = "";
    bn_topology_t *topology =
        bn_topology_new (spec, depth, engines, err, sizeof err);
    ck_assert_msg (topology, "%s depth %d: %s", spec, depth, err);
    return topology;
}

//  Walk from the root to the leaf serving eid with child_toward; return
//  the node reached.
static int
s_route (bn_topology_t *topology, int eid)
{
    int leaf = bn_topology_engine_leaf (topology, eid);
    int node = 0, hops = 0;
    while (!bn_topology_is_leaf (topology, node)) {
        int c = bn_topology_child_toward (topology, node, leaf);
        S_TRUE ((c) >= (0));
        node = bn_topology_child (topology, node, c);
        S_TRUE ((node) >= (0));
        S_TRUE ((++hops) <= (BN_TOPOLOGY_MAX_DEPTH));
    }
    return node;
}

//  Check every invariant of a node table.
static void
s_check_tree (bn_topology_t *topology)
{
    int size = bn_topology_size (topology);
    int leaves = 0, depth = 0, widest = 0;
    zhashx_t *ids = zhashx_new ();
    S_TRUE ((size) >= (1));
    S_TRUE ((size) <= (BN_TOPOLOGY_MAX_NODES));
    S_EQ (bn_topology_parent (topology, 0), -1);
    S_EQ (bn_topology_level (topology, 0), 0);
    ck_assert_str_eq (bn_topology_path (topology, 0), "0");
    for (int node = 0; node < size; node++) {
        int level = bn_topology_level (topology, node);
        int nchildren = bn_topology_nchildren (topology, node);
        const char *id = bn_topology_routing_id (topology, node);
        S_TRUE (strncmp (id, BN_TOPOLOGY_ID_PREFIX,
                         strlen (BN_TOPOLOGY_ID_PREFIX)) == 0);
        S_TRUE (strcmp (id + strlen (BN_TOPOLOGY_ID_PREFIX),
                        bn_topology_path (topology, node)) == 0);
        S_EQ (zhashx_insert (ids, id, (void *)id), 0);
        S_EQ (bn_topology_find (topology, id), node);
        if (level > depth)
            depth = level;
        if (nchildren > widest)
            widest = nchildren;
        if (node > 0) {
            int parent = bn_topology_parent (topology, node);
            S_TRUE ((parent) < (node));
            S_EQ (bn_topology_level (topology, parent), level - 1);
            int index = bn_topology_child_index (topology, node);
            S_EQ (bn_topology_child (topology, parent, index), node);
            //  The path extends the parent's.
            const char *path = bn_topology_path (topology, parent);
            S_TRUE (strncmp (bn_topology_path (topology, node), path,
                             strlen (path)) == 0);
        }
        S_EQ (bn_topology_child (topology, node, -1), -1);
        S_EQ (bn_topology_child (topology, node, nchildren), -1);
        for (int c = 0; c < nchildren; c++) {
            int child = bn_topology_child (topology, node, c);
            S_EQ (bn_topology_parent (topology, child), node);
            if (c > 0)
                S_EQ (child, bn_topology_child (topology, node, c - 1) + 1);
        }
        S_TRUE (bn_topology_is_leaf (topology, node) == (nchildren == 0));
        if (nchildren == 0) {
            S_EQ (bn_topology_leaf_index (topology, node), leaves);
            S_EQ (bn_topology_leaf_node (topology, leaves), node);
            leaves++;
        } else
            S_EQ (bn_topology_leaf_index (topology, node), -1);
    }
    S_EQ (bn_topology_leaves (topology), leaves);
    S_EQ (bn_topology_depth (topology), depth);
    S_EQ (bn_topology_max_fanout (topology), widest);
    S_EQ (bn_topology_leaf_node (topology, leaves), -1);
    S_EQ (bn_topology_leaf_node (topology, -1), -1);
    zhashx_destroy (&ids);

    //  Every engine, over a few rounds of the leaves, reaches its leaf.
    for (int eid = 0; eid < 3 * leaves + 1; eid++) {
        int leaf = bn_topology_engine_leaf (topology, eid);
        S_EQ (leaf, eid % leaves);
        int node = bn_topology_engine_node (topology, eid);
        S_EQ (bn_topology_leaf_index (topology, node), leaf);
        S_EQ (s_route (topology, eid), node);
        S_TRUE (bn_topology_serves (topology, 0, eid));
        S_TRUE (bn_topology_serves (topology, node, eid));
        S_EQ (bn_topology_child_toward (topology, node, leaf), -1);
        //  Its ancestors serve it; their siblings do not.
        for (int up = node; up > 0; up = bn_topology_parent (topology, up)) {
            int parent = bn_topology_parent (topology, up);
            S_TRUE (bn_topology_serves (topology, up, eid));
            int nsiblings = bn_topology_nchildren (topology, parent);
            for (int c = 0; c < nsiblings; c++) {
                //  Wide nodes: the neighbours and the ends are enough.
                int index = bn_topology_child_index (topology, up);
                if (nsiblings > 8 && abs (c - index) > 1 && c > 0 &&
                    c < nsiblings - 1)
                    continue;
                int sibling = bn_topology_child (topology, parent, c);
                if (sibling != up)
                    S_TRUE (!bn_topology_serves (topology, sibling, eid));
            }
        }
    }
    S_EQ (bn_topology_engine_leaf (topology, -1), -1);
    S_EQ (bn_topology_engine_node (topology, -1), -1);
    S_TRUE (!bn_topology_serves (topology, 0, -1));
}

START_TEST (test_usage)
{
    //  The controller builds IPython Parallel's tree at depth 2 and names
    //  the engine broadcast ports by leaf index.
    char err[256];
    bn_topology_t *topology = bn_topology_new ("kary:2", 2, 0, err, sizeof err);
    ck_assert_ptr_nonnull (topology);
    ck_assert_int_eq (bn_topology_size (topology), 7);
    ck_assert_int_eq (bn_topology_leaves (topology), 4);
    ck_assert_str_eq (bn_topology_describe (topology),
                      "kary:2 depth 2: 7 nodes, 4 leaves");
    ck_assert_str_eq (bn_topology_routing_id (topology, 0), "sub_scheduler_0");
    ck_assert_str_eq (bn_topology_routing_id (topology, 6),
                      "sub_scheduler_011");
    ck_assert_int_eq (bn_topology_leaf_index (topology, 3), 0);
    ck_assert_int_eq (bn_topology_leaf_node (topology, 3), 6);

    //  The root splits a request for engines 5, 2, 0, 7 between its two
    //  children: leaves 0 and 1 (engines 0, 5) under child 0, leaves 2
    //  and 3 (engines 2, 7) under child 1.
    //  (ref: the caller's own, carried along)
    bn_target_t targets[] = {
        {"e5", 5, "r5"}, {"e2", 2, "r2"}, {"e0", 0, "r0"}, {"e7", 7, "r7"}};
    bn_target_t out[4];
    size_t offsets[3];
    ck_assert_int_eq (bn_topology_split (topology, 0, targets, 4, out, offsets,
                                         err, sizeof err),
                      0);
    ck_assert_uint_eq (offsets[0], 0);
    ck_assert_uint_eq (offsets[1], 2);
    ck_assert_uint_eq (offsets[2], 4);
    ck_assert_str_eq (out[0].uuid, "e5");
    ck_assert_str_eq (out[1].uuid, "e0");
    ck_assert_str_eq (out[2].uuid, "e2");
    ck_assert_str_eq (out[3].uuid, "e7");
    ck_assert_str_eq ((const char *)out[0].ref, "r5");
    ck_assert_str_eq ((const char *)out[3].ref, "r7");
    bn_topology_destroy (&topology);
    ck_assert_ptr_null (topology);
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_kary_every_depth)
{
    //  kary:1 ... kary:64 at every depth: sizes, or the cap's error.
    for (int k = 1; k <= 64; k++)
        for (int depth = 0; depth <= BN_TOPOLOGY_MAX_DEPTH; depth++) {
            long nodes = 1, width = 1;
            for (int level = 0; level < depth; level++) {
                width *= k;
                nodes += width;
            }
            char spec[32], err[256] = "";
            snprintf (spec, sizeof spec, "kary:%d", k);
            bn_topology_t *topology =
                bn_topology_new (spec, depth, 0, err, sizeof err);
            if (nodes > BN_TOPOLOGY_MAX_NODES) {
                ck_assert_ptr_null (topology);
                ck_assert_msg (strstr (err, "1024 nodes") != NULL, "%s", err);
                continue;
            }
            ck_assert_msg (topology, "%s depth %d: %s", spec, depth, err);
            ck_assert_str_eq (bn_topology_spec (topology), spec);
            ck_assert_int_eq (bn_topology_size (topology), nodes);
            ck_assert_int_eq (bn_topology_leaves (topology), width);
            s_check_tree (topology);
            //  Every leaf sits at the bottom level.
            for (int leaf = 0; leaf < width; leaf++)
                ck_assert_int_eq (
                    bn_topology_level (topology,
                                       bn_topology_leaf_node (topology, leaf)),
                    depth);
            bn_topology_destroy (&topology);
        }
}
END_TEST

START_TEST (test_stock_names)
{
    //  IPython Parallel 7.1.0 names its schedulers '0', then for each
    //  depth d the 2^d paths format(i, f"0{d+1}b"), and a leaf's engine
    //  port index is int(path, 2).
    for (int depth = 0; depth <= BN_TOPOLOGY_MAX_DEPTH; depth++) {
        bn_topology_t *topology = s_new ("kary:2", depth, 0);
        int node = 0;
        ck_assert_str_eq (bn_topology_routing_id (topology, node++),
                          "sub_scheduler_0");
        for (int d = 1; d <= depth; d++)
            for (int i = 0; i < (1 << d); i++) {
                char expected[64] = "sub_scheduler_";
                size_t length = strlen (expected);
                for (int bit = d; bit >= 0; bit--)
                    expected[length++] = (i >> bit) & 1 ? '1' : '0';
                expected[length] = '\0';
                ck_assert_str_eq (bn_topology_routing_id (topology, node),
                                  expected);
                if (d == depth)
                    ck_assert_int_eq (bn_topology_leaf_index (topology, node),
                                      i);
                node++;
            }
        ck_assert_int_eq (node, bn_topology_size (topology));
        bn_topology_destroy (&topology);
    }
}
END_TEST

START_TEST (test_wide_names)
{
    //  Past fanout 10 a path's indices are dotted so they stay unique.
    bn_topology_t *topology = s_new ("kary:12", 2, 0);
    ck_assert_str_eq (bn_topology_path (topology, 1), "0.0");
    ck_assert_str_eq (bn_topology_path (topology, 12), "0.11");
    ck_assert_str_eq (bn_topology_path (topology, 13), "0.0.0");
    ck_assert_str_eq (bn_topology_routing_id (topology, 156),
                      "sub_scheduler_0.11.11");
    ck_assert_int_eq (bn_topology_find (topology, "0.11.11"), 156);
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_0.11.11"),
                      156);
    ck_assert_int_eq (bn_topology_find (topology, "0.12"), -1);
    //  Only the exact spelling names a node.
    const char *wrong[] = {"",
                           "1",
                           "00",
                           "0.",
                           "0.011",
                           "0..1",
                           "0.1x",
                           "0.1.",
                           "0 .1",
                           "0.99999999999",
                           "sub_scheduler_",
                           "sub_scheduler_0.1.2.3"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
        ck_assert_msg (bn_topology_find (topology, wrong[i]) == -1, "%s",
                       wrong[i]);
    ck_assert_int_eq (bn_topology_find (topology, NULL), -1);
    bn_topology_destroy (&topology);

    //  A fanout of 10 still fits single digits.
    topology = s_new ("kary:10", 1, 0);
    ck_assert_str_eq (bn_topology_path (topology, 10), "09");
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_09"), 10);
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_00"), 1);
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_0"), 0);
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_090"), -1);
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_0a"), -1);
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_0.1"), -1);
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_depth_zero)
{
    //  The root is the only node and the only leaf: one engine port.
    bn_topology_t *topology = s_new ("kary:2", 0, 0);
    ck_assert_int_eq (bn_topology_size (topology), 1);
    ck_assert_int_eq (bn_topology_leaves (topology), 1);
    ck_assert (bn_topology_is_leaf (topology, 0));
    ck_assert_int_eq (bn_topology_leaf_index (topology, 0), 0);
    ck_assert_int_eq (bn_topology_engine_node (topology, 41), 0);
    ck_assert_int_eq (bn_topology_max_fanout (topology), 0);
    ck_assert_str_eq (bn_topology_describe (topology),
                      "kary:2 depth 0: 1 node, 1 leaf");
    s_check_tree (topology);

    //  A leaf has no children to split among.
    char err[256] = "";
    bn_target_t target = {"e0", 0, NULL}, out;
    size_t offsets[1];
    ck_assert_int_eq (bn_topology_split (topology, 0, &target, 1, &out, offsets,
                                         err, sizeof err),
                      -1);
    ck_assert_str_eq (err,
                      "node sub_scheduler_0 is a leaf: it has no children");
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_fold)
{
    //  kary:2 at depth 2 folded: the root serves the tree's four leaves,
    //  whose ports and engines stay the tree's.
    bn_topology_t *topology = s_new ("kary:2", 2, 0);
    ck_assert (!bn_topology_folded (topology));
    ck_assert_int_eq (bn_topology_fold (topology), 0);
    ck_assert (bn_topology_folded (topology));
    ck_assert_int_eq (bn_topology_size (topology), 1);
    ck_assert_int_eq (bn_topology_depth (topology), 0);
    ck_assert_int_eq (bn_topology_leaves (topology), 4);
    ck_assert_int_eq (bn_topology_max_fanout (topology), 0);
    ck_assert_str_eq (bn_topology_spec (topology), "kary:2");
    ck_assert_str_eq (bn_topology_describe (topology),
                      "kary:2 depth 2 folded: 1 node, 4 leaves");
    ck_assert (bn_topology_is_leaf (topology, 0));
    ck_assert_int_eq (bn_topology_nchildren (topology, 0), 0);
    ck_assert_int_eq (bn_topology_child (topology, 0, 0), -1);
    ck_assert_int_eq (bn_topology_leaf_index (topology, 0), 0);
    for (int leaf = 0; leaf < 4; leaf++) {
        ck_assert_int_eq (bn_topology_leaf_node (topology, leaf), 0);
        ck_assert (bn_topology_serves_leaf (topology, 0, leaf));
        ck_assert_int_eq (bn_topology_child_toward (topology, 0, leaf), -1);
    }
    ck_assert_int_eq (bn_topology_leaf_node (topology, 4), -1);
    ck_assert_int_eq (bn_topology_engine_leaf (topology, 7), 3);
    ck_assert_int_eq (bn_topology_engine_node (topology, 7), 0);
    ck_assert (bn_topology_serves (topology, 0, 7));
    ck_assert_str_eq (bn_topology_routing_id (topology, 0), "sub_scheduler_0");
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_0"), 0);
    ck_assert_int_eq (bn_topology_find (topology, "sub_scheduler_00"), -1);
    //  the root has no children to split among
    bn_target_t target = {"e0", 0, NULL}, out;
    size_t offsets[1];
    ck_assert_int_eq (
        bn_topology_split (topology, 0, &target, 1, &out, offsets, NULL, 0),
        -1);

    //  The ways down stay the tree's: leaf 2 is child 1's child 0.
    ck_assert_int_eq (bn_topology_leaf_step (topology, 2, 0), 1);
    ck_assert_int_eq (bn_topology_leaf_step (topology, 2, 1), 0);
    ck_assert_int_eq (bn_topology_leaf_step (topology, 2, 2), -1);
    ck_assert_int_eq (bn_topology_leaf_step (topology, 4, 0), -1);
    ck_assert_int_eq (bn_topology_leaf_step (topology, -1, 0), -1);
    ck_assert_int_eq (bn_topology_leaf_step (topology, 0, -1), -1);
    bn_topology_destroy (&topology);

    //  A binomial tree's leaves sit at different levels: leaves 0 ... 3 are
    //  nodes 3 (path 03), 5 (001), 6 (010) and 7 (0000).
    topology = s_new ("binomial", 3, 0);
    const int ways[4][4] = {
        {2, -1, -1, -1}, {0, 1, -1, -1}, {1, 0, -1, -1}, {0, 0, 0, -1}};
    for (int fold = 0; fold < 2; fold++) {
        if (fold)
            ck_assert_int_eq (bn_topology_fold (topology), 0);
        ck_assert_int_eq (bn_topology_leaves (topology), 4);
        for (int leaf = 0; leaf < 4; leaf++)
            for (int level = 0; level < 4; level++)
                ck_assert_int_eq (bn_topology_leaf_step (topology, leaf, level),
                                  ways[leaf][level]);
    }
    bn_topology_destroy (&topology);

    //  A tree of one node stays as it is.
    topology = s_new ("kary:2", 0, 0);
    ck_assert_int_eq (bn_topology_fold (topology), 0);
    ck_assert (!bn_topology_folded (topology));
    ck_assert_str_eq (bn_topology_describe (topology),
                      "kary:2 depth 0: 1 node, 1 leaf");
    ck_assert_int_eq (bn_topology_leaf_step (topology, 0, 0), -1);
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_default_depth)
{
    //  Depth not given: 1 for kary and binomial, as IPython Parallel.
    bn_topology_t *topology = s_new ("kary:2", BN_TOPOLOGY_DEPTH_DEFAULT, 0);
    ck_assert_int_eq (bn_topology_depth (topology), 1);
    ck_assert_int_eq (bn_topology_size (topology), 3);
    bn_topology_destroy (&topology);
    topology = s_new ("binomial", BN_TOPOLOGY_DEPTH_DEFAULT, 0);
    ck_assert_int_eq (bn_topology_depth (topology), 1);
    ck_assert_int_eq (bn_topology_size (topology), 2);
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_fanouts)
{
    bn_topology_t *topology = s_new ("4x16", BN_TOPOLOGY_DEPTH_DEFAULT, 0);
    ck_assert_str_eq (bn_topology_spec (topology), "4x16");
    ck_assert_int_eq (bn_topology_depth (topology), 2);
    ck_assert_int_eq (bn_topology_size (topology), 1 + 4 + 64);
    ck_assert_int_eq (bn_topology_leaves (topology), 64);
    ck_assert_int_eq (bn_topology_nchildren (topology, 0), 4);
    ck_assert_int_eq (bn_topology_nchildren (topology, 1), 16);
    ck_assert_int_eq (bn_topology_max_fanout (topology), 16);
    ck_assert_str_eq (bn_topology_path (topology, 5), "0.0.0");
    s_check_tree (topology);
    bn_topology_destroy (&topology);

    //  A depth given with fanouts must agree with them.
    topology = s_new ("4x16", 2, 0);
    bn_topology_destroy (&topology);

    struct {
        const char *spec;
        int size, leaves, depth;
    } cases[] = {{"16", 17, 16, 1},        {"2x3x4", 1 + 2 + 6 + 24, 24, 3},
                 {"1x1x1x1x1x1", 7, 1, 6}, {"3x1x2", 1 + 3 + 3 + 6, 6, 3},
                 {"1023", 1024, 1023, 1},  {"2x2x2x2x2x2", 127, 64, 6}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        topology = s_new (cases[i].spec, BN_TOPOLOGY_DEPTH_DEFAULT, 0);
        ck_assert_str_eq (bn_topology_spec (topology), cases[i].spec);
        ck_assert_int_eq (bn_topology_size (topology), cases[i].size);
        ck_assert_int_eq (bn_topology_leaves (topology), cases[i].leaves);
        ck_assert_int_eq (bn_topology_depth (topology), cases[i].depth);
        s_check_tree (topology);
        bn_topology_destroy (&topology);
    }
}
END_TEST

START_TEST (test_binomial)
{
    for (int depth = 0; depth <= BN_TOPOLOGY_MAX_DEPTH; depth++) {
        bn_topology_t *topology = s_new ("binomial", depth, 0);
        ck_assert_str_eq (bn_topology_spec (topology), "binomial");
        ck_assert_int_eq (bn_topology_size (topology), 1 << depth);
        ck_assert_int_eq (bn_topology_leaves (topology),
                          depth ? 1 << (depth - 1) : 1);
        ck_assert_int_eq (bn_topology_nchildren (topology, 0), depth);
        s_check_tree (topology);
        //  Child c of a node with k children has k - 1 - c children, and
        //  a subtree of order k holds 2^k nodes.
        for (int node = 0; node < bn_topology_size (topology); node++) {
            int k = bn_topology_nchildren (topology, node);
            for (int c = 0; c < k; c++)
                ck_assert_int_eq (
                    bn_topology_nchildren (
                        topology, bn_topology_child (topology, node, c)),
                    k - 1 - c);
        }
        bn_topology_destroy (&topology);
    }

    //  Order 3: root 0 with children 1 (order 2), 2 (order 1), 3 (leaf).
    bn_topology_t *topology = s_new ("binomial", 3, 0);
    ck_assert (bn_topology_is_leaf (topology, 3));
    ck_assert_int_eq (bn_topology_leaf_index (topology, 3), 0);
    ck_assert_int_eq (bn_topology_level (topology, 3), 1);
    ck_assert_str_eq (bn_topology_path (topology, 6), "010");
    ck_assert_str_eq (bn_topology_path (topology, 7), "0000");
    ck_assert_int_eq (bn_topology_level (topology, 7), 3);
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_auto)
{
    //  The written rule: unknown -> kary:8 depth 1, <= 64 -> depth 0,
    //  <= 512 -> kary:8 depth 1, <= 2048 -> kary:32 depth 1, then kary:16
    //  depth 2.
    struct {
        int engines;
        const char *spec;
        int depth, leaves;
    } cases[] = {{0, "kary:8", 1, 8},       {1, "kary:1", 0, 1},
                 {64, "kary:1", 0, 1},      {65, "kary:8", 1, 8},
                 {512, "kary:8", 1, 8},     {513, "kary:32", 1, 32},
                 {1024, "kary:32", 1, 32},  {2048, "kary:32", 1, 32},
                 {2049, "kary:16", 2, 256}, {1000000, "kary:16", 2, 256}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bn_topology_t *topology =
            s_new ("auto", BN_TOPOLOGY_DEPTH_DEFAULT, cases[i].engines);
        ck_assert_str_eq (bn_topology_spec (topology), cases[i].spec);
        ck_assert_int_eq (bn_topology_depth (topology), cases[i].depth);
        ck_assert_int_eq (bn_topology_leaves (topology), cases[i].leaves);
        s_check_tree (topology);
        //  The resolved spec and depth rebuild the same tree.
        bn_topology_t *again = s_new (bn_topology_spec (topology),
                                      bn_topology_depth (topology), 0);
        ck_assert_int_eq (bn_topology_size (again),
                          bn_topology_size (topology));
        bn_topology_destroy (&again);
        bn_topology_destroy (&topology);
    }

    //  With a depth: the smallest kary:K (K >= 2) giving 64 engines a leaf.
    struct {
        int engines, depth;
        const char *spec;
    } sized[] = {{0, 1, "kary:8"},       {0, 0, "kary:8"},
                 {100, 1, "kary:2"},     {1024, 1, "kary:16"},
                 {1025, 1, "kary:17"},   {1024, 2, "kary:4"},
                 {1024, 6, "kary:2"},    {100000, 1, "kary:1023"},
                 {100000, 2, "kary:31"}, {100000, 6, "kary:2"}};
    for (size_t i = 0; i < sizeof sized / sizeof sized[0]; i++) {
        bn_topology_t *topology =
            s_new ("auto", sized[i].depth, sized[i].engines);
        ck_assert_str_eq (bn_topology_spec (topology), sized[i].spec);
        ck_assert_int_eq (bn_topology_depth (topology), sized[i].depth);
        s_check_tree (topology);
        bn_topology_destroy (&topology);
    }
}
END_TEST

//  Split targets at a node and check each child's list: exactly the
//  targets below it, in the order given.
static void
s_check_split (bn_topology_t *topology, int node, const bn_target_t *targets,
               size_t n)
{
    int nchildren = bn_topology_nchildren (topology, node);
    bn_target_t *out = calloc (n + 1, sizeof (bn_target_t));
    size_t *offsets = calloc ((size_t)nchildren + 1, sizeof (size_t));
    char err[256] = "";
    ck_assert_msg (bn_topology_split (topology, node, targets, n, out, offsets,
                                      err, sizeof err) == 0,
                   "%s", err);
    S_EQ (offsets[0], 0);
    S_EQ (offsets[nchildren], n);
    for (int c = 0; c < nchildren; c++) {
        int child = bn_topology_child (topology, node, c);
        size_t slot = offsets[c];
        S_TRUE ((offsets[c]) <= (offsets[c + 1]));
        for (size_t i = 0; i < n; i++)
            if (bn_topology_serves (topology, child, targets[i].eid)) {
                S_TRUE ((slot) < (offsets[c + 1]));
                S_EQ (out[slot].uuid, targets[i].uuid);
                S_EQ (out[slot].eid, targets[i].eid);
                slot++;
            }
        S_EQ (slot, offsets[c + 1]);
        //  Recurse: the child splits its own share.
        if (!bn_topology_is_leaf (topology, child))
            s_check_split (topology, child, out + offsets[c],
                           offsets[c + 1] - offsets[c]);
    }
    free (out);
    free (offsets);
}

START_TEST (test_split_holes)
{
    //  Engines with holes (ids left by unregistered engines), in an order
    //  that is not sorted, through several shapes.
    static char uuids[64][24];
    bn_target_t targets[64];
    size_t n = 0;
    for (int eid = 0; eid < 200 && n < 64; eid += 1 + (eid * 7) % 5) {
        snprintf (uuids[n], sizeof uuids[n], "engine-%d", eid);
        targets[n] = (bn_target_t){uuids[n], eid, NULL};
        n++;
    }
    //  Reverse the second half so targets are not in id order.
    for (size_t i = n / 2, j = n - 1; i < j; i++, j--) {
        bn_target_t swap = targets[i];
        targets[i] = targets[j];
        targets[j] = swap;
    }
    const char *specs[] = {"kary:2",   "kary:3", "4x16",
                           "binomial", "kary:1", "kary:64"};
    int depths[] = {3, 2, 2, 5, 4, 1};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        bn_topology_t *topology = s_new (specs[s], depths[s], 0);
        s_check_split (topology, 0, targets, n);
        bn_topology_destroy (&topology);
    }

    //  kary:8: engines 3 and 11 under child 3 only; the others get none.
    bn_topology_t *topology = s_new ("kary:8", 1, 0);
    bn_target_t two[] = {{"a", 11, NULL}, {"b", 3, NULL}};
    bn_target_t out[2];
    size_t offsets[9];
    char err[256];
    ck_assert_int_eq (
        bn_topology_split (topology, 0, two, 2, out, offsets, err, sizeof err),
        0);
    for (int c = 0; c <= 8; c++)
        ck_assert_uint_eq (offsets[c], c <= 3 ? 0 : 2);
    ck_assert_str_eq (out[0].uuid, "a");
    ck_assert_str_eq (out[1].uuid, "b");
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_split_one_and_none)
{
    bn_topology_t *topology = s_new ("kary:4", 3, 0);
    //  One engine: one path of children gets it.
    bn_target_t one = {"only", 37, NULL};
    s_check_split (topology, 0, &one, 1);
    int node = s_route (topology, 37);
    ck_assert_int_eq (bn_topology_leaf_index (topology, node), 37 % 64);

    //  Zero engines: every child gets an empty list.
    bn_target_t out[1];
    size_t offsets[5];
    char err[256];
    ck_assert_int_eq (
        bn_topology_split (topology, 0, NULL, 0, out, offsets, err, sizeof err),
        0);
    for (int c = 0; c <= 4; c++)
        ck_assert_uint_eq (offsets[c], 0);
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_split_errors)
{
    bn_topology_t *topology = s_new ("kary:2", 2, 0);
    char err[256] = "";
    bn_target_t out[2];
    size_t offsets[3];
    //  Engine 1 is served by leaf 1, under node 1, not node 2.
    bn_target_t wrong[] = {{"e2", 2, NULL}, {"e1", 1, NULL}};
    ck_assert_int_eq (bn_topology_split (topology, 2, wrong, 2, out, offsets,
                                         err, sizeof err),
                      -1);
    ck_assert_str_eq (err, "engine 1 is not served by the subtree of "
                           "sub_scheduler_01");
    bn_target_t negative[] = {{"bad", -3, NULL}};
    ck_assert_int_eq (bn_topology_split (topology, 0, negative, 1, out, offsets,
                                         err, sizeof err),
                      -1);
    ck_assert_str_eq (err, "engine -3 is not served by the subtree of "
                           "sub_scheduler_0");
    ck_assert_int_eq (bn_topology_child_toward (topology, 1, 2), -1);
    ck_assert_int_eq (bn_topology_child_toward (topology, 0, 4), -1);
    ck_assert_int_eq (bn_topology_child_toward (topology, 0, -1), -1);
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_split_leaves)
{
    //  kary:2 depth 2, leaves 0-1 under node 1, 2-3 under node 2. Engines 0
    //  and 5 are behind host nodes hanging below leaves 3 and 0 (doc/
    //  hosts.md); engines 1 and 2 go by their ids.
    bn_topology_t *topology = s_new ("kary:2", 2, 0);
    bn_target_t targets[] = {
        {"h0", 0, NULL}, {"d1", 1, NULL}, {"d2", 2, NULL}, {"h5", 5, NULL}};
    int leaves[] = {3, -1, -1, 0};
    bn_target_t out[4];
    size_t offsets[3];
    char err[256] = "";
    ck_assert_int_eq (bn_topology_split_leaves (topology, 0, targets, leaves, 4,
                                                out, offsets, err, sizeof err),
                      0);
    ck_assert_uint_eq (offsets[1], 2);
    ck_assert_str_eq (out[0].uuid, "d1");
    ck_assert_str_eq (out[1].uuid, "h5");
    ck_assert_str_eq (out[2].uuid, "h0");
    ck_assert_str_eq (out[3].uuid, "d2");
    //  below node 2, engine 0 goes to leaf 3 (node 6), engine 2 to leaf 2
    bn_target_t right[] = {{"h0", 0, NULL}, {"d2", 2, NULL}};
    int right_leaves[] = {3, -1};
    ck_assert_int_eq (bn_topology_split_leaves (topology, 2, right,
                                                right_leaves, 2, out, offsets,
                                                err, sizeof err),
                      0);
    ck_assert_str_eq (out[0].uuid, "d2");
    ck_assert_str_eq (out[1].uuid, "h0");
    //  by its id engine 0 would be under node 1, not node 2
    ck_assert_int_eq (bn_topology_split (topology, 2, right, 1, out, offsets,
                                         err, sizeof err),
                      -1);
    //  and a leaf the node does not serve is refused as such
    int wrong_leaves[] = {0, -1};
    ck_assert_int_eq (bn_topology_split_leaves (topology, 2, right,
                                                wrong_leaves, 2, out, offsets,
                                                err, sizeof err),
                      -1);
    ck_assert (bn_topology_serves_leaf (topology, 2, 3));
    ck_assert (bn_topology_serves_leaf (topology, 6, 3));
    ck_assert (!bn_topology_serves_leaf (topology, 1, 3));
    ck_assert (!bn_topology_serves_leaf (topology, 0, 4));
    bn_topology_destroy (&topology);
}
END_TEST

START_TEST (test_bad_specs)
{
    struct {
        const char *spec;
        int depth;
        const char *error;
    } cases[] = {
        {NULL, 1, "no topology given"},
        {"", 1, "no topology given"},
        {"kary:", 1,
         "topology 'kary:': kary:K needs K a whole number in 1 "
         "... 1024"},
        {"kary:0", 1,
         "topology 'kary:0': kary:K needs K a whole number in "
         "1 ... 1024"},
        {"kary:-2", 1,
         "topology 'kary:-2': kary:K needs K a whole number "
         "in 1 ... 1024"},
        {"kary:2x", 1,
         "topology 'kary:2x': kary:K needs K a whole number "
         "in 1 ... 1024"},
        {"kary:99999999999", 1,
         "topology 'kary:99999999999': kary:K needs "
         "K a whole number in 1 ... 1024"},
        {"tree", 1,
         "topology 'tree' is not kary:K, binomial, auto or "
         "per-level fanouts such as 4x16"},
        {"4x", BN_TOPOLOGY_DEPTH_DEFAULT,
         "topology '4x' is not kary:K, binomial, auto or per-level fanouts "
         "such as 4x16"},
        {"x4", BN_TOPOLOGY_DEPTH_DEFAULT,
         "topology 'x4' is not kary:K, binomial, auto or per-level fanouts "
         "such as 4x16"},
        {"4x0", BN_TOPOLOGY_DEPTH_DEFAULT,
         "topology '4x0' is not kary:K, binomial, auto or per-level fanouts "
         "such as 4x16"},
        {"4 x16", BN_TOPOLOGY_DEPTH_DEFAULT,
         "topology '4 x16' is not kary:K, binomial, auto or per-level "
         "fanouts such as 4x16"},
        {"1x1x1x1x1x1x1", BN_TOPOLOGY_DEPTH_DEFAULT,
         "topology '1x1x1x1x1x1x1' has more than 6 levels"},
        {"4x16", 3, "topology '4x16' has depth 2, but depth 3 was given"},
        {"kary:2", 7, "tree depth 7 is outside 0 ... 6"},
        {"kary:2", -2, "tree depth -2 is outside 0 ... 6"},
        {"binomial", 9, "tree depth 9 is outside 0 ... 6"},
        {"kary:32", 2,
         "topology kary:32 at depth 2 needs more than 1024 "
         "nodes (the cap on tree nodes)"},
        {"32x32", BN_TOPOLOGY_DEPTH_DEFAULT,
         "topology 32x32 at depth 2 needs more than 1024 nodes (the cap on "
         "tree nodes)"},
        {"1024", BN_TOPOLOGY_DEPTH_DEFAULT,
         "topology 1024 at depth 1 needs more than 1024 nodes (the cap on "
         "tree nodes)"},
        {"kary:1024", 6,
         "topology kary:1024 at depth 6 needs more than "
         "1024 nodes (the cap on tree nodes)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        bn_topology_t *topology =
            bn_topology_new (cases[i].spec, cases[i].depth, 0, err, sizeof err);
        ck_assert_msg (topology == NULL, "%s accepted", cases[i].spec);
        ck_assert_str_eq (err, cases[i].error);
    }
    char err[256] = "";
    ck_assert_ptr_null (bn_topology_new ("auto", 1, -1, err, sizeof err));
    ck_assert_str_eq (err, "expected engine count -1 is negative");
    //  A NULL error buffer is allowed.
    ck_assert_ptr_null (bn_topology_new ("kary:0", 1, 0, NULL, 0));
}
END_TEST

int
main (void)
{
    Suite *suite = suite_create ("bn_topology");
    TCase *tc = tcase_create ("core");
    tcase_add_test (tc, test_usage);
    tcase_add_test (tc, test_kary_every_depth);
    tcase_add_test (tc, test_stock_names);
    tcase_add_test (tc, test_wide_names);
    tcase_add_test (tc, test_depth_zero);
    tcase_add_test (tc, test_fold);
    tcase_add_test (tc, test_default_depth);
    tcase_add_test (tc, test_fanouts);
    tcase_add_test (tc, test_binomial);
    tcase_add_test (tc, test_auto);
    tcase_add_test (tc, test_split_holes);
    tcase_add_test (tc, test_split_one_and_none);
    tcase_add_test (tc, test_split_errors);
    tcase_add_test (tc, test_split_leaves);
    tcase_add_test (tc, test_bad_specs);
    suite_add_tcase (suite, tc);
    SRunner *runner = srunner_create (suite);
    srunner_run_all (runner, CK_NORMAL);
    int failed = srunner_ntests_failed (runner);
    srunner_free (runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
