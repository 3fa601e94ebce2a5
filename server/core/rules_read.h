/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_read.h - reading one rules file consistently (internal): never a
 * file caught half-written or changed under the read, and a file that is
 * gone told apart from one being replaced.
 */
#ifndef SL_SERVER_RULES_READ_H
#define SL_SERVER_RULES_READ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Rules files above this size are refused rather than read. */
#define SL__RULES_FILE_MAX (16u << 20)
/* Reads of one file before giving up on it as still changing. */
#define SL__RULES_READ_TRIES 20

/* sl__rules_read()'s results besides SL_OK and the SL_E* codes. */
#define SL__RULES_READ_GONE    1 /* absent, and still absent after the debounce */
#define SL__RULES_READ_STOPPED 2 /* `stop` was set while waiting */

struct sl__rules_read {
    int64_t debounce_ms;     /* a file must have been unchanged this long */
    bool absent_may_be_gone; /* reload: absent past the debounce is GONE, not an error */
    const atomic_bool *stop; /* set when the server stops: waiting ends; may be NULL */
    unsigned reads;          /* out: how many times the file was read */
};

/*
 * Read `path` whole into *text (malloc'd, *len bytes; the caller frees) once
 * it holds still: the file is read again when its size, modification time
 * or inode changed during the read (or the path was renamed over), and,
 * when it was modified less than `debounce_ms` ago, only after it has stayed
 * unchanged for that long (so a writer slower than the debounce is not read
 * half-way). Blocks (sleeps up to the debounce between reads): call it off
 * the event loops. Returns SL_OK; SL_EINVAL (cannot open: logged as
 * "path:1:1: ..."), SL_ETOOBIG, or still changing after SL__RULES_READ_TRIES
 * reads (SL_EINVAL, logged); SL__RULES_READ_GONE; SL__RULES_READ_STOPPED.
 */
int sl__rules_read(const char *path, struct sl__rules_read *opt, char **text, size_t *len);

#endif /* SL_SERVER_RULES_READ_H */
