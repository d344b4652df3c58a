/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_clivalue: words as values.  */
#include "bn_clivalue.h"
#include "bn_apply.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

//  True if the word is written as a decimal number: digits, with an
//  optional sign, point and exponent; strtod alone would also take "inf",
//  "nan" and hexadecimal.
static bool
s_is_number (const char *word)
{
    const char *cursor = word;
    if (*cursor == '+' || *cursor == '-')
        cursor++;
    bool digits = false;
    while (isdigit ((unsigned char)*cursor)) {
        cursor++;
        digits = true;
    }
    if (*cursor == '.') {
        cursor++;
        while (isdigit ((unsigned char)*cursor)) {
            cursor++;
            digits = true;
        }
    }
    if (!digits)
        return false;
    if (*cursor == 'e' || *cursor == 'E') {
        cursor++;
        if (*cursor == '+' || *cursor == '-')
            cursor++;
        if (!isdigit ((unsigned char)*cursor))
            return false;
        while (isdigit ((unsigned char)*cursor))
            cursor++;
    }
    return *cursor == 0;
}

bn_value_t *
bn_clivalue_parse (const char *word)
{
    assert (word);
    //  "@name": what push stored, as Python's Reference("name");
    //  "@@text" is the string "@text"
    if (word[0] == '@' && word[1] == '@')
        return bn_value_new_str (word + 1);
    if (word[0] == '@' && word[1])
        return bn_apply_reference_new (word + 1);
    if (s_is_number (word)) {
        bool integer = !strpbrk (word, ".eE");
        char *end;
        errno = 0;
        if (integer) {
            long long number = strtoll (word, &end, 10);
            if (errno == 0 && *end == 0)
                return bn_value_new_int ((int64_t)number);
        } else {
            double number = strtod (word, &end);
            if (*end == 0 && isfinite (number))
                return bn_value_new_float (number);
        }
    }
    return bn_value_new_str (word);
}

bn_value_t *
bn_clivalue_list (char **words, int count)
{
    bn_value_t *list = bn_value_new_list ();
    for (int index = 0; list && index < count; index++) {
        bn_value_t *value = bn_clivalue_parse (words[index]);
        if (!value || bn_value_append (list, value) != 0)
            bn_value_destroy (&list);
    }
    return list;
}
