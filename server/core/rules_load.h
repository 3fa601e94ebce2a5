/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_load.h - building a rules snapshot from the configured rules files
 * (and database), and publishing it on reload (internal).
 */
#ifndef SL_SERVER_RULES_LOAD_H
#define SL_SERVER_RULES_LOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config-t.h"
#include "rules_dir.h"
#include "sluice.h"

/* sl__rules_load()'s result when `stop` ended it (nothing built). */
#define SL__RULES_STOPPED 1

/* How a load goes: at start (every listed file and directory must be
 * there) or on a reload (a listed file or directory deleted, and still
 * absent after rules.debounce, no longer contributes: its domains go). `stop`, when set, ends any
 * wait for a file to hold still (the server is stopping); may be NULL. `out`, when set, makes it a
 * check (sluiced -t, sluice check -c): each problem a plain line on `out` instead of a logged
 * event, and nothing created (a rules database that does not exist yet is taken as empty). */
struct sl__rules_load {
    bool reload;
    const atomic_bool *stop;
    FILE *out;
    /* when set: an array of cfg->n_rules_dirs that a load which succeeds
     * fills with the listing of each rules directory as it was read (the
     * caller frees each with sl__rules_dir_free); untouched otherwise */
    struct sl__rules_dir *dirs;
};

/*
 * Build a snapshot from every rules file of `cfg`, every rules file of its
 * rules directories (each directory's files read as one generation: listed
 * before and after they are read, and read again while the listings
 * differ) and its database. 0 with
 * *out set (a new reference); or SL_EPARSE/SL_EINVAL with every problem
 * logged as "file:line:col: message" and nothing built - also when a file
 * that exists holds no rules (empty or truncated) or a domain would have no
 * descriptor, unless rules.allow_empty; or SL__RULES_STOPPED. Off the event
 * loops: reads files, may wait up to the debounce for one to hold still.
 */
int sl__rules_load(const struct sl__config *cfg, const struct sl__rules_load *how, sl_rules **out);

/*
 * Check what sl__rules_load() would build, as `sluiced -t` does: every
 * problem printed on `out`, one line each ("file:line:col: message"),
 * nothing built and nothing written. 0 when the rules would load; then,
 * when `list` is set, the rules' sources on it: one line per rules file
 * ("rules file PATH") and per directory ("rules directory PATH: N files:
 * NAME, NAME").
 */
int sl__rules_check(const struct sl__config *cfg, FILE *out, FILE *list);

/*
 * Reload into `slot`: on success the new snapshot is published and serves
 * the next request; on failure the old one keeps serving. `why` names the
 * trigger for the log ("SIGHUP", "file change"). `dirs`, when set, as in
 * struct sl__rules_load. Returns what sl__rules_load() returned.
 */
int sl__rules_reload(const struct sl__config *cfg, sl_rules_slot *slot, const char *why,
                     const atomic_bool *stop, struct sl__rules_dir *dirs);

/* A source of rules besides the files and the database (the xDS client,
 * server/grpc/xds.c): on every load, after the files and before the
 * database, `add` puts its rules into the builder as a file's (so a domain
 * it defines that a file defines too is refused, and the database wins
 * over it). SL_OK, or an error (its problems in the builder's
 * diagnostics). Set once, before any reload can run; NULL: none. */
typedef int (*sl__rules_extra_fn)(void *arg, sl_rules_builder *b);
void sl__rules_set_extra(sl__rules_extra_fn add, void *arg);

/* How many descriptor rules, at every level, one rules text holds (what
 * the admin API caps per rule) into *n, and into *empty the first domain
 * that, served from this text alone, would have no descriptors (as the
 * reloads' check sees it; "" for none): SL_OK, or the text's error when it
 * does not parse or compile (storing it says why). Off the event loops:
 * parses YAML. */
int sl__rules_text_descriptors(const char *yaml, size_t len, size_t *n, char *empty,
                               size_t empty_len);

#endif /* SL_SERVER_RULES_LOAD_H */
