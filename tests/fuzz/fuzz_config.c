/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  fuzz_config: the config file reader (bn_config_load_file, banyan's own
    ZPL parser) and the durations its settings take. The input is the
    file. A refused file names the problem and applies nothing; an
    accepted one prints (banyan config show) as text that loads back to the
    same settings; each line read as a duration formats as text that reads
    back the same.  */
#include "bn_config.h"
#include "bn_fuzz.h"

#include <unistd.h>

static char s_dir[64];    //  a private folder in /dev/shm
static char s_file[128];  //  the input as a file
static char s_again[128]; //  what bn_config_print wrote
static char *s_defaults;  //  bn_config_print of the defaults
static size_t s_defaults_size;

static void
s_cleanup (void)
{
    unlink (s_file);
    unlink (s_again);
    rmdir (s_dir);
    free (s_defaults);
}

//  bn_config_print's text, malloc'd.
static char *
s_print (bn_config_t *config, size_t *size)
{
    char *text = NULL;
    FILE *stream = open_memstream (&text, size);
    BN_FUZZ_CHECK (stream);
    bn_config_print (config, stream);
    fclose (stream);
    return text;
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
    snprintf (s_dir, sizeof s_dir, "%s/bn-fuzz-config-XXXXXX",
              access ("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    BN_FUZZ_CHECK (mkdtemp (s_dir));
    snprintf (s_file, sizeof s_file, "%s/banyan.conf", s_dir);
    snprintf (s_again, sizeof s_again, "%s/shown.conf", s_dir);
    bn_config_t *config = bn_config_new ();
    BN_FUZZ_CHECK (config);
    s_defaults = s_print (config, &s_defaults_size);
    bn_config_destroy (&config);
    atexit (s_cleanup);
    return 0;
}

static void
s_write (const char *path, const void *data, size_t size)
{
    FILE *file = fopen (path, "wb");
    BN_FUZZ_CHECK (file && fwrite (data, 1, size, file) == size);
    BN_FUZZ_CHECK (fclose (file) == 0);
}

//  Every setting has the same value in both.
static void
s_check_same (bn_config_t *a, bn_config_t *b)
{
    for (int i = 0; i < bn_config_count (); i++) {
        const char *name = bn_config_name (i);
        switch (bn_config_type (name)) {
        case BN_CONFIG_INT:
            BN_FUZZ_CHECK (bn_config_int (a, name) == bn_config_int (b, name));
            break;
        case BN_CONFIG_DOUBLE:
            BN_FUZZ_CHECK (bn_config_double (a, name) ==
                           bn_config_double (b, name));
            break;
        case BN_CONFIG_BOOL:
            BN_FUZZ_CHECK (bn_config_bool (a, name) ==
                           bn_config_bool (b, name));
            break;
        case BN_CONFIG_DURATION:
            BN_FUZZ_CHECK (bn_config_msecs (a, name) ==
                           bn_config_msecs (b, name));
            break;
        case BN_CONFIG_PORTS: {
            int range_a[2], range_b[2];
            bn_config_ports (a, name, &range_a[0], &range_a[1]);
            bn_config_ports (b, name, &range_b[0], &range_b[1]);
            BN_FUZZ_CHECK (range_a[0] == range_b[0] &&
                           range_a[1] == range_b[1]);
            break;
        }
        case BN_CONFIG_STRING:
            if (strcmp (bn_config_str (a, name), bn_config_str (b, name))) {
                fprintf (stderr, "%s: '%s' != '%s'\n", name,
                         bn_config_str (a, name), bn_config_str (b, name));
                abort ();
            }
            break;
        }
    }
}

//  A duration (each line of the input is tried as one) formats as text
//  that reads back the same, in either bare unit.
static void
s_check_durations (const uint8_t *data, size_t size)
{
    char *text = bn_fuzz_text (data, size);
    char *line = text;
    for (int n = 0; line && n < 8; n++) {
        char *next = strchr (line, '\n');
        if (next)
            *next++ = 0;
        for (int64_t unit = 1; unit <= 1000; unit *= 1000) {
            int64_t msecs, again;
            if (bn_config_parse_duration (line, unit, &msecs) != 0)
                continue;
            BN_FUZZ_CHECK (msecs >= 0);
            char formatted[64];
            bn_config_format_duration (msecs, formatted, sizeof formatted);
            BN_FUZZ_CHECK (bn_config_parse_duration (formatted, unit, &again) ==
                           0);
            BN_FUZZ_CHECK (again == msecs);
        }
        line = next;
    }
    free (text);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    s_check_durations (data, size);
    s_write (s_file, data, size);
    bn_config_t *config = bn_config_new ();
    BN_FUZZ_CHECK (config);
    if (bn_config_load_file (config, s_file) != 0) {
        //  the error names the file, and nothing of it was applied
        BN_FUZZ_CHECK (
            strncmp (bn_config_error (config), s_file, strlen (s_file)) == 0);
        size_t printed_size;
        char *printed = s_print (config, &printed_size);
        BN_FUZZ_CHECK (printed_size == s_defaults_size &&
                       memcmp (printed, s_defaults, printed_size) == 0);
        free (printed);
        bn_config_destroy (&config);
        return 0;
    }
    BN_FUZZ_CHECK (bn_config_error (config)[0] == 0);

    size_t printed_size;
    char *printed = s_print (config, &printed_size);
    s_write (s_again, printed, printed_size);
    bn_config_t *again = bn_config_new ();
    BN_FUZZ_CHECK (again);
    if (bn_config_load_file (again, s_again) != 0) {
        fprintf (stderr, "loading what config show printed: %s\n",
                 bn_config_error (again));
        abort ();
    }
    s_check_same (config, again);
    free (printed);
    bn_config_destroy (&again);
    bn_config_destroy (&config);
    return 0;
}
