/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_pickle: the pickle subset (bn_pickle_decode) that reads what
    Python peers pickle: apply arguments and results, pushed values. The
    input is one pickle. A refused pickle leaves an error text; a decoded
    value encodes (unless Python could not load it back: an unhashable
    dict key or set item) to a pickle that decodes to an equal value and
    re-encodes to the same bytes.  */
#include "bn_fuzz.h"
#include "bn_fuzz_value.h"
#include "bn_pickle.h"
#include "bn_value.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char err[256] = "";
    bn_value_t *value = bn_pickle_decode (data, size, err, sizeof err);
    if (!value) {
        BN_FUZZ_CHECK (err[0] != 0);
        return 0;
    }
    char *repr = bn_value_repr (value);
    BN_FUZZ_CHECK (repr);
    bn_value_t *copy = bn_value_dup (value);
    BN_FUZZ_CHECK (copy && bn_value_equal (value, copy));
    bn_value_destroy (&copy);

    size_t encoded_size;
    uint8_t *encoded = bn_pickle_encode (value, &encoded_size);
    if (!encoded)
        BN_FUZZ_CHECK (!bn_fuzz_encodable (value));
    else {
        bn_value_t *again =
            bn_pickle_decode (encoded, encoded_size, err, sizeof err);
        if (!again)
            fprintf (stderr, "re-decoding failed: %s\n", err);
        BN_FUZZ_CHECK (again);
        BN_FUZZ_CHECK_EQUAL (value, again);
        char *repr_again = bn_value_repr (again);
        BN_FUZZ_CHECK (repr_again && strcmp (repr, repr_again) == 0);
        size_t size_again;
        uint8_t *reencoded = bn_pickle_encode (again, &size_again);
        BN_FUZZ_CHECK (reencoded && size_again == encoded_size &&
                       memcmp (reencoded, encoded, encoded_size) == 0);
        free (reencoded);
        free (repr_again);
        bn_value_destroy (&again);
        free (encoded);
    }
    free (repr);
    bn_value_destroy (&value);
    return 0;
}
