/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_fuzz: what the libFuzzer harnesses share: the entry points, a check
    that aborts with its condition (libFuzzer and the replay driver both
    report an abort as a failure), and the frame list format of inputs
    that hold several frames.  */
#ifndef BN_FUZZ_H_INCLUDED
#define BN_FUZZ_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The harness: called once per input, returns 0.
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

//  Optional set-up, called once before the first input.
int LLVMFuzzerInitialize (int *argc, char ***argv);

//  A property the harness asserts of the code under test; NDEBUG does not
//  turn it off.
#define BN_FUZZ_CHECK(cond)                                                    \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf (stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                     #cond);                                                   \
            abort ();                                                          \
        }                                                                      \
    } while (0)

//  Inputs of several frames (messages, buffer lists) are a list of frames,
//  each a little-endian u32 size then its bytes; a size past the end of
//  the input takes what is left, so every input reads as some frames.
#define BN_FUZZ_MAX_FRAMES 64

typedef struct {
    const uint8_t *data[BN_FUZZ_MAX_FRAMES];
    size_t size[BN_FUZZ_MAX_FRAMES];
    size_t count;
} bn_fuzz_frames_t;

//  Split an input into at most BN_FUZZ_MAX_FRAMES frames (the rest of the
//  input is ignored).
static inline void
bn_fuzz_frames (const uint8_t *data, size_t size, bn_fuzz_frames_t *frames)
{
    frames->count = 0;
    while (size >= 4 && frames->count < BN_FUZZ_MAX_FRAMES) {
        size_t length = (size_t)data[0] | (size_t)data[1] << 8 |
                        (size_t)data[2] << 16 | (size_t)data[3] << 24;
        data += 4;
        size -= 4;
        if (length > size)
            length = size;
        frames->data[frames->count] = data;
        frames->size[frames->count] = length;
        frames->count++;
        data += length;
        size -= length;
    }
}

//  A NUL-terminated malloc'd copy of an input (text parsers); never NULL.
static inline char *
bn_fuzz_text (const uint8_t *data, size_t size)
{
    char *text = malloc (size + 1);
    if (!text)
        abort ();
    if (size)
        memcpy (text, data, size);
    text[size] = 0;
    return text;
}

#endif
