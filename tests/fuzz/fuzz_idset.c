/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_idset: engine id sets in pdsh syntax (bn_idset_parse), as a user
    types them after --targets and as tree nodes read them from bn_groups
    and bn_reduced. A second parser written here from the documented
    grammar must agree on what is accepted and on every range; an accepted
    set re-encodes to text that parses back to the same set.  */
#include "bn_fuzz.h"
#include "bn_idset.h"

#include <limits.h>

#define S_MAX_RANGES 4096

typedef struct {
    long long first, last;
} s_range_t;

//  The grammar of bn_idset.h: blanks (space, tab) around elements, elements
//  "N" or "N-M" (M >= N, ids <= INT_MAX) separated by commas; the empty or
//  blank text is the empty set. Returns the number of ranges, -1 when the
//  text is not such a list, -2 when it has more ranges than fit.
static int
s_reference_parse (const char *text, s_range_t *ranges)
{
    const char *p = text + strspn (text, " \t");
    if (*p == 0)
        return 0;
    int count = 0;
    while (true) {
        p += strspn (p, " \t");
        long long id[2];
        int ids = 0;
        while (true) {
            if (*p < '0' || *p > '9')
                return -1;
            long long value = 0;
            while (*p >= '0' && *p <= '9') {
                value = value * 10 + (*p++ - '0');
                if (value > INT_MAX)
                    return -1;
            }
            id[ids++] = value;
            p += strspn (p, " \t");
            if (ids == 2 || *p != '-')
                break;
            p++;
            p += strspn (p, " \t");
        }
        if (ids == 2 && id[1] < id[0])
            return -1;
        if (count == S_MAX_RANGES)
            return -2;
        ranges[count++] = (s_range_t){id[0], ids == 2 ? id[1] : id[0]};
        if (*p == 0)
            return count;
        if (*p++ != ',')
            return -1;
    }
}

static int
s_by_first (const void *a, const void *b)
{
    const s_range_t *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

//  Fold ranges into sorted, disjoint, non-touching ones; returns how many.
static int
s_fold (s_range_t *ranges, int count)
{
    qsort (ranges, (size_t)count, sizeof *ranges, s_by_first);
    int out = 0;
    for (int i = 0; i < count; i++) {
        if (out && ranges[i].first <= ranges[out - 1].last + 1) {
            if (ranges[i].last > ranges[out - 1].last)
                ranges[out - 1].last = ranges[i].last;
        } else
            ranges[out++] = ranges[i];
    }
    return out;
}

//  The set holds exactly the folded ranges.
static void
s_check_set (bn_idset_t *set, const s_range_t *ranges, int count)
{
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        long long first = ranges[i].first, last = ranges[i].last;
        total += (size_t)(last - first + 1);
        BN_FUZZ_CHECK (bn_idset_contains (set, (int)first));
        BN_FUZZ_CHECK (bn_idset_contains (set, (int)last));
        if (first > 0)
            BN_FUZZ_CHECK (!bn_idset_contains (set, (int)first - 1));
        if (last < INT_MAX)
            BN_FUZZ_CHECK (!bn_idset_contains (set, (int)last + 1));
        //  walking the set goes from one range to the next
        BN_FUZZ_CHECK (bn_idset_next (set, (int)first - 1) == (int)first);
        BN_FUZZ_CHECK (bn_idset_next (set, (int)last) ==
                       (i + 1 < count ? (int)ranges[i + 1].first : -1));
    }
    BN_FUZZ_CHECK (bn_idset_count (set) == total);
    BN_FUZZ_CHECK (bn_idset_first (set) == (count ? (int)ranges[0].first : -1));
    BN_FUZZ_CHECK (bn_idset_last (set) ==
                   (count ? (int)ranges[count - 1].last : -1));
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = bn_fuzz_text (data, size);
    static s_range_t ranges[S_MAX_RANGES];
    int count = s_reference_parse (text, ranges);
    bn_idset_t *set = bn_idset_parse (text);
    if (count == -2) {
        bn_idset_destroy (&set);
        free (text);
        return 0;
    }
    BN_FUZZ_CHECK ((set != NULL) == (count >= 0));
    if (!set) {
        //  a refused text leaves a set it is added to unchanged
        bn_idset_t *other = bn_idset_parse ("1-3,7");
        BN_FUZZ_CHECK (other);
        BN_FUZZ_CHECK (bn_idset_add_text (other, text) == -1);
        char *same = bn_idset_encode (other);
        BN_FUZZ_CHECK (same && strcmp (same, "1-3,7") == 0);
        free (same);
        bn_idset_destroy (&other);
        free (text);
        return 0;
    }
    count = s_fold (ranges, count);
    s_check_set (set, ranges, count);

    //  the folded text is the canonical one: it parses to the same set and
    //  encodes to itself
    char *folded = bn_idset_encode (set);
    BN_FUZZ_CHECK (folded);
    bn_idset_t *again = bn_idset_parse (folded);
    BN_FUZZ_CHECK (again && bn_idset_equal (set, again));
    char *refolded = bn_idset_encode (again);
    BN_FUZZ_CHECK (refolded && strcmp (folded, refolded) == 0);
    char *display = bn_idset_format (set);
    BN_FUZZ_CHECK (display && strncmp (display, "engines[", 8) == 0);

    //  removing each range's ends and middle, then adding them back,
    //  returns to the same set
    bn_idset_t *copy = bn_idset_dup (set);
    BN_FUZZ_CHECK (copy && bn_idset_equal (set, copy));
    for (int i = 0; i < count && i < 64; i++) {
        int ids[3] = {
            (int)ranges[i].first, (int)ranges[i].last,
            (int)(ranges[i].first + (ranges[i].last - ranges[i].first) / 2)};
        for (int k = 0; k < 3; k++) {
            BN_FUZZ_CHECK (bn_idset_remove (copy, ids[k]) == 0);
            BN_FUZZ_CHECK (!bn_idset_contains (copy, ids[k]));
        }
        for (int k = 0; k < 3; k++)
            BN_FUZZ_CHECK (bn_idset_add (copy, ids[k]) == 0);
    }
    BN_FUZZ_CHECK (bn_idset_equal (set, copy));
    BN_FUZZ_CHECK (bn_idset_count (set) == bn_idset_count (copy));

    free (display);
    free (refolded);
    free (folded);
    bn_idset_destroy (&copy);
    bn_idset_destroy (&again);
    bn_idset_destroy (&set);
    free (text);
    return 0;
}
