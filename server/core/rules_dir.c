/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_dir.c - listing the rules files of a directory: every *.yaml and
 * *.yml entry but hidden ones, symbolic links followed, subdirectories
 * left alone.
 *
 * A Kubernetes ConfigMap mounted as a volume is such a directory: each key
 * is a symbolic link "rules.yaml -> ..data/rules.yaml", "..data" a link to
 * the current timestamped directory "..2026_12_02_...". An update writes a
 * new timestamped directory and renames a new "..data" link over the old
 * one, so the targets a listing records (realpath) tell one generation
 * from the next: two listings that agree, taken before and after reading
 * the files, prove the files read were one generation (rules_load.c).
 *
 * It reads no file and logs nothing: the caller does both.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules_dir.h"
#include "sluice.h"
#include "xalloc.h"

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);

    return n > k && strcmp(s + n - k, suffix) == 0;
}

bool sl__rules_dir_wanted(const char *name)
{
    size_t n = strlen(name);

    if (name[0] == '.')
        return false;
    return ends_with(name, n, ".yaml") || ends_with(name, n, ".yml");
}

static int by_name(const void *a, const void *b)
{
    const struct sl__rules_dir_file *x = a, *y = b;

    return strcmp(x->name, y->name);
}

/* Join `dir` and `name` (no doubled slash after "/" or "dir/"). */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    bool slash = n > 0 && dir[n - 1] == '/';
    size_t need = n + strlen(name) + 2;
    char *p = sl__xrealloc(NULL, need);

    snprintf(p, need, "%s%s%s", dir, slash ? "" : "/", name);
    return p;
}

/* Add entry `name` of `dir` to `out` (or count it dangling). SL_OK,
 * SL_EINVAL with `err`. */
static int add_entry(const char *dir, const char *name, struct sl__rules_dir *out, size_t *cap,
                     char *err, size_t errlen)
{
    char *path = join(dir, name), real[PATH_MAX];
    struct sl__rules_dir_file *f;
    struct stat st;

    if (stat(path, &st) != 0 || (!S_ISDIR(st.st_mode) && realpath(path, real) == NULL)) {
        if (errno == ENOENT) { /* a symbolic link to nothing (or gone since readdir) */
            if (out->dangling == NULL)
                out->dangling = path;
            else
                free(path);
            out->n_dangling++;
            return SL_OK;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(path);
        return SL_EINVAL;
    }
    if (S_ISDIR(st.st_mode)) {
        free(path); /* a subdirectory: the scan is not recursive */
        return SL_OK;
    }
    if (out->n == SL__RULES_DIR_MAX_FILES) {
        snprintf(err, errlen, "more than %d rules files", SL__RULES_DIR_MAX_FILES);
        free(path);
        return SL_EINVAL;
    }
    if (out->n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        out->files = sl__xrealloc(out->files, *cap * sizeof(*out->files));
    }
    f = &out->files[out->n++];
    f->name = sl__xstrndup(name, strlen(name));
    f->path = path;
    f->target = sl__xstrndup(real, strlen(real));
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->size = st.st_size;
    f->mtime = st.st_mtim;
    return SL_OK;
}

int sl__rules_dir_scan(const char *dir, struct sl__rules_dir *out, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    size_t cap = 0;
    int rc = SL_OK;

    memset(out, 0, sizeof(*out));
    if (errlen > 0)
        err[0] = '\0';
    if (d == NULL) {
        if (errno == ENOENT)
            return SL_ENOENT;
        snprintf(err, errlen, "cannot open rules directory: %s",
                 errno == ENOTDIR ? "not a directory" : strerror(errno));
        return SL_EINVAL;
    }
    for (;;) {
        struct dirent *e;
        errno = 0;
        e = readdir(d);
        if (e == NULL) {
            if (errno != 0) {
                snprintf(err, errlen, "cannot read rules directory: %s", strerror(errno));
                rc = SL_EINVAL;
            }
            break;
        }
        if (!sl__rules_dir_wanted(e->d_name))
            continue;
        rc = add_entry(dir, e->d_name, out, &cap, err, errlen);
        if (rc != SL_OK)
            break;
    }
    closedir(d);
    if (rc != SL_OK) {
        sl__rules_dir_free(out);
        return rc;
    }
    if (out->n > 1)
        qsort(out->files, out->n, sizeof(*out->files), by_name);
    return SL_OK;
}

bool sl__rules_dir_same(const struct sl__rules_dir *a, const struct sl__rules_dir *b)
{
    if (a->n != b->n || a->n_dangling != b->n_dangling)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const struct sl__rules_dir_file *x = &a->files[i], *y = &b->files[i];
        if (strcmp(x->name, y->name) != 0 || strcmp(x->target, y->target) != 0 ||
            x->dev != y->dev || x->ino != y->ino || x->size != y->size ||
            x->mtime.tv_sec != y->mtime.tv_sec || x->mtime.tv_nsec != y->mtime.tv_nsec)
            return false;
    }
    return true;
}

void sl__rules_dir_free(struct sl__rules_dir *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->files[i].name);
        free(d->files[i].path);
        free(d->files[i].target);
    }
    free(d->files);
    free(d->dangling);
    memset(d, 0, sizeof(*d));
}
