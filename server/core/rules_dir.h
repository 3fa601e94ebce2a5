/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_dir.h - the rules files of one directory of rules.directories
 * (internal): which entries are rules files, and a listing that tells
 * whether the directory changed between two looks.
 */
#ifndef SL_SERVER_RULES_DIR_H
#define SL_SERVER_RULES_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/* A directory holding more rules files than this is refused. */
#define SL__RULES_DIR_MAX_FILES 1024

/* One rules file of a directory, as a scan found it. */
struct sl__rules_dir_file {
    char *name;   /* the entry, e.g. "rules.yaml" */
    char *path;   /* directory "/" name: what is read, and named in diagnostics */
    char *target; /* the file its symbolic links lead to (e.g. DIR/..2026_.../rules.yaml) */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

/* A directory's rules files, in name order (strcmp). */
struct sl__rules_dir {
    struct sl__rules_dir_file *files;
    size_t n;
    /* the first entry named like a rules file whose symbolic link leads
     * nowhere (skipped), or NULL; `dangling` counts them */
    char *dangling;
    size_t n_dangling;
};

/*
 * Is directory entry `name` a rules file's name: ends in ".yaml" or
 * ".yml", and does not start with '.' (hidden files, editors' swap files,
 * and a Kubernetes ConfigMap's "..data" and "..2026_12_02_..." entries)?
 */
bool sl__rules_dir_wanted(const char *name);

/*
 * List the rules files of `dir`: every entry sl__rules_dir_wanted() takes,
 * after symbolic links, that is not a directory (subdirectories are not
 * read: the scan is not recursive). A FIFO or a device is listed: reading
 * it refuses it. SL_OK with *out filled (free it with
 * sl__rules_dir_free); SL_ENOENT when `dir` does not exist; SL_EINVAL with
 * `err` saying why (not a directory, unreadable, more than
 * SL__RULES_DIR_MAX_FILES files). Reads no file.
 */
int sl__rules_dir_scan(const char *dir, struct sl__rules_dir *out, char *err, size_t errlen);

/* Do two scans list the same files, each the same version (target,
 * device, inode, size, modification time)? */
bool sl__rules_dir_same(const struct sl__rules_dir *a, const struct sl__rules_dir *b);

void sl__rules_dir_free(struct sl__rules_dir *d);

#endif /* SL_SERVER_RULES_DIR_H */
