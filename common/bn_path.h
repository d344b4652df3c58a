/*  bn_path: the file-system paths more than one program works out: private
    folders made on demand, and the banyan program installed beside this
    one.  */
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

#endif
