/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_pxout: prefixed and gathered engine output.  */
#include "bn_pxout.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define S_RULE "---------------"

//  Write text line by line with prefix before each line.
static int
s_lines (FILE *file, const char *prefix, const char *text, size_t size)
{
    const char *cursor = text;
    const char *end = text + size;
    while (cursor < end) {
        const char *newline = memchr (cursor, '\n', (size_t)(end - cursor));
        size_t length =
            newline ? (size_t)(newline - cursor) : (size_t)(end - cursor);
        if (fputs (prefix, file) == EOF ||
            fwrite (cursor, 1, length, file) != length ||
            fputc ('\n', file) == EOF)
            return -1;
        cursor += length + 1;
    }
    return 0;
}

int
bn_pxout_prefixed (FILE *file, const char *kind, int id, const char *text,
                   size_t size)
{
    assert (file);
    assert (kind);
    assert (text || size == 0);
    char prefix[64];
    snprintf (prefix, sizeof prefix, "[%s:%d] ", kind, id);
    return s_lines (file, prefix, text, size);
}

int
bn_pxout_tagged (FILE *file, const char *kind, const char *text, size_t size)
{
    assert (file);
    assert (kind);
    assert (text || size == 0);
    char prefix[64];
    snprintf (prefix, sizeof prefix, "[%s] ", kind);
    return s_lines (file, prefix, text, size);
}

int
bn_pxout_text (FILE *file, const char *text, size_t size)
{
    assert (file);
    assert (text || size == 0);
    if (size == 0)
        return 0;
    if (fwrite (text, 1, size, file) != size)
        return -1;
    if (text[size - 1] != '\n' && fputc ('\n', file) == EOF)
        return -1;
    return 0;
}

int
bn_pxout_header (FILE *file, bn_idset_t *ids)
{
    assert (file);
    assert (ids);
    char *name = bn_idset_format (ids);
    if (!name)
        return -1;
    int rc = fprintf (file, S_RULE "\n%s\n" S_RULE "\n", name) < 0 ? -1 : 0;
    free (name);
    return rc;
}
