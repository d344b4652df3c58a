/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_path: private folders, and the programs, plugins and defaults
    beside this one.  */
#include "bn_path.h"

#include <assert.h>
#include <czmq.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  From the programs' folder to the plugin folder and the data folder, as
//  installed (CMake works them out from GNUInstallDirs).
#ifndef BN_PLUGIN_RELDIR
#define BN_PLUGIN_RELDIR "../lib/banyan"
#endif
#ifndef BN_DATA_RELDIR
#define BN_DATA_RELDIR "../share/banyan"
#endif

//  zsys_dir_create would do but for the mode: its folders get 0775 less
//  the umask, and a profile's folders hold the session key and the tree's
//  ipc sockets, which only their owner may reach.
int
bn_path_mkdir (const char *folder)
{
    assert (folder);
    char *copy = strdup (folder);
    if (!copy)
        return -1;
    int rc = 0;
    for (char *end = copy + (*copy == '/'); rc == 0; end++) {
        if (*end != '/' && *end != 0)
            continue;
        char saved = *end;
        *end = 0;
        if (mkdir (copy, 0700) != 0 && errno != EEXIST)
            rc = -1;
        *end = saved;
        if (saved == 0)
            break;
    }
    int error = errno;
    free (copy);
    errno = error;
    return rc;
}

int
bn_path_mkdir_for (const char *file)
{
    assert (file);
    const char *slash = strrchr (file, '/');
    if (!slash || slash == file)
        return 0;
    char *folder = strndup (file, (size_t)(slash - file));
    if (!folder)
        return -1;
    int rc = bn_path_mkdir (folder);
    int error = errno;
    free (folder);
    errno = error;
    return rc;
}

//  The program called name in folder, malloc'd, if it is there and may be
//  run; else NULL.
static char *
s_program_in (const char *folder, size_t length, const char *name)
{
    char *path = zsys_sprintf ("%.*s/%s", (int)length, folder, name);
    if (path && access (path, X_OK) == 0)
        return path;
    zstr_free (&path);
    return NULL;
}

char *
bn_path_program (const char *name)
{
    assert (name);
    char *path = NULL;
    char *exe_dir = bn_path_exe_dir ();
    if (exe_dir)
        path = s_program_in (exe_dir, strlen (exe_dir), name);
    free (exe_dir);
    const char *search = getenv ("PATH");
    char cwd[PATH_MAX];
    bool have_cwd = getcwd (cwd, sizeof cwd) != NULL;
    while (!path && search) {
        const char *colon = strchr (search, ':');
        size_t length = colon ? (size_t)(colon - search) : strlen (search);
        if (*search == '/')
            path = s_program_in (search, length, name);
        else if (have_cwd) {
            //  an empty element is the current folder, a relative one is
            //  below it
            char *folder =
                length ? zsys_sprintf ("%s/%.*s", cwd, (int)length, search)
                       : strdup (cwd);
            if (folder)
                path = s_program_in (folder, strlen (folder), name);
            free (folder);
        }
        search = colon ? colon + 1 : NULL;
    }
    return path;
}

char *
bn_path_exe_dir (void)
{
    char exe[PATH_MAX];
    ssize_t size = readlink ("/proc/self/exe", exe, sizeof exe - 1);
    if (size <= 0)
        return NULL;
    exe[size] = 0;
    char *slash = strrchr (exe, '/');
    if (!slash)
        return NULL;
    *slash = 0;
    return strdup (slash == exe ? "/" : exe);
}

char *
bn_path_beside (const char *relative, int mode)
{
    assert (relative);
    char *dir = bn_path_exe_dir ();
    char *path = dir ? zsys_sprintf ("%s/%s", dir, relative) : NULL;
    free (dir);
    if (path && access (path, mode) != 0)
        zstr_free (&path);
    //  Without its "..": the path a user would write
    char *real = path ? realpath (path, NULL) : NULL;
    if (real) {
        free (path);
        path = real;
    }
    return path;
}

char *
bn_path_plugin (const char *name)
{
    assert (name);
    char *path = NULL;
    if (!strchr (name, '/')) {
        char *relative = zsys_sprintf ("%s/%s", BN_PLUGIN_RELDIR, name);
        path = relative ? bn_path_beside (relative, R_OK) : NULL;
        zstr_free (&relative);
    }
    return path ? path : strdup (name);
}

char *
bn_path_defaults (void)
{
    return bn_path_beside (BN_DATA_RELDIR "/banyan.conf", R_OK);
}
