/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_connfile: connection files (bn_connfile), which engines and
    clients read from the controller's profile or from
    $IPP_CONNECTION_INFO. The input is the file's text. The text and the
    file are two ways in that must agree; a refused file says why; an
    accepted one is saved and loaded back with every value the same, and
    saving that again writes the same bytes.  */
#include "bn_connfile.h"
#include "bn_fuzz.h"

#include <jansson.h>
#include <unistd.h>

static const char *s_ports[] = {"registration", "control",     "mux",
                                "task",         "iopub",       "hb_ping",
                                "hb_pong",      "notification"};
static char s_dir[64];        //  a private folder in /dev/shm
static char s_input[128];     //  the input as a file
static char s_saved[128];     //  bn_connfile_save's file
static char s_saved_too[128]; //  saved again after loading

static void
s_cleanup (void)
{
    unlink (s_input);
    unlink (s_saved);
    unlink (s_saved_too);
    rmdir (s_dir);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
    snprintf (s_dir, sizeof s_dir, "%s/bn-fuzz-connfile-XXXXXX",
              access ("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    BN_FUZZ_CHECK (mkdtemp (s_dir));
    snprintf (s_input, sizeof s_input, "%s/input.json", s_dir);
    snprintf (s_saved, sizeof s_saved, "%s/saved.json", s_dir);
    snprintf (s_saved_too, sizeof s_saved_too, "%s/again.json", s_dir);
    atexit (s_cleanup);
    return 0;
}

static bool
s_same_string (const char *a, const char *b)
{
    return (a == NULL) == (b == NULL) && (!a || strcmp (a, b) == 0);
}

//  Every value of two connection files is the same.
static void
s_check_same (bn_connfile_t *a, bn_connfile_t *b)
{
    BN_FUZZ_CHECK (bn_connfile_kind (a) == bn_connfile_kind (b));
    for (size_t i = 0; i < sizeof s_ports / sizeof s_ports[0]; i++)
        BN_FUZZ_CHECK (bn_connfile_port (a, s_ports[i]) ==
                       bn_connfile_port (b, s_ports[i]));
    BN_FUZZ_CHECK (bn_connfile_broadcast_count (a) ==
                   bn_connfile_broadcast_count (b));
    for (size_t i = 0; i < bn_connfile_broadcast_count (a); i++)
        BN_FUZZ_CHECK (bn_connfile_broadcast (a, i) ==
                       bn_connfile_broadcast (b, i));
    const char *(*getters[]) (bn_connfile_t *) = {
        bn_connfile_interface, bn_connfile_key,    bn_connfile_signature_scheme,
        bn_connfile_location,  bn_connfile_ssh,    bn_connfile_task_scheme,
        bn_connfile_pack,      bn_connfile_unpack, bn_connfile_curve_serverkey};
    for (size_t i = 0; i < sizeof getters / sizeof getters[0]; i++)
        BN_FUZZ_CHECK (s_same_string (getters[i](a), getters[i](b)));
}

static char *
s_slurp (const char *path, size_t *size)
{
    FILE *file = fopen (path, "rb");
    BN_FUZZ_CHECK (file);
    char *data = NULL;
    size_t cap = 0;
    *size = 0;
    while (true) {
        if (*size == cap) {
            cap = cap ? cap * 2 : 4096;
            data = realloc (data, cap);
            BN_FUZZ_CHECK (data);
        }
        size_t got = fread (data + *size, 1, cap - *size, file);
        if (got == 0)
            break;
        *size += got;
    }
    fclose (file);
    return data;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *text = bn_fuzz_text (data, size);
    char err[512] = "";
    bn_connfile_t *parsed = bn_connfile_parse (text, err, sizeof err);
    if (!parsed)
        BN_FUZZ_CHECK (err[0] != 0);

    //  the same bytes as a file: the same verdict and values (a NUL byte
    //  ends the text, not the file)
    if (!memchr (data, 0, size)) {
        FILE *file = fopen (s_input, "wb");
        BN_FUZZ_CHECK (file && fwrite (data, 1, size, file) == size);
        fclose (file);
        char file_err[512] = "";
        bn_connfile_t *loaded =
            bn_connfile_load (s_input, file_err, sizeof file_err);
        BN_FUZZ_CHECK ((loaded != NULL) == (parsed != NULL));
        BN_FUZZ_CHECK (loaded || file_err[0] != 0);
        if (loaded)
            s_check_same (parsed, loaded);
        bn_connfile_destroy (&loaded);
    }
    if (!parsed) {
        free (text);
        return 0;
    }

    //  the values are the document's
    json_t *root = json_loads (text, 0, NULL);
    BN_FUZZ_CHECK (root);
    for (size_t i = 0; i < sizeof s_ports / sizeof s_ports[0]; i++) {
        int port = bn_connfile_port (parsed, s_ports[i]);
        BN_FUZZ_CHECK (port != 0);
        if (port > 0) {
            BN_FUZZ_CHECK (json_integer_value (
                               json_object_get (root, s_ports[i])) == port);
            char *url = bn_connfile_url (parsed, s_ports[i]);
            BN_FUZZ_CHECK (url);
            free (url);
        }
    }
    BN_FUZZ_CHECK (
        s_same_string (bn_connfile_key (parsed),
                       json_string_value (json_object_get (root, "key"))
                           ? json_string_value (json_object_get (root, "key"))
                           : ""));
    json_decref (root);

    //  saved and loaded back: the same values, and saved again the same
    //  bytes
    BN_FUZZ_CHECK (bn_connfile_save (parsed, s_saved) == 0);
    bn_connfile_t *back = bn_connfile_load (s_saved, err, sizeof err);
    if (!back)
        fprintf (stderr, "loading what was saved: %s\n", err);
    BN_FUZZ_CHECK (back);
    s_check_same (parsed, back);
    BN_FUZZ_CHECK (bn_connfile_save (back, s_saved_too) == 0);
    size_t first_size, second_size;
    char *first = s_slurp (s_saved, &first_size);
    char *second = s_slurp (s_saved_too, &second_size);
    BN_FUZZ_CHECK (first_size == second_size &&
                   memcmp (first, second, first_size) == 0);
    free (first);
    free (second);
    bn_connfile_destroy (&back);
    bn_connfile_destroy (&parsed);
    free (text);
    return 0;
}
