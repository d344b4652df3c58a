/*  SPDX-License-Identifier: BSD-3-Clause  */
/*  bn_path: the file-system paths more than one program works out: private
    folders made on demand, and what is installed with this program (the
    other programs, the plugins, the annotated defaults), found from its
    own place in the layout `cmake --install` gives and the build tree
    mirrors, wherever that was put.  */
#ifndef BN_PATH_H_INCLUDED
#define BN_PATH_H_INCLUDED

//  Create folder and each missing folder above it (mkdir -p), the new ones
//  with mode 0700. Returns 0, or -1 with errno set.
int bn_path_mkdir (const char *folder);

//  Create the folder that holds file as bn_path_mkdir does (nothing for a
//  file name without a folder). Returns 0, or -1 with errno set.
int bn_path_mkdir_for (const char *file);

//  The program called name in this program's folder, else the first one
//  in PATH, as an absolute path for the caller to free; NULL if there is
//  none (or out of memory).
char *bn_path_program (const char *name);

//  The folder of the running program, malloc'd; NULL if it is unknown.
char *bn_path_exe_dir (void);

//  <the running program's folder>/relative, resolved (realpath (3)), when
//  access (2) grants mode on it; malloc'd, NULL otherwise.
char *bn_path_beside (const char *relative, int mode);

//  Where the plugin a setting names is: a name with a '/' as given; a
//  bare file name in banyan's plugin folder (<libdir>/banyan) when it is
//  there; else as given, for dlopen (3) to search. Malloc'd, or NULL when
//  out of memory.
char *bn_path_plugin (const char *name);

//  The annotated file of every setting and its default
//  (<datadir>/banyan/banyan.conf), malloc'd; NULL if it is not there.
char *bn_path_defaults (void);

#endif
