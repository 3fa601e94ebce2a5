/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_read.c - reading one rules file consistently: what a reload reads
 * is a file as it stood, whole, for at least the debounce.
 *
 * A file is compared before and after its read (size, modification time,
 * inode, and the path still naming that inode: editors replace files by
 * renaming) and read again when it moved; a file modified less than the
 * debounce ago is read again once it has stayed unchanged that long, so a
 * slow writer (a copy over the network, a config manager writing in
 * pieces) is never read half-way. An absent file is looked at again after
 * the debounce (an editor that deletes and recreates it), and only then
 * reported gone. Only a regular file is read (regular.h): a FIFO put in
 * its place would otherwise hold the reload, and the shutdown, forever.
 *
 * It does not parse anything (rules_load.c hands the text to the library)
 * and runs off the event loops: it sleeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "regular.h"
#include "rules_read.h"
#include "sluice.h"
#include "xalloc.h"

/* Sleep slices while waiting, so that a stopping server is not held. */
#define WAIT_SLICE_MS 5
/* Pause before reading again a file caught changing. */
#define CHANGED_PAUSE_MS 10

/* What identifies one version of a file. */
struct version {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

static void version_of(const struct stat *st, struct version *v)
{
    v->dev = st->st_dev;
    v->ino = st->st_ino;
    v->size = st->st_size;
    v->mtime = st->st_mtim;
}

static bool same_version(const struct version *a, const struct version *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Sleep `ms`, in slices; false if `stop` was set meanwhile. */
static bool wait_ms(int64_t ms, const atomic_bool *stop)
{
    while (ms > 0) {
        int64_t slice = ms < WAIT_SLICE_MS ? ms : WAIT_SLICE_MS;
        struct timespec ts = {0, (long)(slice * 1000000)};
        if (stop != NULL && atomic_load(stop))
            return false;
        nanosleep(&ts, NULL);
        ms -= slice;
    }
    return stop == NULL || !atomic_load(stop);
}

/* Milliseconds since `v` was modified (negative: a clock behind the
 * file system's). */
static int64_t age_ms(const struct version *v)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)(now.tv_sec - v->mtime.tv_sec) * 1000 +
           (now.tv_nsec - v->mtime.tv_nsec) / 1000000;
}

/* Read the open file to its end. SL_OK, SL_ETOOBIG or SL_EINVAL (errno). */
static int read_all(int fd, char **text, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *p = sl__xrealloc(NULL, cap);

    for (;;) {
        ssize_t k = read(fd, p + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            free(p);
            return SL_EINVAL;
        }
        if (k == 0)
            break;
        n += (size_t)k;
        if (n == cap) {
            if (cap >= SL__RULES_FILE_MAX) {
                free(p);
                return SL_ETOOBIG;
            }
            cap *= 2;
            p = sl__xrealloc(p, cap);
        }
    }
    *text = p;
    *len = n;
    return SL_OK;
}

/*
 * One read of `path`: SL_OK with the text and the version read, and
 * *moved when the file changed under the read; SL_ENOENT when absent;
 * SL_EINVAL / SL_ETOOBIG logged.
 */
static int read_once(const char *path, char **text, size_t *len, struct version *v, bool *moved)
{
    struct stat before, after, named;
    struct version a, b, c;
    const char *why;
    int fd = sl__open_regular(path, &before, &why), rc;

    if (fd < 0 && errno == ENOENT)
        return SL_ENOENT;
    if (fd < 0) {
        sl__err("rules.unreadable", "%s:1:1: cannot open rules file: %s", path, why);
        return SL_EINVAL;
    }
    rc = read_all(fd, text, len);
    if (rc == SL_OK && fstat(fd, &after) != 0)
        rc = SL_EINVAL;
    close(fd);
    if (rc == SL_ETOOBIG)
        sl__err("rules.unreadable", "%s:1:1: rules file larger than %u bytes", path,
                SL__RULES_FILE_MAX);
    else if (rc != SL_OK)
        sl__err("rules.unreadable", "%s:1:1: cannot read rules file: %s", path, strerror(errno));
    if (rc != SL_OK)
        return rc;
    version_of(&before, &a);
    version_of(&after, &b);
    *moved = !same_version(&a, &b) || (off_t)*len != a.size;
    if (stat(path, &named) != 0) {
        *moved = true; /* renamed away or deleted meanwhile */
    } else {
        version_of(&named, &c);
        *moved = *moved || !same_version(&a, &c);
    }
    *v = a;
    return SL_OK;
}

/* Has `path` kept version `v`? */
static bool unchanged(const char *path, const struct version *v)
{
    struct stat st;
    struct version now;

    if (stat(path, &st) != 0)
        return false;
    version_of(&st, &now);
    return same_version(v, &now);
}

int sl__rules_read(const char *path, struct sl__rules_read *opt, char **text, size_t *len)
{
    bool waited_absent = false;

    opt->reads = 0;
    for (unsigned tries = 0; tries < SL__RULES_READ_TRIES; tries++) {
        struct version v;
        bool moved = false;
        int rc = read_once(path, text, len, &v, &moved);
        opt->reads++;
        if (rc == SL_ENOENT) {
            if (!opt->absent_may_be_gone) {
                sl__err("rules.unreadable", "%s:1:1: cannot open rules file: %s", path,
                        strerror(ENOENT));
                return SL_EINVAL;
            }
            if (waited_absent)
                return SL__RULES_READ_GONE;
            waited_absent = true; /* replaced by delete and create? look again */
            if (!wait_ms(opt->debounce_ms, opt->stop))
                return SL__RULES_READ_STOPPED;
            continue;
        }
        if (rc != SL_OK)
            return rc;
        int64_t age = age_ms(&v);
        if (!moved && age >= opt->debounce_ms)
            return SL_OK; /* still for longer than the debounce already */
        if (!moved) {
            /* Written moments ago: a slow writer may not be done. What was
             * read stands if the file holds still for the debounce. */
            if (!wait_ms(age < 0 ? opt->debounce_ms : opt->debounce_ms - age, opt->stop)) {
                free(*text);
                *text = NULL;
                return SL__RULES_READ_STOPPED;
            }
            if (unchanged(path, &v))
                return SL_OK;
        }
        free(*text);
        *text = NULL;
        if (moved && !wait_ms(CHANGED_PAUSE_MS, opt->stop))
            return SL__RULES_READ_STOPPED;
        sl__dbg("rules.reread",
                "rules: %s changed while it was read or right after; reading it again", path);
    }
    sl__err("rules.unsettled", "%s:1:1: the rules file kept changing over %u reads; not loaded",
            path, SL__RULES_READ_TRIES);
    return SL_EINVAL;
}
