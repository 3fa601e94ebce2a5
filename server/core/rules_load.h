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

#include "config-t.h"
#include "sluice.h"

/* sl__rules_load()'s result when `stop` ended it (nothing built). */
#define SL__RULES_STOPPED 1

/* How a load goes: at start (every listed file must be there) or on a
 * reload (a listed file deleted, and still absent after rules.debounce,
 * no longer contributes: its domains go). `stop`, when set, ends any wait
 * for a file to hold still (the server is stopping); may be NULL. */
struct sl__rules_load {
    bool reload;
    const atomic_bool *stop;
};

/*
 * Build a snapshot from every rules file of `cfg` and its database. 0 with
 * *out set (a new reference); or SL_EPARSE/SL_EINVAL with every problem
 * logged as "file:line:col: message" and nothing built - also when a file
 * that exists holds no rules (empty or truncated) or a domain would have no
 * descriptor, unless rules.allow_empty; or SL__RULES_STOPPED. Off the event
 * loops: reads files, may wait up to the debounce for one to hold still.
 */
int sl__rules_load(const struct sl__config *cfg, const struct sl__rules_load *how, sl_rules **out);

/*
 * Reload into `slot`: on success the new snapshot is published and serves
 * the next request; on failure the old one keeps serving. `why` names the
 * trigger for the log ("SIGHUP", "file change"). Returns what
 * sl__rules_load() returned.
 */
int sl__rules_reload(const struct sl__config *cfg, sl_rules_slot *slot, const char *why,
                     const atomic_bool *stop);

/* How many descriptor rules, at every level, one rules text holds (what
 * the admin API caps per rule) into *n, and into *empty the first domain
 * that, served from this text alone, would have no descriptors (as the
 * reloads' check sees it; "" for none): SL_OK, or the text's error when it
 * does not parse or compile (storing it says why). Off the event loops:
 * parses YAML. */
int sl__rules_text_descriptors(const char *yaml, size_t len, size_t *n, char *empty,
                               size_t empty_len);

#endif /* SL_SERVER_RULES_LOAD_H */
