/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_value: an owned tree of the Python values pickles carry.  */
#ifndef BN_VALUE_H_INCLUDED
#define BN_VALUE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    BN_VALUE_NONE,
    BN_VALUE_BOOL,
    BN_VALUE_INT,    //  int64_t; wider Python ints are not representable
    BN_VALUE_FLOAT,  //  double
    BN_VALUE_STR,    //  UTF-8 (surrogates allowed, as pickle writes them)
    BN_VALUE_BYTES,  //  bytes, bytearray, memoryview contents
    BN_VALUE_LIST,   //  items in order
    BN_VALUE_TUPLE,  //  items in order
    BN_VALUE_DICT,   //  key/value pairs in insertion order, keys unique
    BN_VALUE_SET,    //  set or frozenset, items unique, insertion order
    BN_VALUE_GLOBAL, //  a module-level name: (module, name)
    BN_VALUE_OBJECT  //  an instance: class, args, state (NEWOBJ/REDUCE+BUILD)
} bn_value_type_t;

//  A value owns its children: destroying a container destroys its items,
//  and a value belongs to at most one container.  Values are not shared,
//  so the tree has no cycles.  Keys in dicts and sets are compared with
//  bn_value_equal: 1, 1.0 and True are three different keys here, unlike
//  in Python (pickles made by Python never carry such pairs).
typedef struct _bn_value_t bn_value_t;

//  Constructors; all return NULL when out of memory.
bn_value_t *bn_value_new_none (void);
bn_value_t *bn_value_new_bool (bool value);
bn_value_t *bn_value_new_int (int64_t value);
bn_value_t *bn_value_new_float (double value);
//  Copies a NUL-terminated UTF-8 string.
bn_value_t *bn_value_new_str (const char *string);
//  Copies `size` bytes of UTF-8 (may contain NULs).
bn_value_t *bn_value_new_strn (const char *data, size_t size);
//  Copies `size` bytes.
bn_value_t *bn_value_new_bytes (const void *data, size_t size);
//  Called once when the bytes given to bn_value_new_bytes_shared are no
//  longer needed, from whichever thread lets go of them last.
typedef void (bn_value_release_fn) (void *data, void *hint);
//  BYTES of `size` bytes at data, not copied: a payload of gigabytes held
//  once. They must stay unchanged until release (data, hint) is called,
//  once, when the value, its copies and the requests sending them (which
//  send them without copying) are done with them: possibly after the
//  value is destroyed, and from the client's I/O thread. NULL when out of
//  memory; release is then not called and data stays the caller's.
bn_value_t *bn_value_new_bytes_shared (const void *data, size_t size,
                                       bn_value_release_fn *release,
                                       void *hint);
bn_value_t *bn_value_new_list (void);
bn_value_t *bn_value_new_tuple (void);
bn_value_t *bn_value_new_dict (void);
bn_value_t *bn_value_new_set (void);
//  A module-level name such as builtins.sum or a class.
bn_value_t *bn_value_new_global (const char *module, const char *name);
//  An instance made as pickle's NEWOBJ does: cls.__new__ (cls, *args), then
//  BUILD with `state` when not NULL.  Takes ownership of cls (usually a
//  GLOBAL), args (a TUPLE or NULL for ()) and state (or NULL); on failure
//  destroys them and returns NULL.
bn_value_t *bn_value_new_object (bn_value_t *cls, bn_value_t *args,
                                 bn_value_t *state);
//  An instance made as pickle's REDUCE does: callable (*args).  Takes
//  ownership of both (args a TUPLE or NULL for ()); on failure destroys them
//  and returns NULL.
bn_value_t *bn_value_new_reduce (bn_value_t *callable, bn_value_t *args);

//  Destroy a value and everything in it; NULLs the pointer; NULL-safe.
void bn_value_destroy (bn_value_t **self_p);

//  Deep copy (BYTES share their unchanging bytes with the original);
//  NULL when out of memory.
bn_value_t *bn_value_dup (const bn_value_t *self);

//  True if both trees hold the same values: same types (True is not 1),
//  lists/tuples in order, dicts and sets regardless of order, NaN equal to
//  NaN.  Two NULLs are equal.
bool bn_value_equal (const bn_value_t *self, const bn_value_t *other);

//  Python's repr of the value as a malloc'd string the caller frees:
//  [1, 'hi', b'\x00', None, True, 3.5, {'a': 1}, (1,), set()].  GLOBALs
//  print as <global module.name>, OBJECTs as <module.name object>.
//  NULL when out of memory.
char *bn_value_repr (const bn_value_t *self);

bn_value_type_t bn_value_type (const bn_value_t *self);

//  The Python type name: 'NoneType', 'bool', 'int', 'float', 'str',
//  'bytes', 'list', 'tuple', 'dict', 'set'; 'global' for a GLOBAL; for an
//  OBJECT its class name ('Reference'), or 'object'.
const char *bn_value_type_name (const bn_value_t *self);

//  Getters return 0 / false / NULL for values of other types and for a
//  NULL value, so lookups in a peer's tree can be chained:
//  bn_value_str (bn_value_dict_get (state, "name")) is NULL when absent.
bool bn_value_bool (const bn_value_t *self);
//  INT, or BOOL as 0/1.
int64_t bn_value_int (const bn_value_t *self);
//  FLOAT, or INT/BOOL converted.
double bn_value_float (const bn_value_t *self);
//  NUL-terminated contents of a STR.
const char *bn_value_str (const bn_value_t *self);
size_t bn_value_str_size (const bn_value_t *self);
//  Contents of BYTES (followed by a NUL not counted in the size, except
//  bytes made by bn_value_new_bytes_shared).
const void *bn_value_bytes_data (const bn_value_t *self);
size_t bn_value_bytes_size (const bn_value_t *self);
//  A hold on the bytes of BYTES for what outlives the value, such as a
//  frame sending them: they stay valid until bn_value_bytes_let_go (hold),
//  even once the value is destroyed. NULL for other values.
void *bn_value_bytes_hold (const bn_value_t *self);
void bn_value_bytes_let_go (void *hold);
//  Module and name of a GLOBAL.
const char *bn_value_global_module (const bn_value_t *self);
const char *bn_value_global_name (const bn_value_t *self);

//  Number of items of a LIST, TUPLE, SET or DICT (pairs); 0 otherwise.
size_t bn_value_size (const bn_value_t *self);
//  Item `index` of a LIST, TUPLE or SET (key of a DICT), borrowed; NULL if
//  out of range or not a container.
bn_value_t *bn_value_item (const bn_value_t *self, size_t index);
//  Value for a string key of a DICT, borrowed; NULL if absent.
bn_value_t *bn_value_dict_get (const bn_value_t *self, const char *key);
//  Value for any key of a DICT, borrowed; NULL if absent.
bn_value_t *bn_value_dict_lookup (const bn_value_t *self,
                                  const bn_value_t *key);
//  Key / value of pair `index` of a DICT, borrowed; NULL if out of range.
bn_value_t *bn_value_dict_key (const bn_value_t *self, size_t index);
bn_value_t *bn_value_dict_value (const bn_value_t *self, size_t index);
//  True if a SET holds an item equal to `item`.
bool bn_value_set_contains (const bn_value_t *self, const bn_value_t *item);

//  Parts of an OBJECT, borrowed: class (usually a GLOBAL), args (TUPLE or
//  NULL), state (or NULL), items added by APPENDS (a LIST) or SETITEMS (a
//  DICT) after construction, as for list and dict subclasses (or NULL), and
//  the keyword args of NEWOBJ_EX (a DICT or NULL).
bn_value_t *bn_value_object_class (const bn_value_t *self);
bn_value_t *bn_value_object_args (const bn_value_t *self);
bn_value_t *bn_value_object_state (const bn_value_t *self);
bn_value_t *bn_value_object_items (const bn_value_t *self);
bn_value_t *bn_value_object_kwargs (const bn_value_t *self);
//  True for an OBJECT made by REDUCE (callable (*args)), false for NEWOBJ.
bool bn_value_object_is_reduce (const bn_value_t *self);
//  True if the value is an OBJECT whose class is the GLOBAL module.name.
bool bn_value_object_is (const bn_value_t *self, const char *module,
                         const char *name);

//  Append `item` to a LIST or TUPLE, or add it to a SET (a duplicate is
//  destroyed).  Takes ownership of `item`; on failure destroys it and
//  returns -1, else 0.  A NULL item (from a constructor out of memory)
//  fails, so calls can nest: bn_value_append (list, bn_value_new_int (1)).
int bn_value_append (bn_value_t *self, bn_value_t *item);
//  Set `key` to `value` in a DICT; an existing equal key keeps its place
//  and its old value is destroyed, as is the surplus key.  Takes ownership
//  of both; on failure (or if either is NULL) destroys them and returns -1,
//  else 0.
int bn_value_dict_set (bn_value_t *self, bn_value_t *key, bn_value_t *value);
//  bn_value_dict_set with a STR key copied from `key`.
int bn_value_dict_set_str (bn_value_t *self, const char *key,
                           bn_value_t *value);
//  As bn_value_append and bn_value_dict_set, but whatever they would
//  destroy (a duplicate set item, a replaced dict value, a surplus key) is
//  appended to `spill`, a LIST, instead: for callers that keep borrowed
//  pointers into the tree, such as a pickle memo.
int bn_value_append_spill (bn_value_t *self, bn_value_t *item,
                           bn_value_t *spill);
int bn_value_dict_set_spill (bn_value_t *self, bn_value_t *key,
                             bn_value_t *value, bn_value_t *spill);
//  Put `item` at `index` of a LIST, TUPLE or SET and return the item it
//  replaces (the caller owns it).  For a SET, keeping items unique is up to
//  the caller.
bn_value_t *bn_value_swap_item (bn_value_t *self, size_t index,
                                bn_value_t *item);
//  Put `value` in pair `index` of a DICT and return the old value (the
//  caller owns it).
bn_value_t *bn_value_dict_swap_value (bn_value_t *self, size_t index,
                                      bn_value_t *value);
//  Replace an OBJECT's state, items or kwargs (ownership taken, may be
//  NULL) and return the old one (the caller owns it).
bn_value_t *bn_value_object_swap_state (bn_value_t *self, bn_value_t *state);
bn_value_t *bn_value_object_swap_items (bn_value_t *self, bn_value_t *items);
bn_value_t *bn_value_object_swap_kwargs (bn_value_t *self, bn_value_t *kwargs);

#endif
