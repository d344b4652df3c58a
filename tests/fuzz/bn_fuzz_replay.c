/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_fuzz_replay: the main of a harness built without libFuzzer: runs
    each file named (or each file in each folder named) through the
    harness once, as `harness -runs=0 DIR...` does under libFuzzer, so
    that every build replays the corpus and the regression inputs.  */
#include "bn_fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

//  Weak: most harnesses need no set-up.
__attribute__ ((weak)) int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
    return 0;
}

//  Run one file through the harness; -1 if it cannot be read.
static int
s_replay_file (const char *path)
{
    FILE *file = fopen (path, "rb");
    if (!file) {
        fprintf (stderr, "%s: %s\n", path, strerror (errno));
        return -1;
    }
    size_t size = 0, cap = 4096;
    uint8_t *data = malloc (cap);
    size_t got;
    while (data && (got = fread (data + size, 1, cap - size, file)) > 0) {
        size += got;
        if (size == cap) {
            uint8_t *bigger = realloc (data, cap *= 2);
            if (!bigger)
                free (data);
            data = bigger;
        }
    }
    fclose (file);
    if (!data) {
        fprintf (stderr, "%s: out of memory\n", path);
        return -1;
    }
    //  an exact-size copy, so that ASan sees a read past the input's end
    uint8_t *input = malloc (size ? size : 1);
    if (!input) {
        free (data);
        return -1;
    }
    memcpy (input, data, size);
    free (data);
    LLVMFuzzerTestOneInput (input, size);
    free (input);
    return 0;
}

static int
s_by_name (const void *a, const void *b)
{
    return strcmp (*(char *const *)a, *(char *const *)b);
}

//  Run every regular file of a folder, in name order; returns the number
//  run, or -1 on an error.
static int
s_replay_dir (const char *dir)
{
    DIR *handle = opendir (dir);
    if (!handle) {
        fprintf (stderr, "%s: %s\n", dir, strerror (errno));
        return -1;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *entry;
    while ((entry = readdir (handle))) {
        if (entry->d_name[0] == '.')
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            char **bigger = realloc (names, cap * sizeof *names);
            if (!bigger)
                abort ();
            names = bigger;
        }
        size_t len = strlen (dir) + strlen (entry->d_name) + 2;
        names[count] = malloc (len);
        if (!names[count])
            abort ();
        snprintf (names[count++], len, "%s/%s", dir, entry->d_name);
    }
    closedir (handle);
    if (count)
        qsort (names, count, sizeof *names, s_by_name);
    int run = 0;
    for (size_t i = 0; i < count; i++) {
        struct stat info;
        if (stat (names[i], &info) == 0 && S_ISREG (info.st_mode)) {
            if (s_replay_file (names[i]) != 0)
                run = -1;
            else if (run >= 0)
                run++;
        }
        free (names[i]);
    }
    free (names);
    return run;
}

int
main (int argc, char *argv[])
{
    LLVMFuzzerInitialize (&argc, &argv);
    int total = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue; //  libFuzzer flags mean nothing here
        struct stat info;
        if (stat (argv[i], &info) != 0) {
            fprintf (stderr, "%s: %s\n", argv[i], strerror (errno));
            return 1;
        }
        int run = S_ISDIR (info.st_mode)    ? s_replay_dir (argv[i])
                  : s_replay_file (argv[i]) ? -1
                                            : 1;
        if (run < 0)
            return 1;
        printf ("%s: %d inputs\n", argv[i], run);
        total += run;
    }
    printf ("replayed %d inputs\n", total);
    return 0;
}
