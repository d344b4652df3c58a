/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_topology: the broadcast tree's node table, built breadth-first from
    a per-node rule (how many children a node of a given level or order
    has), so every shape shares one builder.  */
#include "bn_topology.h"

#include "bn_error.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Expected engines a leaf serves when auto sizes a tree of given depth.
#define S_AUTO_PER_LEAF 64

//  The auto rule: up to max_engines expected engines, use kary:fanout at
//  depth. Row 0 is for an unknown count; the last row covers the rest.
static const struct {
    int max_engines;
    int fanout;
    int depth;
} s_auto_rules[] = {{0, 8, 1},         //  unknown: a few leaf ports
                    {64, 1, 0},        //  the root serves every engine
                    {512, 8, 1},       //  <= 64 engines a leaf
                    {2048, 32, 1},     //  <= 64 engines a leaf
                    {INT_MAX, 16, 2}}; //  256 leaves, 273 nodes

typedef enum { S_KARY, S_FANOUTS, S_BINOMIAL } s_kind_t;

typedef struct {
    int level;                   //  root 0
    int parent;                  //  -1 for the root
    int first_child;             //  node index of child 0, -1 for a leaf
    int nchildren;               //  0 for a leaf
    int child_index;             //  position among the parent's children
    int order;                   //  binomial order (children this node has)
    int leaf;                    //  leaf index, -1 for an inner node
    char id[BN_TOPOLOGY_ID_MAX]; //  "sub_scheduler_" + path
} s_node_t;

struct _bn_topology_t {
    s_kind_t kind;                      //  how children are counted
    int fanouts[BN_TOPOLOGY_MAX_DEPTH]; //  children per level
    int depth;                          //  levels below the root
    int size;                           //  nodes
    int nleaves;                        //  leaves
    int max_fanout;                     //  widest node
    bool folded;                        //  the root serves every leaf
    short *steps;                       //  folded: per leaf, the child
                                        //  index taken at each level on
                                        //  the way down to it, -1 past it
    s_node_t *nodes;                    //  breadth-first, root 0
    int *leaf_nodes;                    //  leaf index -> node index
    char spec[64];                      //  resolved spec
    char description[128];              //  for logs
};

//  Parse a decimal int in 1 ... max from text up to end; -1 if not one.
static int
s_parse_count (const char *text, const char *end, long max)
{
    if (text == end || *text < '0' || *text > '9')
        return -1;
    long value = 0;
    for (const char *p = text; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        value = value * 10 + (*p - '0');
        if (value > max)
            return -1;
    }
    return value >= 1 ? (int)value : -1;
}

//  Number of children a node of this level and order gets.
static int
s_children_of (bn_topology_t *self, int level, int order)
{
    if (self->kind == S_BINOMIAL)
        return order;
    return level < self->depth ? self->fanouts[level] : 0;
}

//  Nodes the shape needs, or -1 past the cap (without building it).
static long
s_count_nodes (bn_topology_t *self)
{
    if (self->kind == S_BINOMIAL)
        return 1L << self->depth;
    long total = 1, width = 1;
    for (int level = 0; level < self->depth; level++) {
        width *= self->fanouts[level];
        total += width;
        if (total > BN_TOPOLOGY_MAX_NODES)
            return -1;
    }
    return total;
}

//  Fill the node table breadth-first; the table doubles as the queue.
static void
s_build (bn_topology_t *self)
{
    bool digits = self->max_fanout <= 10;
    s_node_t *root = &self->nodes[0];
    *root = (s_node_t){0, -1, -1, 0, 0, self->depth, -1, ""};
    snprintf (root->id, sizeof root->id, "%s0", BN_TOPOLOGY_ID_PREFIX);
    int next = 1;
    for (int index = 0; index < self->size; index++) {
        s_node_t *node = &self->nodes[index];
        node->nchildren = s_children_of (self, node->level, node->order);
        if (node->nchildren == 0) {
            node->leaf = self->nleaves;
            self->leaf_nodes[self->nleaves++] = index;
            continue;
        }
        node->first_child = next;
        for (int c = 0; c < node->nchildren; c++) {
            assert (next < self->size);
            s_node_t *child = &self->nodes[next++];
            *child = (s_node_t){node->level + 1,     index, -1, 0, c,
                                node->order - 1 - c, -1,    ""};
            snprintf (child->id, sizeof child->id, digits ? "%s%d" : "%s.%d",
                      node->id, c);
        }
    }
    assert (next == self->size);
}

//  Parse spec into kind, fanouts and depth; -1 with a message on error.
static int
s_parse (bn_topology_t *self, const char *spec, int depth, int engines,
         char *err, size_t errsize)
{
    if (depth != BN_TOPOLOGY_DEPTH_DEFAULT &&
        (depth < 0 || depth > BN_TOPOLOGY_MAX_DEPTH)) {
        bn_error_set (err, errsize, "tree depth %d is outside 0 ... %d", depth,
                      BN_TOPOLOGY_MAX_DEPTH);
        return -1;
    }
    if (engines < 0) {
        bn_error_set (err, errsize, "expected engine count %d is negative",
                      engines);
        return -1;
    }
    if (strncmp (spec, "kary:", 5) == 0) {
        int fanout = s_parse_count (spec + 5, spec + strlen (spec),
                                    BN_TOPOLOGY_MAX_NODES);
        if (fanout < 0) {
            bn_error_set (err, errsize,
                          "topology '%s': kary:K needs K a whole number "
                          "in 1 ... %d",
                          spec, BN_TOPOLOGY_MAX_NODES);
            return -1;
        }
        self->kind = S_KARY;
        self->depth = depth == BN_TOPOLOGY_DEPTH_DEFAULT ? 1 : depth;
        for (int level = 0; level < self->depth; level++)
            self->fanouts[level] = fanout;
        snprintf (self->spec, sizeof self->spec, "kary:%d", fanout);
        return 0;
    }
    if (strcmp (spec, "binomial") == 0) {
        self->kind = S_BINOMIAL;
        self->depth = depth == BN_TOPOLOGY_DEPTH_DEFAULT ? 1 : depth;
        snprintf (self->spec, sizeof self->spec, "binomial");
        return 0;
    }
    if (strcmp (spec, "auto") == 0) {
        int fanout = 8;
        if (depth == BN_TOPOLOGY_DEPTH_DEFAULT) {
            size_t row = 0;
            if (engines > 0)
                for (row = 1; engines > s_auto_rules[row].max_engines; row++)
                    ;
            fanout = s_auto_rules[row].fanout;
            depth = s_auto_rules[row].depth;
        } else if (depth > 0 && engines > 0) {
            //  Smallest K >= 2 with K^depth leaves of S_AUTO_PER_LEAF
            //  covering the engines, or the widest tree under the cap.
            for (fanout = 2;; fanout++) {
                long leaves = 1, nodes = 1;
                for (int level = 0; level < depth; level++) {
                    leaves *= fanout;
                    nodes += leaves;
                }
                if (nodes > BN_TOPOLOGY_MAX_NODES) {
                    fanout = fanout > 2 ? fanout - 1 : 2;
                    break;
                }
                if (leaves * S_AUTO_PER_LEAF >= engines)
                    break;
            }
        }
        self->kind = S_KARY;
        self->depth = depth;
        for (int level = 0; level < depth; level++)
            self->fanouts[level] = fanout;
        snprintf (self->spec, sizeof self->spec, "kary:%d", fanout);
        return 0;
    }
    //  Per-level fanouts: AxBxC
    int factors = 0;
    const char *start = spec;
    while (true) {
        const char *end = strchr (start, 'x');
        if (!end)
            end = start + strlen (start);
        int fanout = s_parse_count (start, end, BN_TOPOLOGY_MAX_NODES);
        if (fanout < 0 || factors == BN_TOPOLOGY_MAX_DEPTH) {
            if (fanout < 0)
                bn_error_set (err, errsize,
                              "topology '%s' is not kary:K, binomial, auto "
                              "or per-level fanouts such as 4x16",
                              spec);
            else
                bn_error_set (err, errsize,
                              "topology '%s' has more than %d levels", spec,
                              BN_TOPOLOGY_MAX_DEPTH);
            return -1;
        }
        self->fanouts[factors++] = fanout;
        if (*end == '\0')
            break;
        start = end + 1;
    }
    if (depth != BN_TOPOLOGY_DEPTH_DEFAULT && depth != factors) {
        bn_error_set (err, errsize,
                      "topology '%s' has depth %d, but depth %d was given",
                      spec, factors, depth);
        return -1;
    }
    self->kind = S_FANOUTS;
    self->depth = factors;
    size_t used = 0;
    for (int level = 0; level < factors; level++)
        used += snprintf (self->spec + used, sizeof self->spec - used,
                          level ? "x%d" : "%d", self->fanouts[level]);
    return 0;
}

bn_topology_t *
bn_topology_new (const char *spec, int depth, int engines, char *err,
                 size_t errsize)
{
    if (!spec || !*spec) {
        bn_error_set (err, errsize, "no topology given");
        return NULL;
    }
    bn_topology_t *self = calloc (1, sizeof (bn_topology_t));
    if (!self) {
        bn_error_set (err, errsize, "out of memory");
        return NULL;
    }
    if (s_parse (self, spec, depth, engines, err, errsize)) {
        free (self);
        return NULL;
    }
    long size = s_count_nodes (self);
    if (size < 0 || size > BN_TOPOLOGY_MAX_NODES) {
        bn_error_set (err, errsize,
                      "topology %s at depth %d needs more than %d nodes "
                      "(the cap on tree nodes)",
                      self->spec, self->depth, BN_TOPOLOGY_MAX_NODES);
        free (self);
        return NULL;
    }
    self->size = (int)size;
    for (int level = 0; level < self->depth; level++) {
        int fanout =
            self->kind == S_BINOMIAL ? self->depth : self->fanouts[level];
        if (fanout > self->max_fanout)
            self->max_fanout = fanout;
    }
    self->nodes = calloc ((size_t)self->size, sizeof (s_node_t));
    self->leaf_nodes = calloc ((size_t)self->size, sizeof (int));
    if (!self->nodes || !self->leaf_nodes) {
        bn_error_set (err, errsize, "out of memory");
        bn_topology_destroy (&self);
        return NULL;
    }
    s_build (self);
    snprintf (self->description, sizeof self->description,
              "%s depth %d: %d node%s, %d lea%s", self->spec, self->depth,
              self->size, self->size == 1 ? "" : "s", self->nleaves,
              self->nleaves == 1 ? "f" : "ves");
    return self;
}

int
bn_topology_fold (bn_topology_t *self)
{
    assert (self);
    if (self->size == 1)
        return 0;
    short *steps =
        malloc ((size_t)self->nleaves * BN_TOPOLOGY_MAX_DEPTH * sizeof (short));
    if (!steps)
        return -1;
    for (int leaf = 0; leaf < self->nleaves; leaf++)
        for (int level = 0; level < BN_TOPOLOGY_MAX_DEPTH; level++)
            steps[leaf * BN_TOPOLOGY_MAX_DEPTH + level] =
                (short)bn_topology_leaf_step (self, leaf, level);
    self->steps = steps;
    s_node_t *root = &self->nodes[0];
    root->first_child = -1;
    root->nchildren = 0;
    root->leaf = 0;
    for (int leaf = 0; leaf < self->nleaves; leaf++)
        self->leaf_nodes[leaf] = 0;
    snprintf (self->description, sizeof self->description,
              "%s depth %d folded: 1 node, %d leaves", self->spec, self->depth,
              self->nleaves);
    self->size = 1;
    self->depth = 0;
    self->max_fanout = 0;
    self->folded = true;
    return 0;
}

int
bn_topology_leaf_step (bn_topology_t *self, int leaf, int level)
{
    assert (self);
    if (leaf < 0 || leaf >= self->nleaves || level < 0 ||
        level >= BN_TOPOLOGY_MAX_DEPTH)
        return -1;
    if (self->steps)
        return self->steps[leaf * BN_TOPOLOGY_MAX_DEPTH + level];
    int node = self->leaf_nodes[leaf];
    if (self->nodes[node].level <= level)
        return -1;
    while (self->nodes[node].level > level + 1)
        node = self->nodes[node].parent;
    return self->nodes[node].child_index;
}

bool
bn_topology_folded (bn_topology_t *self)
{
    assert (self);
    return self->folded;
}

void
bn_topology_destroy (bn_topology_t **self_p)
{
    assert (self_p);
    if (*self_p) {
        free ((*self_p)->nodes);
        free ((*self_p)->leaf_nodes);
        free ((*self_p)->steps);
        free (*self_p);
        *self_p = NULL;
    }
}

const char *
bn_topology_spec (bn_topology_t *self)
{
    assert (self);
    return self->spec;
}

int
bn_topology_depth (bn_topology_t *self)
{
    assert (self);
    return self->depth;
}

int
bn_topology_size (bn_topology_t *self)
{
    assert (self);
    return self->size;
}

int
bn_topology_leaves (bn_topology_t *self)
{
    assert (self);
    return self->nleaves;
}

int
bn_topology_max_fanout (bn_topology_t *self)
{
    assert (self);
    return self->max_fanout;
}

const char *
bn_topology_describe (bn_topology_t *self)
{
    assert (self);
    return self->description;
}

//  The node at index, asserted in range.
static s_node_t *
s_node (bn_topology_t *self, int node)
{
    assert (self);
    assert (node >= 0 && node < self->size);
    return &self->nodes[node];
}

int
bn_topology_level (bn_topology_t *self, int node)
{
    return s_node (self, node)->level;
}

int
bn_topology_parent (bn_topology_t *self, int node)
{
    return s_node (self, node)->parent;
}

int
bn_topology_nchildren (bn_topology_t *self, int node)
{
    return s_node (self, node)->nchildren;
}

int
bn_topology_child (bn_topology_t *self, int node, int index)
{
    s_node_t *entry = s_node (self, node);
    if (index < 0 || index >= entry->nchildren)
        return -1;
    return entry->first_child + index;
}

int
bn_topology_child_index (bn_topology_t *self, int node)
{
    return s_node (self, node)->child_index;
}

bool
bn_topology_is_leaf (bn_topology_t *self, int node)
{
    return s_node (self, node)->nchildren == 0;
}

int
bn_topology_leaf_index (bn_topology_t *self, int node)
{
    return s_node (self, node)->leaf;
}

int
bn_topology_leaf_node (bn_topology_t *self, int leaf)
{
    assert (self);
    if (leaf < 0 || leaf >= self->nleaves)
        return -1;
    return self->leaf_nodes[leaf];
}

const char *
bn_topology_routing_id (bn_topology_t *self, int node)
{
    return s_node (self, node)->id;
}

const char *
bn_topology_path (bn_topology_t *self, int node)
{
    return s_node (self, node)->id + strlen (BN_TOPOLOGY_ID_PREFIX);
}

int
bn_topology_find (bn_topology_t *self, const char *id)
{
    assert (self);
    if (!id)
        return -1;
    size_t prefix = strlen (BN_TOPOLOGY_ID_PREFIX);
    if (strncmp (id, BN_TOPOLOGY_ID_PREFIX, prefix) == 0)
        id += prefix;
    //  Walk the path from the root, one child index per step, then
    //  confirm the spelling (no leading zeros, no stray characters).
    if (*id++ != '0')
        return -1;
    bool digits = self->max_fanout <= 10;
    int node = 0;
    while (*id) {
        int index = 0;
        if (digits) {
            if (*id < '0' || *id > '9')
                return -1;
            index = *id++ - '0';
        } else {
            if (*id++ != '.' || *id < '0' || *id > '9' ||
                (id[0] == '0' && id[1] >= '0' && id[1] <= '9'))
                return -1;
            while (*id >= '0' && *id <= '9' && index <= BN_TOPOLOGY_MAX_NODES)
                index = index * 10 + (*id++ - '0');
        }
        node = bn_topology_child (self, node, index);
        if (node < 0)
            return -1;
    }
    return node;
}

int
bn_topology_engine_leaf (bn_topology_t *self, int eid)
{
    assert (self);
    return eid < 0 ? -1 : eid % self->nleaves;
}

int
bn_topology_engine_node (bn_topology_t *self, int eid)
{
    assert (self);
    return eid < 0 ? -1 : self->leaf_nodes[eid % self->nleaves];
}

//  The ancestor of `from` (or from itself) that is a child of `node`, or
//  -1 if `from` is not strictly below node.
static int
s_child_above (bn_topology_t *self, int node, int from)
{
    int current = from;
    while (current > 0 && self->nodes[current].parent != node)
        current = self->nodes[current].parent;
    return current > 0 ? current : -1;
}

bool
bn_topology_serves (bn_topology_t *self, int node, int eid)
{
    return bn_topology_serves_leaf (self, node,
                                    bn_topology_engine_leaf (self, eid));
}

bool
bn_topology_serves_leaf (bn_topology_t *self, int node, int leaf)
{
    s_node (self, node);
    int leaf_node = bn_topology_leaf_node (self, leaf);
    if (leaf_node < 0)
        return false;
    return leaf_node == node || s_child_above (self, node, leaf_node) >= 0;
}

int
bn_topology_child_toward (bn_topology_t *self, int node, int leaf)
{
    s_node_t *entry = s_node (self, node);
    int leaf_node = bn_topology_leaf_node (self, leaf);
    if (leaf_node < 0 || entry->nchildren == 0)
        return -1;
    int child = s_child_above (self, node, leaf_node);
    return child < 0 ? -1 : child - entry->first_child;
}

int
bn_topology_split (bn_topology_t *self, int node, const bn_target_t *targets,
                   size_t n, bn_target_t *out, size_t *offsets, char *err,
                   size_t errsize)
{
    return bn_topology_split_leaves (self, node, targets, NULL, n, out, offsets,
                                     err, errsize);
}

//  The leaf serving target i: leaves[i] when given, else its engine's.
static int
s_target_leaf (bn_topology_t *self, const bn_target_t *targets,
               const int *leaves, size_t i)
{
    return leaves && leaves[i] >= 0
               ? leaves[i]
               : bn_topology_engine_leaf (self, targets[i].eid);
}

int
bn_topology_split_leaves (bn_topology_t *self, int node,
                          const bn_target_t *targets, const int *leaves,
                          size_t n, bn_target_t *out, size_t *offsets,
                          char *err, size_t errsize)
{
    s_node_t *entry = s_node (self, node);
    assert (targets || n == 0);
    assert (out || n == 0);
    assert (offsets);
    if (entry->nchildren == 0) {
        bn_error_set (err, errsize, "node %s is a leaf: it has no children",
                      entry->id);
        return -1;
    }
    //  A stable counting sort by child: count, prefix-sum, place.
    int nchildren = entry->nchildren;
    for (int c = 0; c <= nchildren; c++)
        offsets[c] = 0;
    for (size_t i = 0; i < n; i++) {
        int leaf = s_target_leaf (self, targets, leaves, i);
        int c = leaf < 0 ? -1 : bn_topology_child_toward (self, node, leaf);
        if (c < 0) {
            bn_error_set (err, errsize,
                          "engine %d is not served by the subtree of %s",
                          targets[i].eid, entry->id);
            return -1;
        }
        offsets[c + 1]++;
    }
    for (int c = 0; c < nchildren; c++)
        offsets[c + 1] += offsets[c];
    //  offsets[c] now is child c's first slot; advance copies as we place.
    for (size_t i = 0; i < n; i++) {
        int c = bn_topology_child_toward (
            self, node, s_target_leaf (self, targets, leaves, i));
        out[offsets[c]++] = targets[i];
    }
    //  Each offsets[c] moved to child c's end = child c+1's start: shift.
    for (int c = nchildren; c > 0; c--)
        offsets[c] = offsets[c - 1];
    offsets[0] = 0;
    return 0;
}
