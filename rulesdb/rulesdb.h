/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rulesdb.h - the rules database: rules that change at run time (per
 * customer, per plan, per API key) stored in a SQLite file, one row per
 * rule: an id, its domain, and a YAML text in the rules-file format
 * restricted to one domain, validated with the rules parser before it is
 * stored. Used by the daemon (admin API) and the `sluice rules` commands.
 *
 * Precedence when loaded: rows are added to a builder as SL_SRC_DB in id
 * order (byte order), after the files; a database descriptor at the same
 * (domain, descriptor path) as a file's replaces that descriptor's limits
 * (see docs/rules.md). The library never links SQLite; this module does.
 *
 * Ownership: handles from sl_rulesdb_open() are freed with
 * sl_rulesdb_close(); strings passed in are borrowed. Threads: one handle
 * per thread (SQLite's own locking protects the file across processes; a
 * busy timeout of SL_RULESDB_BUSY_MS applies).
 *
 * Errors: 0, an SL_E* code, or one of SL_RULESDB_E* below; every failure
 * also leaves a sentence in sl_rulesdb_errmsg() (or in `err` for open).
 */
#ifndef SL_RULESDB_H
#define SL_RULESDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

#define SL_RULESDB_SCHEMA  1
#define SL_RULESDB_BUSY_MS 2000
#define SL_RULESDB_ID_MAX  128

enum {
    SL_RULESDB_EBUSY = -20,    /* locked by another writer past the busy timeout */
    SL_RULESDB_ECORRUPT = -21, /* not a Sluice rules database, corrupt, or a newer schema */
    SL_RULESDB_EIO = -22,      /* could not open, read or write the file */
    SL_RULESDB_EEXIST = -23,   /* an add without replace found the id taken */
};

typedef struct sl_rulesdb sl_rulesdb;

/* Open `path`; with `create`, a missing file is created with the schema.
 * On failure *out is NULL and `err` says why. */
int sl_rulesdb_open(const char *path, bool create, sl_rulesdb **out, char *err, size_t err_len);
void sl_rulesdb_close(sl_rulesdb *db);
const char *sl_rulesdb_errmsg(const sl_rulesdb *db);

/* Validate `yaml` as the rules of exactly one domain. SL_OK with *domain
 * (malloc'd, caller frees); SL_EPARSE with the diagnostics in `diags` (a
 * fresh builder the caller owns; may be NULL), each "origin:line:col: msg". */
int sl_rulesdb_validate(const char *yaml, size_t len, const char *origin, sl_rules_builder *diags,
                        char **domain);

/* Store rule `id` (1..SL_RULESDB_ID_MAX bytes of [A-Za-z0-9._:-]).
 * Without `replace`, an existing id is SL_RULESDB_EEXIST. Validation
 * failures are SL_EPARSE with diagnostics in `diags` (may be NULL). */
int sl_rulesdb_put(sl_rulesdb *db, const char *id, const char *yaml, size_t len, bool replace,
                   sl_rules_builder *diags);
/* Delete rule `id`; SL_ENOENT if there is none. */
int sl_rulesdb_delete(sl_rulesdb *db, const char *id);

struct sl_rulesdb_row {
    const char *id;
    const char *domain;
    const char *yaml;
    int64_t updated_ms; /* Unix ms of the last put */
};
/* Call `fn` for every row in id order; a non-zero return stops the walk
 * and is returned. */
int sl_rulesdb_list(sl_rulesdb *db, int (*fn)(void *arg, const struct sl_rulesdb_row *row),
                    void *arg);

/* Add every row to `b` (SL_SRC_DB, origin "db:ID"). All rows are read
 * before any is added, so a read error adds nothing: the caller keeps the
 * snapshot in force. Returns SL_OK, a database error, or SL_EPARSE when a
 * stored row no longer validates (diagnostics in `b`). */
int sl_rulesdb_load(sl_rulesdb *db, sl_rules_builder *b);

#endif /* SL_RULESDB_H */
