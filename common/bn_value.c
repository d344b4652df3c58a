/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_value: an owned tree of the Python values pickles carry.  */
#include "bn_value.h"
#include "bn_utf8.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BN_VALUE_STATIC 1u //  shared constant: None, True, False
#define BN_VALUE_REDUCE 2u //  OBJECT made by REDUCE rather than NEWOBJ

//  Dicts and sets keep a hash index once they hold more items than this;
//  below it a linear scan is cheaper than hashing.
#define BN_VALUE_INDEX_MIN 8

struct _bn_value_t {
    bn_value_type_t type;
    uint32_t flags;
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            char *data; //  NUL-terminated copy; a BYTES value's are shared
            size_t size;
            struct _bn_value_bytes_t *bytes; //  BYTES: what holds data
        } s;
        struct {
            bn_value_t **items; //  a dict stores key, value, key, value...
            size_t size;        //  items, or pairs for a dict
            size_t cap;         //  allocated item pointers
            size_t *index;      //  [0] = mask, then slots of position + 1
        } c;
        struct {
            char *module;
            char *name;
        } g;
        struct {
            bn_value_t *cls;
            bn_value_t *args;
            bn_value_t *state;
            bn_value_t *items;
            bn_value_t *kwargs;
        } o;
    } u;
};

static bn_value_t s_none = {BN_VALUE_NONE, BN_VALUE_STATIC, {.i = 0}};
static bn_value_t s_true = {BN_VALUE_BOOL, BN_VALUE_STATIC, {.b = true}};
static bn_value_t s_false = {BN_VALUE_BOOL, BN_VALUE_STATIC, {.b = false}};

//  Code points from U+0080 up that Python 3.11 (Unicode 14.0) does not
//  consider printable and so escapes in repr(), as inclusive ranges;
//  generated from str.isprintable().
static const uint32_t s_unprintable[] = {
    0x80,    0xa0,    0xad,    0xad,    0x378,   0x379,   0x380,   0x383,
    0x38b,   0x38b,   0x38d,   0x38d,   0x3a2,   0x3a2,   0x530,   0x530,
    0x557,   0x558,   0x58b,   0x58c,   0x590,   0x590,   0x5c8,   0x5cf,
    0x5eb,   0x5ee,   0x5f5,   0x605,   0x61c,   0x61c,   0x6dd,   0x6dd,
    0x70e,   0x70f,   0x74b,   0x74c,   0x7b2,   0x7bf,   0x7fb,   0x7fc,
    0x82e,   0x82f,   0x83f,   0x83f,   0x85c,   0x85d,   0x85f,   0x85f,
    0x86b,   0x86f,   0x88f,   0x897,   0x8e2,   0x8e2,   0x984,   0x984,
    0x98d,   0x98e,   0x991,   0x992,   0x9a9,   0x9a9,   0x9b1,   0x9b1,
    0x9b3,   0x9b5,   0x9ba,   0x9bb,   0x9c5,   0x9c6,   0x9c9,   0x9ca,
    0x9cf,   0x9d6,   0x9d8,   0x9db,   0x9de,   0x9de,   0x9e4,   0x9e5,
    0x9ff,   0xa00,   0xa04,   0xa04,   0xa0b,   0xa0e,   0xa11,   0xa12,
    0xa29,   0xa29,   0xa31,   0xa31,   0xa34,   0xa34,   0xa37,   0xa37,
    0xa3a,   0xa3b,   0xa3d,   0xa3d,   0xa43,   0xa46,   0xa49,   0xa4a,
    0xa4e,   0xa50,   0xa52,   0xa58,   0xa5d,   0xa5d,   0xa5f,   0xa65,
    0xa77,   0xa80,   0xa84,   0xa84,   0xa8e,   0xa8e,   0xa92,   0xa92,
    0xaa9,   0xaa9,   0xab1,   0xab1,   0xab4,   0xab4,   0xaba,   0xabb,
    0xac6,   0xac6,   0xaca,   0xaca,   0xace,   0xacf,   0xad1,   0xadf,
    0xae4,   0xae5,   0xaf2,   0xaf8,   0xb00,   0xb00,   0xb04,   0xb04,
    0xb0d,   0xb0e,   0xb11,   0xb12,   0xb29,   0xb29,   0xb31,   0xb31,
    0xb34,   0xb34,   0xb3a,   0xb3b,   0xb45,   0xb46,   0xb49,   0xb4a,
    0xb4e,   0xb54,   0xb58,   0xb5b,   0xb5e,   0xb5e,   0xb64,   0xb65,
    0xb78,   0xb81,   0xb84,   0xb84,   0xb8b,   0xb8d,   0xb91,   0xb91,
    0xb96,   0xb98,   0xb9b,   0xb9b,   0xb9d,   0xb9d,   0xba0,   0xba2,
    0xba5,   0xba7,   0xbab,   0xbad,   0xbba,   0xbbd,   0xbc3,   0xbc5,
    0xbc9,   0xbc9,   0xbce,   0xbcf,   0xbd1,   0xbd6,   0xbd8,   0xbe5,
    0xbfb,   0xbff,   0xc0d,   0xc0d,   0xc11,   0xc11,   0xc29,   0xc29,
    0xc3a,   0xc3b,   0xc45,   0xc45,   0xc49,   0xc49,   0xc4e,   0xc54,
    0xc57,   0xc57,   0xc5b,   0xc5c,   0xc5e,   0xc5f,   0xc64,   0xc65,
    0xc70,   0xc76,   0xc8d,   0xc8d,   0xc91,   0xc91,   0xca9,   0xca9,
    0xcb4,   0xcb4,   0xcba,   0xcbb,   0xcc5,   0xcc5,   0xcc9,   0xcc9,
    0xcce,   0xcd4,   0xcd7,   0xcdc,   0xcdf,   0xcdf,   0xce4,   0xce5,
    0xcf0,   0xcf0,   0xcf3,   0xcff,   0xd0d,   0xd0d,   0xd11,   0xd11,
    0xd45,   0xd45,   0xd49,   0xd49,   0xd50,   0xd53,   0xd64,   0xd65,
    0xd80,   0xd80,   0xd84,   0xd84,   0xd97,   0xd99,   0xdb2,   0xdb2,
    0xdbc,   0xdbc,   0xdbe,   0xdbf,   0xdc7,   0xdc9,   0xdcb,   0xdce,
    0xdd5,   0xdd5,   0xdd7,   0xdd7,   0xde0,   0xde5,   0xdf0,   0xdf1,
    0xdf5,   0xe00,   0xe3b,   0xe3e,   0xe5c,   0xe80,   0xe83,   0xe83,
    0xe85,   0xe85,   0xe8b,   0xe8b,   0xea4,   0xea4,   0xea6,   0xea6,
    0xebe,   0xebf,   0xec5,   0xec5,   0xec7,   0xec7,   0xece,   0xecf,
    0xeda,   0xedb,   0xee0,   0xeff,   0xf48,   0xf48,   0xf6d,   0xf70,
    0xf98,   0xf98,   0xfbd,   0xfbd,   0xfcd,   0xfcd,   0xfdb,   0xfff,
    0x10c6,  0x10c6,  0x10c8,  0x10cc,  0x10ce,  0x10cf,  0x1249,  0x1249,
    0x124e,  0x124f,  0x1257,  0x1257,  0x1259,  0x1259,  0x125e,  0x125f,
    0x1289,  0x1289,  0x128e,  0x128f,  0x12b1,  0x12b1,  0x12b6,  0x12b7,
    0x12bf,  0x12bf,  0x12c1,  0x12c1,  0x12c6,  0x12c7,  0x12d7,  0x12d7,
    0x1311,  0x1311,  0x1316,  0x1317,  0x135b,  0x135c,  0x137d,  0x137f,
    0x139a,  0x139f,  0x13f6,  0x13f7,  0x13fe,  0x13ff,  0x1680,  0x1680,
    0x169d,  0x169f,  0x16f9,  0x16ff,  0x1716,  0x171e,  0x1737,  0x173f,
    0x1754,  0x175f,  0x176d,  0x176d,  0x1771,  0x1771,  0x1774,  0x177f,
    0x17de,  0x17df,  0x17ea,  0x17ef,  0x17fa,  0x17ff,  0x180e,  0x180e,
    0x181a,  0x181f,  0x1879,  0x187f,  0x18ab,  0x18af,  0x18f6,  0x18ff,
    0x191f,  0x191f,  0x192c,  0x192f,  0x193c,  0x193f,  0x1941,  0x1943,
    0x196e,  0x196f,  0x1975,  0x197f,  0x19ac,  0x19af,  0x19ca,  0x19cf,
    0x19db,  0x19dd,  0x1a1c,  0x1a1d,  0x1a5f,  0x1a5f,  0x1a7d,  0x1a7e,
    0x1a8a,  0x1a8f,  0x1a9a,  0x1a9f,  0x1aae,  0x1aaf,  0x1acf,  0x1aff,
    0x1b4d,  0x1b4f,  0x1b7f,  0x1b7f,  0x1bf4,  0x1bfb,  0x1c38,  0x1c3a,
    0x1c4a,  0x1c4c,  0x1c89,  0x1c8f,  0x1cbb,  0x1cbc,  0x1cc8,  0x1ccf,
    0x1cfb,  0x1cff,  0x1f16,  0x1f17,  0x1f1e,  0x1f1f,  0x1f46,  0x1f47,
    0x1f4e,  0x1f4f,  0x1f58,  0x1f58,  0x1f5a,  0x1f5a,  0x1f5c,  0x1f5c,
    0x1f5e,  0x1f5e,  0x1f7e,  0x1f7f,  0x1fb5,  0x1fb5,  0x1fc5,  0x1fc5,
    0x1fd4,  0x1fd5,  0x1fdc,  0x1fdc,  0x1ff0,  0x1ff1,  0x1ff5,  0x1ff5,
    0x1fff,  0x200f,  0x2028,  0x202f,  0x205f,  0x206f,  0x2072,  0x2073,
    0x208f,  0x208f,  0x209d,  0x209f,  0x20c1,  0x20cf,  0x20f1,  0x20ff,
    0x218c,  0x218f,  0x2427,  0x243f,  0x244b,  0x245f,  0x2b74,  0x2b75,
    0x2b96,  0x2b96,  0x2cf4,  0x2cf8,  0x2d26,  0x2d26,  0x2d28,  0x2d2c,
    0x2d2e,  0x2d2f,  0x2d68,  0x2d6e,  0x2d71,  0x2d7e,  0x2d97,  0x2d9f,
    0x2da7,  0x2da7,  0x2daf,  0x2daf,  0x2db7,  0x2db7,  0x2dbf,  0x2dbf,
    0x2dc7,  0x2dc7,  0x2dcf,  0x2dcf,  0x2dd7,  0x2dd7,  0x2ddf,  0x2ddf,
    0x2e5e,  0x2e7f,  0x2e9a,  0x2e9a,  0x2ef4,  0x2eff,  0x2fd6,  0x2fef,
    0x2ffc,  0x3000,  0x3040,  0x3040,  0x3097,  0x3098,  0x3100,  0x3104,
    0x3130,  0x3130,  0x318f,  0x318f,  0x31e4,  0x31ef,  0x321f,  0x321f,
    0xa48d,  0xa48f,  0xa4c7,  0xa4cf,  0xa62c,  0xa63f,  0xa6f8,  0xa6ff,
    0xa7cb,  0xa7cf,  0xa7d2,  0xa7d2,  0xa7d4,  0xa7d4,  0xa7da,  0xa7f1,
    0xa82d,  0xa82f,  0xa83a,  0xa83f,  0xa878,  0xa87f,  0xa8c6,  0xa8cd,
    0xa8da,  0xa8df,  0xa954,  0xa95e,  0xa97d,  0xa97f,  0xa9ce,  0xa9ce,
    0xa9da,  0xa9dd,  0xa9ff,  0xa9ff,  0xaa37,  0xaa3f,  0xaa4e,  0xaa4f,
    0xaa5a,  0xaa5b,  0xaac3,  0xaada,  0xaaf7,  0xab00,  0xab07,  0xab08,
    0xab0f,  0xab10,  0xab17,  0xab1f,  0xab27,  0xab27,  0xab2f,  0xab2f,
    0xab6c,  0xab6f,  0xabee,  0xabef,  0xabfa,  0xabff,  0xd7a4,  0xd7af,
    0xd7c7,  0xd7ca,  0xd7fc,  0xf8ff,  0xfa6e,  0xfa6f,  0xfada,  0xfaff,
    0xfb07,  0xfb12,  0xfb18,  0xfb1c,  0xfb37,  0xfb37,  0xfb3d,  0xfb3d,
    0xfb3f,  0xfb3f,  0xfb42,  0xfb42,  0xfb45,  0xfb45,  0xfbc3,  0xfbd2,
    0xfd90,  0xfd91,  0xfdc8,  0xfdce,  0xfdd0,  0xfdef,  0xfe1a,  0xfe1f,
    0xfe53,  0xfe53,  0xfe67,  0xfe67,  0xfe6c,  0xfe6f,  0xfe75,  0xfe75,
    0xfefd,  0xff00,  0xffbf,  0xffc1,  0xffc8,  0xffc9,  0xffd0,  0xffd1,
    0xffd8,  0xffd9,  0xffdd,  0xffdf,  0xffe7,  0xffe7,  0xffef,  0xfffb,
    0xfffe,  0xffff,  0x1000c, 0x1000c, 0x10027, 0x10027, 0x1003b, 0x1003b,
    0x1003e, 0x1003e, 0x1004e, 0x1004f, 0x1005e, 0x1007f, 0x100fb, 0x100ff,
    0x10103, 0x10106, 0x10134, 0x10136, 0x1018f, 0x1018f, 0x1019d, 0x1019f,
    0x101a1, 0x101cf, 0x101fe, 0x1027f, 0x1029d, 0x1029f, 0x102d1, 0x102df,
    0x102fc, 0x102ff, 0x10324, 0x1032c, 0x1034b, 0x1034f, 0x1037b, 0x1037f,
    0x1039e, 0x1039e, 0x103c4, 0x103c7, 0x103d6, 0x103ff, 0x1049e, 0x1049f,
    0x104aa, 0x104af, 0x104d4, 0x104d7, 0x104fc, 0x104ff, 0x10528, 0x1052f,
    0x10564, 0x1056e, 0x1057b, 0x1057b, 0x1058b, 0x1058b, 0x10593, 0x10593,
    0x10596, 0x10596, 0x105a2, 0x105a2, 0x105b2, 0x105b2, 0x105ba, 0x105ba,
    0x105bd, 0x105ff, 0x10737, 0x1073f, 0x10756, 0x1075f, 0x10768, 0x1077f,
    0x10786, 0x10786, 0x107b1, 0x107b1, 0x107bb, 0x107ff, 0x10806, 0x10807,
    0x10809, 0x10809, 0x10836, 0x10836, 0x10839, 0x1083b, 0x1083d, 0x1083e,
    0x10856, 0x10856, 0x1089f, 0x108a6, 0x108b0, 0x108df, 0x108f3, 0x108f3,
    0x108f6, 0x108fa, 0x1091c, 0x1091e, 0x1093a, 0x1093e, 0x10940, 0x1097f,
    0x109b8, 0x109bb, 0x109d0, 0x109d1, 0x10a04, 0x10a04, 0x10a07, 0x10a0b,
    0x10a14, 0x10a14, 0x10a18, 0x10a18, 0x10a36, 0x10a37, 0x10a3b, 0x10a3e,
    0x10a49, 0x10a4f, 0x10a59, 0x10a5f, 0x10aa0, 0x10abf, 0x10ae7, 0x10aea,
    0x10af7, 0x10aff, 0x10b36, 0x10b38, 0x10b56, 0x10b57, 0x10b73, 0x10b77,
    0x10b92, 0x10b98, 0x10b9d, 0x10ba8, 0x10bb0, 0x10bff, 0x10c49, 0x10c7f,
    0x10cb3, 0x10cbf, 0x10cf3, 0x10cf9, 0x10d28, 0x10d2f, 0x10d3a, 0x10e5f,
    0x10e7f, 0x10e7f, 0x10eaa, 0x10eaa, 0x10eae, 0x10eaf, 0x10eb2, 0x10eff,
    0x10f28, 0x10f2f, 0x10f5a, 0x10f6f, 0x10f8a, 0x10faf, 0x10fcc, 0x10fdf,
    0x10ff7, 0x10fff, 0x1104e, 0x11051, 0x11076, 0x1107e, 0x110bd, 0x110bd,
    0x110c3, 0x110cf, 0x110e9, 0x110ef, 0x110fa, 0x110ff, 0x11135, 0x11135,
    0x11148, 0x1114f, 0x11177, 0x1117f, 0x111e0, 0x111e0, 0x111f5, 0x111ff,
    0x11212, 0x11212, 0x1123f, 0x1127f, 0x11287, 0x11287, 0x11289, 0x11289,
    0x1128e, 0x1128e, 0x1129e, 0x1129e, 0x112aa, 0x112af, 0x112eb, 0x112ef,
    0x112fa, 0x112ff, 0x11304, 0x11304, 0x1130d, 0x1130e, 0x11311, 0x11312,
    0x11329, 0x11329, 0x11331, 0x11331, 0x11334, 0x11334, 0x1133a, 0x1133a,
    0x11345, 0x11346, 0x11349, 0x1134a, 0x1134e, 0x1134f, 0x11351, 0x11356,
    0x11358, 0x1135c, 0x11364, 0x11365, 0x1136d, 0x1136f, 0x11375, 0x113ff,
    0x1145c, 0x1145c, 0x11462, 0x1147f, 0x114c8, 0x114cf, 0x114da, 0x1157f,
    0x115b6, 0x115b7, 0x115de, 0x115ff, 0x11645, 0x1164f, 0x1165a, 0x1165f,
    0x1166d, 0x1167f, 0x116ba, 0x116bf, 0x116ca, 0x116ff, 0x1171b, 0x1171c,
    0x1172c, 0x1172f, 0x11747, 0x117ff, 0x1183c, 0x1189f, 0x118f3, 0x118fe,
    0x11907, 0x11908, 0x1190a, 0x1190b, 0x11914, 0x11914, 0x11917, 0x11917,
    0x11936, 0x11936, 0x11939, 0x1193a, 0x11947, 0x1194f, 0x1195a, 0x1199f,
    0x119a8, 0x119a9, 0x119d8, 0x119d9, 0x119e5, 0x119ff, 0x11a48, 0x11a4f,
    0x11aa3, 0x11aaf, 0x11af9, 0x11bff, 0x11c09, 0x11c09, 0x11c37, 0x11c37,
    0x11c46, 0x11c4f, 0x11c6d, 0x11c6f, 0x11c90, 0x11c91, 0x11ca8, 0x11ca8,
    0x11cb7, 0x11cff, 0x11d07, 0x11d07, 0x11d0a, 0x11d0a, 0x11d37, 0x11d39,
    0x11d3b, 0x11d3b, 0x11d3e, 0x11d3e, 0x11d48, 0x11d4f, 0x11d5a, 0x11d5f,
    0x11d66, 0x11d66, 0x11d69, 0x11d69, 0x11d8f, 0x11d8f, 0x11d92, 0x11d92,
    0x11d99, 0x11d9f, 0x11daa, 0x11edf, 0x11ef9, 0x11faf, 0x11fb1, 0x11fbf,
    0x11ff2, 0x11ffe, 0x1239a, 0x123ff, 0x1246f, 0x1246f, 0x12475, 0x1247f,
    0x12544, 0x12f8f, 0x12ff3, 0x12fff, 0x1342f, 0x143ff, 0x14647, 0x167ff,
    0x16a39, 0x16a3f, 0x16a5f, 0x16a5f, 0x16a6a, 0x16a6d, 0x16abf, 0x16abf,
    0x16aca, 0x16acf, 0x16aee, 0x16aef, 0x16af6, 0x16aff, 0x16b46, 0x16b4f,
    0x16b5a, 0x16b5a, 0x16b62, 0x16b62, 0x16b78, 0x16b7c, 0x16b90, 0x16e3f,
    0x16e9b, 0x16eff, 0x16f4b, 0x16f4e, 0x16f88, 0x16f8e, 0x16fa0, 0x16fdf,
    0x16fe5, 0x16fef, 0x16ff2, 0x16fff, 0x187f8, 0x187ff, 0x18cd6, 0x18cff,
    0x18d09, 0x1afef, 0x1aff4, 0x1aff4, 0x1affc, 0x1affc, 0x1afff, 0x1afff,
    0x1b123, 0x1b14f, 0x1b153, 0x1b163, 0x1b168, 0x1b16f, 0x1b2fc, 0x1bbff,
    0x1bc6b, 0x1bc6f, 0x1bc7d, 0x1bc7f, 0x1bc89, 0x1bc8f, 0x1bc9a, 0x1bc9b,
    0x1bca0, 0x1ceff, 0x1cf2e, 0x1cf2f, 0x1cf47, 0x1cf4f, 0x1cfc4, 0x1cfff,
    0x1d0f6, 0x1d0ff, 0x1d127, 0x1d128, 0x1d173, 0x1d17a, 0x1d1eb, 0x1d1ff,
    0x1d246, 0x1d2df, 0x1d2f4, 0x1d2ff, 0x1d357, 0x1d35f, 0x1d379, 0x1d3ff,
    0x1d455, 0x1d455, 0x1d49d, 0x1d49d, 0x1d4a0, 0x1d4a1, 0x1d4a3, 0x1d4a4,
    0x1d4a7, 0x1d4a8, 0x1d4ad, 0x1d4ad, 0x1d4ba, 0x1d4ba, 0x1d4bc, 0x1d4bc,
    0x1d4c4, 0x1d4c4, 0x1d506, 0x1d506, 0x1d50b, 0x1d50c, 0x1d515, 0x1d515,
    0x1d51d, 0x1d51d, 0x1d53a, 0x1d53a, 0x1d53f, 0x1d53f, 0x1d545, 0x1d545,
    0x1d547, 0x1d549, 0x1d551, 0x1d551, 0x1d6a6, 0x1d6a7, 0x1d7cc, 0x1d7cd,
    0x1da8c, 0x1da9a, 0x1daa0, 0x1daa0, 0x1dab0, 0x1deff, 0x1df1f, 0x1dfff,
    0x1e007, 0x1e007, 0x1e019, 0x1e01a, 0x1e022, 0x1e022, 0x1e025, 0x1e025,
    0x1e02b, 0x1e0ff, 0x1e12d, 0x1e12f, 0x1e13e, 0x1e13f, 0x1e14a, 0x1e14d,
    0x1e150, 0x1e28f, 0x1e2af, 0x1e2bf, 0x1e2fa, 0x1e2fe, 0x1e300, 0x1e7df,
    0x1e7e7, 0x1e7e7, 0x1e7ec, 0x1e7ec, 0x1e7ef, 0x1e7ef, 0x1e7ff, 0x1e7ff,
    0x1e8c5, 0x1e8c6, 0x1e8d7, 0x1e8ff, 0x1e94c, 0x1e94f, 0x1e95a, 0x1e95d,
    0x1e960, 0x1ec70, 0x1ecb5, 0x1ed00, 0x1ed3e, 0x1edff, 0x1ee04, 0x1ee04,
    0x1ee20, 0x1ee20, 0x1ee23, 0x1ee23, 0x1ee25, 0x1ee26, 0x1ee28, 0x1ee28,
    0x1ee33, 0x1ee33, 0x1ee38, 0x1ee38, 0x1ee3a, 0x1ee3a, 0x1ee3c, 0x1ee41,
    0x1ee43, 0x1ee46, 0x1ee48, 0x1ee48, 0x1ee4a, 0x1ee4a, 0x1ee4c, 0x1ee4c,
    0x1ee50, 0x1ee50, 0x1ee53, 0x1ee53, 0x1ee55, 0x1ee56, 0x1ee58, 0x1ee58,
    0x1ee5a, 0x1ee5a, 0x1ee5c, 0x1ee5c, 0x1ee5e, 0x1ee5e, 0x1ee60, 0x1ee60,
    0x1ee63, 0x1ee63, 0x1ee65, 0x1ee66, 0x1ee6b, 0x1ee6b, 0x1ee73, 0x1ee73,
    0x1ee78, 0x1ee78, 0x1ee7d, 0x1ee7d, 0x1ee7f, 0x1ee7f, 0x1ee8a, 0x1ee8a,
    0x1ee9c, 0x1eea0, 0x1eea4, 0x1eea4, 0x1eeaa, 0x1eeaa, 0x1eebc, 0x1eeef,
    0x1eef2, 0x1efff, 0x1f02c, 0x1f02f, 0x1f094, 0x1f09f, 0x1f0af, 0x1f0b0,
    0x1f0c0, 0x1f0c0, 0x1f0d0, 0x1f0d0, 0x1f0f6, 0x1f0ff, 0x1f1ae, 0x1f1e5,
    0x1f203, 0x1f20f, 0x1f23c, 0x1f23f, 0x1f249, 0x1f24f, 0x1f252, 0x1f25f,
    0x1f266, 0x1f2ff, 0x1f6d8, 0x1f6dc, 0x1f6ed, 0x1f6ef, 0x1f6fd, 0x1f6ff,
    0x1f774, 0x1f77f, 0x1f7d9, 0x1f7df, 0x1f7ec, 0x1f7ef, 0x1f7f1, 0x1f7ff,
    0x1f80c, 0x1f80f, 0x1f848, 0x1f84f, 0x1f85a, 0x1f85f, 0x1f888, 0x1f88f,
    0x1f8ae, 0x1f8af, 0x1f8b2, 0x1f8ff, 0x1fa54, 0x1fa5f, 0x1fa6e, 0x1fa6f,
    0x1fa75, 0x1fa77, 0x1fa7d, 0x1fa7f, 0x1fa87, 0x1fa8f, 0x1faad, 0x1faaf,
    0x1fabb, 0x1fabf, 0x1fac6, 0x1facf, 0x1fada, 0x1fadf, 0x1fae8, 0x1faef,
    0x1faf7, 0x1faff, 0x1fb93, 0x1fb93, 0x1fbcb, 0x1fbef, 0x1fbfa, 0x1ffff,
    0x2a6e0, 0x2a6ff, 0x2b739, 0x2b73f, 0x2b81e, 0x2b81f, 0x2cea2, 0x2ceaf,
    0x2ebe1, 0x2f7ff, 0x2fa1e, 0x2ffff, 0x3134b, 0xe00ff, 0xe01f0, 0x10ffff,
};

static uint8_t s_hash_key[crypto_shorthash_KEYBYTES];
static pthread_once_t s_hash_once = PTHREAD_ONCE_INIT;

//  A per-process random key keeps peers from choosing colliding keys.
static void
s_hash_init (void)
{
    if (sodium_init () >= 0)
        randombytes_buf (s_hash_key, sizeof (s_hash_key));
}

static uint64_t
s_sip (const void *data, size_t size)
{
    uint8_t out[crypto_shorthash_BYTES];
    uint64_t hash;
    crypto_shorthash (out, (const unsigned char *)data, size, s_hash_key);
    memcpy (&hash, out, sizeof (hash));
    return hash;
}

static uint64_t
s_type_tag (bn_value_type_t type)
{
    return ((uint64_t)type + 1) * 0x9e3779b97f4a7c15ULL;
}

static uint64_t
s_hash (const bn_value_t *self)
{
    const uint64_t prime = 0x100000001b3ULL;
    uint64_t hash = s_type_tag (self->type);
    switch (self->type) {
    case BN_VALUE_NONE:
        return hash;
    case BN_VALUE_BOOL:
        return hash ^ (self->u.b ? 1 : 0);
    case BN_VALUE_INT:
        return hash ^ s_sip (&self->u.i, sizeof (self->u.i));
    case BN_VALUE_FLOAT: {
        //  Equal floats must hash alike: -0.0 == 0.0, and every NaN.
        double f = self->u.f == 0 ? 0.0 : isnan (self->u.f) ? NAN : self->u.f;
        return hash ^ s_sip (&f, sizeof (f));
    }
    case BN_VALUE_STR:
    case BN_VALUE_BYTES:
        return hash ^ s_sip (self->u.s.data, self->u.s.size);
    case BN_VALUE_LIST:
    case BN_VALUE_TUPLE:
        for (size_t i = 0; i < self->u.c.size; i++)
            hash = (hash ^ s_hash (self->u.c.items[i])) * prime;
        return hash;
    case BN_VALUE_SET:
        //  Order-free, as set equality is.
        for (size_t i = 0; i < self->u.c.size; i++)
            hash += s_hash (self->u.c.items[i]);
        return hash;
    case BN_VALUE_DICT:
        for (size_t i = 0; i < self->u.c.size; i++)
            hash += s_hash (self->u.c.items[2 * i]) * prime ^
                    s_hash (self->u.c.items[2 * i + 1]);
        return hash;
    case BN_VALUE_GLOBAL:
        hash ^= s_sip (self->u.g.module, strlen (self->u.g.module));
        return hash * prime ^ s_sip (self->u.g.name, strlen (self->u.g.name));
    case BN_VALUE_OBJECT: {
        const bn_value_t *parts[] = {self->u.o.cls, self->u.o.args,
                                     self->u.o.state, self->u.o.items,
                                     self->u.o.kwargs};
        for (size_t i = 0; i < sizeof (parts) / sizeof (parts[0]); i++)
            hash = (hash ^ (parts[i] ? s_hash (parts[i]) : i)) * prime;
        return hash;
    }
    }
    return hash;
}

static bn_value_t *
s_new (bn_value_type_t type)
{
    bn_value_t *self = (bn_value_t *)calloc (1, sizeof (bn_value_t));
    if (self)
        self->type = type;
    return self;
}

static bool
s_is_container (const bn_value_t *self)
{
    return self->type == BN_VALUE_LIST || self->type == BN_VALUE_TUPLE ||
           self->type == BN_VALUE_DICT || self->type == BN_VALUE_SET;
}

//  Item pointers in use: a dict holds two per pair.
static size_t
s_slots (const bn_value_t *self)
{
    return self->type == BN_VALUE_DICT ? 2 * self->u.c.size : self->u.c.size;
}

static const bn_value_t *
s_key_at (const bn_value_t *self, size_t pos)
{
    return self->type == BN_VALUE_DICT ? self->u.c.items[2 * pos]
                                       : self->u.c.items[pos];
}

//  Make room for `more` item pointers; 0 or -1.
static int
s_grow (bn_value_t *self, size_t more)
{
    size_t need = s_slots (self) + more;
    if (need <= self->u.c.cap)
        return 0;
    size_t cap = self->u.c.cap ? self->u.c.cap : 4;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof (bn_value_t *))
            return -1;
        cap *= 2;
    }
    bn_value_t **items =
        (bn_value_t **)realloc (self->u.c.items, cap * sizeof (bn_value_t *));
    if (!items)
        return -1;
    self->u.c.items = items;
    self->u.c.cap = cap;
    return 0;
}

static void
s_index_insert (size_t *index, uint64_t hash, size_t pos)
{
    size_t mask = index[0];
    size_t slot = (size_t)hash & mask;
    while (index[1 + slot])
        slot = (slot + 1) & mask;
    index[1 + slot] = pos + 1;
}

//  (Re)build the index with room for twice the items; without memory the
//  container just falls back to linear lookups.
static void
s_index_build (bn_value_t *self)
{
    free (self->u.c.index);
    self->u.c.index = NULL;
    size_t cap = 16;
    while (cap < 4 * self->u.c.size) {
        if (cap > SIZE_MAX / 4 / sizeof (size_t))
            return;
        cap *= 2;
    }
    size_t *index = (size_t *)calloc (cap + 1, sizeof (size_t));
    if (!index)
        return;
    index[0] = cap - 1;
    for (size_t pos = 0; pos < self->u.c.size; pos++)
        s_index_insert (index, s_hash (s_key_at (self, pos)), pos);
    self->u.c.index = index;
}

//  Index the key just added at the end of a dict or set.
static void
s_index_added (bn_value_t *self)
{
    size_t size = self->u.c.size;
    if (size <= BN_VALUE_INDEX_MIN)
        return;
    if (!self->u.c.index || 2 * size > self->u.c.index[0] + 1)
        s_index_build (self);
    else
        s_index_insert (self->u.c.index, s_hash (s_key_at (self, size - 1)),
                        size - 1);
}

//  Position of `key` in a dict or set, or SIZE_MAX.
static size_t
s_find (const bn_value_t *self, const bn_value_t *key)
{
    if (!self->u.c.index) {
        for (size_t pos = 0; pos < self->u.c.size; pos++)
            if (bn_value_equal (s_key_at (self, pos), key))
                return pos;
        return SIZE_MAX;
    }
    const size_t *index = self->u.c.index;
    size_t mask = index[0];
    size_t slot = (size_t)s_hash (key) & mask;
    while (index[1 + slot]) {
        size_t pos = index[1 + slot] - 1;
        if (bn_value_equal (s_key_at (self, pos), key))
            return pos;
        slot = (slot + 1) & mask;
    }
    return SIZE_MAX;
}

//  Get rid of a value, into `spill` when given; 0 or -1.
static int
s_discard (bn_value_t *value, bn_value_t *spill)
{
    if (spill)
        return bn_value_append (spill, value);
    bn_value_destroy (&value);
    return 0;
}

//  The bytes of a BYTES value, which its copies and the frames sending
//  them share (they are never changed): the last to let go releases
//  them, from whichever thread that is.
struct _bn_value_bytes_t {
    atomic_size_t refs;
    bn_value_release_fn *release; //  NULL: the bytes follow this block
    void *data;                   //  what release gets
    void *hint;
};

static struct _bn_value_bytes_t *
s_bytes_ref (struct _bn_value_bytes_t *bytes)
{
    atomic_fetch_add_explicit (&bytes->refs, 1, memory_order_relaxed);
    return bytes;
}

static void
s_bytes_unref (struct _bn_value_bytes_t *bytes)
{
    if (atomic_fetch_sub_explicit (&bytes->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (bytes->release)
        bytes->release (bytes->data, bytes->hint);
    free (bytes);
}

static bn_value_t *
s_new_bytes (const void *data, size_t size)
{
    if (size > SIZE_MAX - sizeof (struct _bn_value_bytes_t) - 1)
        return NULL;
    bn_value_t *self = s_new (BN_VALUE_BYTES);
    struct _bn_value_bytes_t *bytes =
        self ? malloc (sizeof *bytes + size + 1) : NULL;
    if (!bytes) {
        free (self);
        return NULL;
    }
    atomic_init (&bytes->refs, 1);
    bytes->release = NULL;
    bytes->data = bytes + 1;
    bytes->hint = NULL;
    self->u.s.data = (char *)(bytes + 1);
    if (size)
        memcpy (self->u.s.data, data, size);
    self->u.s.data[size] = 0;
    self->u.s.size = size;
    self->u.s.bytes = bytes;
    return self;
}

//  A BYTES value sharing other's bytes.
static bn_value_t *
s_share_bytes (const bn_value_t *other)
{
    bn_value_t *self = s_new (BN_VALUE_BYTES);
    if (!self)
        return NULL;
    self->u.s.data = other->u.s.data;
    self->u.s.size = other->u.s.size;
    self->u.s.bytes = s_bytes_ref (other->u.s.bytes);
    return self;
}

static bn_value_t *
s_new_sized (bn_value_type_t type, const void *data, size_t size)
{
    if (type == BN_VALUE_BYTES)
        return s_new_bytes (data, size);
    if (size == SIZE_MAX)
        return NULL;
    bn_value_t *self = s_new (type);
    if (!self)
        return NULL;
    self->u.s.data = (char *)malloc (size + 1);
    if (!self->u.s.data) {
        free (self);
        return NULL;
    }
    if (size)
        memcpy (self->u.s.data, data, size);
    self->u.s.data[size] = 0;
    self->u.s.size = size;
    return self;
}

bn_value_t *
bn_value_new_none (void)
{
    return &s_none;
}

bn_value_t *
bn_value_new_bool (bool value)
{
    return value ? &s_true : &s_false;
}

bn_value_t *
bn_value_new_int (int64_t value)
{
    bn_value_t *self = s_new (BN_VALUE_INT);
    if (self)
        self->u.i = value;
    return self;
}

bn_value_t *
bn_value_new_float (double value)
{
    bn_value_t *self = s_new (BN_VALUE_FLOAT);
    if (self)
        self->u.f = value;
    return self;
}

bn_value_t *
bn_value_new_str (const char *string)
{
    assert (string);
    return s_new_sized (BN_VALUE_STR, string, strlen (string));
}

bn_value_t *
bn_value_new_strn (const char *data, size_t size)
{
    assert (data || size == 0);
    return s_new_sized (BN_VALUE_STR, data, size);
}

bn_value_t *
bn_value_new_bytes (const void *data, size_t size)
{
    assert (data || size == 0);
    return s_new_sized (BN_VALUE_BYTES, data, size);
}

bn_value_t *
bn_value_new_bytes_shared (const void *data, size_t size,
                           bn_value_release_fn *release, void *hint)
{
    assert (data || size == 0);
    assert (release);
    bn_value_t *self = s_new (BN_VALUE_BYTES);
    struct _bn_value_bytes_t *bytes = self ? malloc (sizeof *bytes) : NULL;
    if (!bytes) {
        free (self);
        return NULL;
    }
    atomic_init (&bytes->refs, 1);
    bytes->release = release;
    bytes->data = (void *)data;
    bytes->hint = hint;
    self->u.s.data = (char *)data;
    self->u.s.size = size;
    self->u.s.bytes = bytes;
    return self;
}

void *
bn_value_bytes_hold (const bn_value_t *self)
{
    if (!self || self->type != BN_VALUE_BYTES)
        return NULL;
    return s_bytes_ref (self->u.s.bytes);
}

void
bn_value_bytes_let_go (void *hold)
{
    if (hold)
        s_bytes_unref ((struct _bn_value_bytes_t *)hold);
}

bn_value_t *
bn_value_new_list (void)
{
    return s_new (BN_VALUE_LIST);
}

bn_value_t *
bn_value_new_tuple (void)
{
    return s_new (BN_VALUE_TUPLE);
}

bn_value_t *
bn_value_new_dict (void)
{
    pthread_once (&s_hash_once, s_hash_init);
    return s_new (BN_VALUE_DICT);
}

bn_value_t *
bn_value_new_set (void)
{
    pthread_once (&s_hash_once, s_hash_init);
    return s_new (BN_VALUE_SET);
}

bn_value_t *
bn_value_new_global (const char *module, const char *name)
{
    assert (module);
    assert (name);
    bn_value_t *self = s_new (BN_VALUE_GLOBAL);
    if (!self)
        return NULL;
    self->u.g.module = strdup (module);
    self->u.g.name = strdup (name);
    if (!self->u.g.module || !self->u.g.name)
        bn_value_destroy (&self);
    return self;
}

bn_value_t *
bn_value_new_object (bn_value_t *cls, bn_value_t *args, bn_value_t *state)
{
    assert (cls);
    assert (!args || args->type == BN_VALUE_TUPLE);
    bn_value_t *self = s_new (BN_VALUE_OBJECT);
    if (!self) {
        bn_value_destroy (&cls);
        bn_value_destroy (&args);
        bn_value_destroy (&state);
        return NULL;
    }
    self->u.o.cls = cls;
    self->u.o.args = args;
    self->u.o.state = state;
    return self;
}

bn_value_t *
bn_value_new_reduce (bn_value_t *callable, bn_value_t *args)
{
    bn_value_t *self = bn_value_new_object (callable, args, NULL);
    if (self)
        self->flags |= BN_VALUE_REDUCE;
    return self;
}

void
bn_value_destroy (bn_value_t **self_p)
{
    assert (self_p);
    bn_value_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    if (self->flags & BN_VALUE_STATIC)
        return;
    switch (self->type) {
    case BN_VALUE_STR:
        free (self->u.s.data);
        break;
    case BN_VALUE_BYTES:
        s_bytes_unref (self->u.s.bytes);
        break;
    case BN_VALUE_LIST:
    case BN_VALUE_TUPLE:
    case BN_VALUE_DICT:
    case BN_VALUE_SET: {
        size_t slots = s_slots (self);
        for (size_t i = 0; i < slots; i++)
            bn_value_destroy (&self->u.c.items[i]);
        free (self->u.c.items);
        free (self->u.c.index);
        break;
    }
    case BN_VALUE_GLOBAL:
        free (self->u.g.module);
        free (self->u.g.name);
        break;
    case BN_VALUE_OBJECT:
        bn_value_destroy (&self->u.o.cls);
        bn_value_destroy (&self->u.o.args);
        bn_value_destroy (&self->u.o.state);
        bn_value_destroy (&self->u.o.items);
        bn_value_destroy (&self->u.o.kwargs);
        break;
    default:
        break;
    }
    free (self);
}

//  Copy an optional part; false only when the copy failed.
static bool
s_dup_part (const bn_value_t *part, bn_value_t **copy_p)
{
    *copy_p = part ? bn_value_dup (part) : NULL;
    return !part || *copy_p;
}

bn_value_t *
bn_value_dup (const bn_value_t *self)
{
    assert (self);
    if (self->flags & BN_VALUE_STATIC)
        return (bn_value_t *)self;
    switch (self->type) {
    case BN_VALUE_NONE:
        return bn_value_new_none ();
    case BN_VALUE_BOOL:
        return bn_value_new_bool (self->u.b);
    case BN_VALUE_INT:
        return bn_value_new_int (self->u.i);
    case BN_VALUE_FLOAT:
        return bn_value_new_float (self->u.f);
    case BN_VALUE_STR:
        return s_new_sized (self->type, self->u.s.data, self->u.s.size);
    case BN_VALUE_BYTES:
        return s_share_bytes (self);
    case BN_VALUE_GLOBAL:
        return bn_value_new_global (self->u.g.module, self->u.g.name);
    case BN_VALUE_OBJECT: {
        bn_value_t *copy = s_new (BN_VALUE_OBJECT);
        if (!copy)
            return NULL;
        copy->flags = self->flags;
        if (!s_dup_part (self->u.o.cls, &copy->u.o.cls) ||
            !s_dup_part (self->u.o.args, &copy->u.o.args) ||
            !s_dup_part (self->u.o.state, &copy->u.o.state) ||
            !s_dup_part (self->u.o.items, &copy->u.o.items) ||
            !s_dup_part (self->u.o.kwargs, &copy->u.o.kwargs))
            bn_value_destroy (&copy);
        return copy;
    }
    case BN_VALUE_LIST:
    case BN_VALUE_TUPLE:
    case BN_VALUE_DICT:
    case BN_VALUE_SET: {
        bn_value_t *copy = s_new (self->type);
        if (!copy)
            return NULL;
        size_t slots = s_slots (self);
        if (slots && s_grow (copy, slots)) {
            free (copy);
            return NULL;
        }
        for (size_t i = 0; i < slots; i++) {
            bn_value_t *item = bn_value_dup (self->u.c.items[i]);
            if (!item) {
                //  Destroy whole pairs only, then the lone key.
                if (copy->type == BN_VALUE_DICT) {
                    copy->u.c.size = i / 2;
                    if (i % 2)
                        bn_value_destroy (&copy->u.c.items[i - 1]);
                } else
                    copy->u.c.size = i;
                bn_value_destroy (&copy);
                return NULL;
            }
            copy->u.c.items[i] = item;
        }
        copy->u.c.size = self->u.c.size;
        if (self->u.c.index) {
            size_t bytes = (self->u.c.index[0] + 2) * sizeof (size_t);
            copy->u.c.index = (size_t *)malloc (bytes);
            if (copy->u.c.index)
                memcpy (copy->u.c.index, self->u.c.index, bytes);
            else
                s_index_build (copy);
        }
        return copy;
    }
    }
    return NULL;
}

//  Object args: NULL and () are the same.
static bool
s_args_equal (const bn_value_t *self, const bn_value_t *other)
{
    if ((!self || self->u.c.size == 0) && (!other || other->u.c.size == 0))
        return true;
    return bn_value_equal (self, other);
}

bool
bn_value_equal (const bn_value_t *self, const bn_value_t *other)
{
    if (self == other)
        return true;
    if (!self || !other || self->type != other->type)
        return false;
    switch (self->type) {
    case BN_VALUE_NONE:
        return true;
    case BN_VALUE_BOOL:
        return self->u.b == other->u.b;
    case BN_VALUE_INT:
        return self->u.i == other->u.i;
    case BN_VALUE_FLOAT:
        return self->u.f == other->u.f ||
               (isnan (self->u.f) && isnan (other->u.f));
    case BN_VALUE_STR:
    case BN_VALUE_BYTES:
        return self->u.s.size == other->u.s.size &&
               memcmp (self->u.s.data, other->u.s.data, self->u.s.size) == 0;
    case BN_VALUE_LIST:
    case BN_VALUE_TUPLE:
        if (self->u.c.size != other->u.c.size)
            return false;
        for (size_t i = 0; i < self->u.c.size; i++)
            if (!bn_value_equal (self->u.c.items[i], other->u.c.items[i]))
                return false;
        return true;
    case BN_VALUE_SET:
        if (self->u.c.size != other->u.c.size)
            return false;
        for (size_t i = 0; i < self->u.c.size; i++)
            if (s_find (other, self->u.c.items[i]) == SIZE_MAX)
                return false;
        return true;
    case BN_VALUE_DICT:
        if (self->u.c.size != other->u.c.size)
            return false;
        for (size_t i = 0; i < self->u.c.size; i++) {
            size_t pos = s_find (other, self->u.c.items[2 * i]);
            if (pos == SIZE_MAX ||
                !bn_value_equal (self->u.c.items[2 * i + 1],
                                 other->u.c.items[2 * pos + 1]))
                return false;
        }
        return true;
    case BN_VALUE_GLOBAL:
        return (strcmp (self->u.g.module, other->u.g.module) == 0) &&
               (strcmp (self->u.g.name, other->u.g.name) == 0);
    case BN_VALUE_OBJECT:
        return (self->flags & BN_VALUE_REDUCE) ==
                   (other->flags & BN_VALUE_REDUCE) &&
               bn_value_equal (self->u.o.cls, other->u.o.cls) &&
               s_args_equal (self->u.o.args, other->u.o.args) &&
               bn_value_equal (self->u.o.state, other->u.o.state) &&
               bn_value_equal (self->u.o.items, other->u.o.items) &&
               bn_value_equal (self->u.o.kwargs, other->u.o.kwargs);
    }
    return false;
}

//  Python's float repr: the shortest digits that read back to the same
//  double (of two such, the nearer), positional for exponents -4 < e <= 16,
//  else scientific.
static void
s_float_repr (double value, char *out, size_t size)
{
    if (isnan (value)) {
        snprintf (out, size, "nan");
        return;
    }
    if (isinf (value)) {
        snprintf (out, size, value > 0 ? "inf" : "-inf");
        return;
    }
    bool negative = signbit (value) != 0;
    double magnitude = fabs (value);
    char digits[24];
    int exponent = 0;
    for (int precision = 1; precision <= 17; precision++) {
        char text[40];
        snprintf (text, sizeof (text), "%.*e", precision - 1, magnitude);
        const char *e = strchr (text, 'e');
        exponent = atoi (e + 1);
        size_t n = 0;
        for (const char *p = text; p < e; p++)
            if (*p != '.')
                digits[n++] = *p;
        digits[n] = 0;
        if (strtod (text, NULL) == magnitude)
            break;
        //  The correctly rounded digits can miss (a tie rounded to even)
        //  where their neighbour on the other side of the value reads back.
        uint64_t mantissa = strtoull (digits, NULL, 10);
        bool found = false;
        for (int delta = -1; delta <= 1 && !found; delta += 2) {
            uint64_t candidate = mantissa + (uint64_t)(int64_t)delta;
            if (candidate == 0)
                continue;
            snprintf (text, sizeof (text), "%" PRIu64 "e%d", candidate,
                      exponent - (precision - 1));
            if (strtod (text, NULL) == magnitude) {
                int length =
                    snprintf (digits, sizeof (digits), "%" PRIu64, candidate);
                exponent += length - precision;
                found = true;
            }
        }
        if (found)
            break;
    }
    size_t ndigits = strlen (digits);
    while (ndigits > 1 && digits[ndigits - 1] == '0')
        ndigits--;
    int point = exponent + 1; //  digits before the decimal point

    char buffer[64];
    char *o = buffer;
    if (negative)
        *o++ = '-';
    if (point <= -4 || point > 16) {
        *o++ = digits[0];
        if (ndigits > 1) {
            *o++ = '.';
            memcpy (o, digits + 1, ndigits - 1);
            o += ndigits - 1;
        }
        snprintf (o, sizeof (buffer) - (size_t)(o - buffer), "e%c%02d",
                  exponent < 0 ? '-' : '+', abs (exponent));
    } else {
        if (point <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -point; i++)
                *o++ = '0';
            memcpy (o, digits, ndigits);
            o += ndigits;
        } else if ((size_t)point >= ndigits) {
            memcpy (o, digits, ndigits);
            o += ndigits;
            for (size_t i = ndigits; i < (size_t)point; i++)
                *o++ = '0';
            *o++ = '.';
            *o++ = '0';
        } else {
            memcpy (o, digits, (size_t)point);
            o += point;
            *o++ = '.';
            memcpy (o, digits + point, ndigits - (size_t)point);
            o += ndigits - (size_t)point;
        }
        *o = 0;
    }
    snprintf (out, size, "%s", buffer);
}

static bool
s_printable (uint32_t code)
{
    if (code < 0x80)
        return code >= 0x20 && code < 0x7f;
    size_t low = 0;
    size_t high = sizeof (s_unprintable) / sizeof (s_unprintable[0]) / 2;
    while (low < high) {
        size_t mid = (low + high) / 2;
        if (code < s_unprintable[2 * mid])
            high = mid;
        else if (code > s_unprintable[2 * mid + 1])
            low = mid + 1;
        else
            return false;
    }
    return true;
}

static char
s_quote (const char *data, size_t size)
{
    bool single = memchr (data, '\'', size) != NULL;
    bool dbl = memchr (data, '"', size) != NULL;
    return single && !dbl ? '"' : '\'';
}

static void
s_repr_str (FILE *out, const bn_value_t *self)
{
    const unsigned char *p = (const unsigned char *)self->u.s.data;
    size_t size = self->u.s.size;
    char quote = s_quote (self->u.s.data, size);
    fputc (quote, out);
    size_t i = 0;
    while (i < size) {
        uint32_t code;
        size_t length = bn_utf8_decode (p + i, size - i, &code);
        if (length == 0) {
            //  Not UTF-8 (only C code can make such a str): show the byte.
            fprintf (out, "\\x%02x", p[i]);
            i++;
            continue;
        }
        i += length;
        if (code == (uint32_t)quote || code == '\\')
            fprintf (out, "\\%c", (char)code);
        else if (code == '\t')
            fputs ("\\t", out);
        else if (code == '\n')
            fputs ("\\n", out);
        else if (code == '\r')
            fputs ("\\r", out);
        else if (s_printable (code))
            fwrite (p + i - length, 1, length, out);
        else if (code <= 0xff)
            fprintf (out, "\\x%02x", code);
        else if (code <= 0xffff)
            fprintf (out, "\\u%04x", code);
        else
            fprintf (out, "\\U%08x", code);
    }
    fputc (quote, out);
}

static void
s_repr_bytes (FILE *out, const bn_value_t *self)
{
    const unsigned char *p = (const unsigned char *)self->u.s.data;
    char quote = s_quote (self->u.s.data, self->u.s.size);
    fputc ('b', out);
    fputc (quote, out);
    for (size_t i = 0; i < self->u.s.size; i++) {
        unsigned char c = p[i];
        if (c == quote || c == '\\')
            fprintf (out, "\\%c", c);
        else if (c == '\t')
            fputs ("\\t", out);
        else if (c == '\n')
            fputs ("\\n", out);
        else if (c == '\r')
            fputs ("\\r", out);
        else if (c < 0x20 || c >= 0x7f)
            fprintf (out, "\\x%02x", c);
        else
            fputc (c, out);
    }
    fputc (quote, out);
}

static void
s_repr (FILE *out, const bn_value_t *self)
{
    switch (self->type) {
    case BN_VALUE_NONE:
        fputs ("None", out);
        break;
    case BN_VALUE_BOOL:
        fputs (self->u.b ? "True" : "False", out);
        break;
    case BN_VALUE_INT:
        fprintf (out, "%" PRId64, self->u.i);
        break;
    case BN_VALUE_FLOAT: {
        char text[64];
        s_float_repr (self->u.f, text, sizeof (text));
        fputs (text, out);
        break;
    }
    case BN_VALUE_STR:
        s_repr_str (out, self);
        break;
    case BN_VALUE_BYTES:
        s_repr_bytes (out, self);
        break;
    case BN_VALUE_LIST:
    case BN_VALUE_TUPLE:
    case BN_VALUE_SET: {
        size_t size = self->u.c.size;
        if (self->type == BN_VALUE_SET && size == 0) {
            fputs ("set()", out);
            break;
        }
        bool list = self->type == BN_VALUE_LIST;
        bool tuple = self->type == BN_VALUE_TUPLE;
        fputc (list ? '[' : tuple ? '(' : '{', out);
        for (size_t i = 0; i < size; i++) {
            if (i)
                fputs (", ", out);
            s_repr (out, self->u.c.items[i]);
        }
        if (tuple && size == 1)
            fputc (',', out);
        fputc (list ? ']' : tuple ? ')' : '}', out);
        break;
    }
    case BN_VALUE_DICT:
        fputc ('{', out);
        for (size_t i = 0; i < self->u.c.size; i++) {
            if (i)
                fputs (", ", out);
            s_repr (out, self->u.c.items[2 * i]);
            fputs (": ", out);
            s_repr (out, self->u.c.items[2 * i + 1]);
        }
        fputc ('}', out);
        break;
    case BN_VALUE_GLOBAL:
        fprintf (out, "<global %s.%s>", self->u.g.module, self->u.g.name);
        break;
    case BN_VALUE_OBJECT: {
        const bn_value_t *cls = self->u.o.cls;
        if (cls->type == BN_VALUE_GLOBAL)
            fprintf (out, "<%s.%s object>", cls->u.g.module, cls->u.g.name);
        else
            fputs ("<object>", out);
        break;
    }
    }
}

char *
bn_value_repr (const bn_value_t *self)
{
    assert (self);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    if (!out)
        return NULL;
    s_repr (out, self);
    if (ferror (out)) {
        fclose (out);
        free (text);
        return NULL;
    }
    if (fclose (out) != 0) {
        free (text);
        return NULL;
    }
    return text;
}

bn_value_type_t
bn_value_type (const bn_value_t *self)
{
    assert (self);
    return self->type;
}

const char *
bn_value_type_name (const bn_value_t *self)
{
    assert (self);
    switch (self->type) {
    case BN_VALUE_NONE:
        return "NoneType";
    case BN_VALUE_BOOL:
        return "bool";
    case BN_VALUE_INT:
        return "int";
    case BN_VALUE_FLOAT:
        return "float";
    case BN_VALUE_STR:
        return "str";
    case BN_VALUE_BYTES:
        return "bytes";
    case BN_VALUE_LIST:
        return "list";
    case BN_VALUE_TUPLE:
        return "tuple";
    case BN_VALUE_DICT:
        return "dict";
    case BN_VALUE_SET:
        return "set";
    case BN_VALUE_GLOBAL:
        return "global";
    case BN_VALUE_OBJECT:
        if (self->u.o.cls->type == BN_VALUE_GLOBAL)
            return self->u.o.cls->u.g.name;
        return "object";
    }
    return "object";
}

bool
bn_value_bool (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_BOOL && self->u.b;
}

int64_t
bn_value_int (const bn_value_t *self)
{
    if (!self)
        return 0;
    if (self->type == BN_VALUE_INT)
        return self->u.i;
    if (self->type == BN_VALUE_BOOL)
        return self->u.b;
    return 0;
}

double
bn_value_float (const bn_value_t *self)
{
    if (!self)
        return 0;
    if (self->type == BN_VALUE_FLOAT)
        return self->u.f;
    return (double)bn_value_int (self);
}

const char *
bn_value_str (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_STR ? self->u.s.data : NULL;
}

size_t
bn_value_str_size (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_STR ? self->u.s.size : 0;
}

const void *
bn_value_bytes_data (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_BYTES ? self->u.s.data : NULL;
}

size_t
bn_value_bytes_size (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_BYTES ? self->u.s.size : 0;
}

const char *
bn_value_global_module (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_GLOBAL ? self->u.g.module : NULL;
}

const char *
bn_value_global_name (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_GLOBAL ? self->u.g.name : NULL;
}

size_t
bn_value_size (const bn_value_t *self)
{
    if (!self)
        return 0;
    return s_is_container (self) ? self->u.c.size : 0;
}

bn_value_t *
bn_value_item (const bn_value_t *self, size_t index)
{
    if (!self)
        return 0;
    if (!s_is_container (self) || index >= self->u.c.size)
        return NULL;
    return (bn_value_t *)s_key_at (self, index);
}

bn_value_t *
bn_value_dict_get (const bn_value_t *self, const char *key)
{
    assert (key);
    if (!self)
        return NULL;
    bn_value_t probe = {BN_VALUE_STR, 0, {.i = 0}};
    probe.u.s.data = (char *)key;
    probe.u.s.size = strlen (key);
    return bn_value_dict_lookup (self, &probe);
}

bn_value_t *
bn_value_dict_lookup (const bn_value_t *self, const bn_value_t *key)
{
    assert (key);
    if (!self || self->type != BN_VALUE_DICT)
        return NULL;
    size_t pos = s_find (self, key);
    return pos == SIZE_MAX ? NULL : self->u.c.items[2 * pos + 1];
}

bn_value_t *
bn_value_dict_key (const bn_value_t *self, size_t index)
{
    if (!self)
        return 0;
    if (self->type != BN_VALUE_DICT || index >= self->u.c.size)
        return NULL;
    return self->u.c.items[2 * index];
}

bn_value_t *
bn_value_dict_value (const bn_value_t *self, size_t index)
{
    if (!self)
        return 0;
    if (self->type != BN_VALUE_DICT || index >= self->u.c.size)
        return NULL;
    return self->u.c.items[2 * index + 1];
}

bool
bn_value_set_contains (const bn_value_t *self, const bn_value_t *item)
{
    assert (item);
    return self && self->type == BN_VALUE_SET &&
           s_find (self, item) != SIZE_MAX;
}

bn_value_t *
bn_value_object_class (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_OBJECT ? self->u.o.cls : NULL;
}

bn_value_t *
bn_value_object_args (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_OBJECT ? self->u.o.args : NULL;
}

bn_value_t *
bn_value_object_state (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_OBJECT ? self->u.o.state : NULL;
}

bn_value_t *
bn_value_object_items (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_OBJECT ? self->u.o.items : NULL;
}

bn_value_t *
bn_value_object_kwargs (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_OBJECT ? self->u.o.kwargs : NULL;
}

bool
bn_value_object_is_reduce (const bn_value_t *self)
{
    if (!self)
        return 0;
    return self->type == BN_VALUE_OBJECT && (self->flags & BN_VALUE_REDUCE);
}

bool
bn_value_object_is (const bn_value_t *self, const char *module,
                    const char *name)
{
    assert (module);
    assert (name);
    if (!self || self->type != BN_VALUE_OBJECT)
        return false;
    const bn_value_t *cls = self->u.o.cls;
    return cls->type == BN_VALUE_GLOBAL &&
           (strcmp (cls->u.g.module, module) == 0) &&
           (strcmp (cls->u.g.name, name) == 0);
}

int
bn_value_append (bn_value_t *self, bn_value_t *item)
{
    return bn_value_append_spill (self, item, NULL);
}

int
bn_value_append_spill (bn_value_t *self, bn_value_t *item, bn_value_t *spill)
{
    assert (self);
    assert (self->type == BN_VALUE_LIST || self->type == BN_VALUE_TUPLE ||
            self->type == BN_VALUE_SET);
    assert (!spill || spill->type == BN_VALUE_LIST);
    if (!item)
        return -1;
    if (self->type == BN_VALUE_SET && s_find (self, item) != SIZE_MAX)
        return s_discard (item, spill);
    if (s_grow (self, 1)) {
        bn_value_destroy (&item);
        return -1;
    }
    self->u.c.items[self->u.c.size++] = item;
    if (self->type == BN_VALUE_SET)
        s_index_added (self);
    return 0;
}

int
bn_value_dict_set (bn_value_t *self, bn_value_t *key, bn_value_t *value)
{
    return bn_value_dict_set_spill (self, key, value, NULL);
}

int
bn_value_dict_set_str (bn_value_t *self, const char *key, bn_value_t *value)
{
    assert (key);
    bn_value_t *key_value = bn_value_new_str (key);
    if (!key_value) {
        bn_value_destroy (&value);
        return -1;
    }
    return bn_value_dict_set (self, key_value, value);
}

int
bn_value_dict_set_spill (bn_value_t *self, bn_value_t *key, bn_value_t *value,
                         bn_value_t *spill)
{
    assert (self);
    assert (self->type == BN_VALUE_DICT);
    assert (!spill || spill->type == BN_VALUE_LIST);
    if (!key || !value) {
        bn_value_destroy (&key);
        bn_value_destroy (&value);
        return -1;
    }
    size_t pos = s_find (self, key);
    if (pos != SIZE_MAX) {
        bn_value_t *old = self->u.c.items[2 * pos + 1];
        self->u.c.items[2 * pos + 1] = value;
        int rc = s_discard (old, spill);
        if (s_discard (key, spill))
            rc = -1;
        return rc;
    }
    if (s_grow (self, 2)) {
        bn_value_destroy (&key);
        bn_value_destroy (&value);
        return -1;
    }
    size_t size = self->u.c.size++;
    self->u.c.items[2 * size] = key;
    self->u.c.items[2 * size + 1] = value;
    s_index_added (self);
    return 0;
}

bn_value_t *
bn_value_swap_item (bn_value_t *self, size_t index, bn_value_t *item)
{
    assert (self);
    assert (item);
    assert (self->type == BN_VALUE_LIST || self->type == BN_VALUE_TUPLE ||
            self->type == BN_VALUE_SET);
    assert (index < self->u.c.size);
    bn_value_t *old = self->u.c.items[index];
    self->u.c.items[index] = item;
    if (self->type == BN_VALUE_SET && self->u.c.index)
        s_index_build (self);
    return old;
}

bn_value_t *
bn_value_dict_swap_value (bn_value_t *self, size_t index, bn_value_t *value)
{
    assert (self);
    assert (value);
    assert (self->type == BN_VALUE_DICT);
    assert (index < self->u.c.size);
    bn_value_t *old = self->u.c.items[2 * index + 1];
    self->u.c.items[2 * index + 1] = value;
    return old;
}

bn_value_t *
bn_value_object_swap_state (bn_value_t *self, bn_value_t *state)
{
    assert (self);
    assert (self->type == BN_VALUE_OBJECT);
    bn_value_t *old = self->u.o.state;
    self->u.o.state = state;
    return old;
}

bn_value_t *
bn_value_object_swap_items (bn_value_t *self, bn_value_t *items)
{
    assert (self);
    assert (self->type == BN_VALUE_OBJECT);
    bn_value_t *old = self->u.o.items;
    self->u.o.items = items;
    return old;
}

bn_value_t *
bn_value_object_swap_kwargs (bn_value_t *self, bn_value_t *kwargs)
{
    assert (self);
    assert (self->type == BN_VALUE_OBJECT);
    bn_value_t *old = self->u.o.kwargs;
    self->u.o.kwargs = kwargs;
    return old;
}
