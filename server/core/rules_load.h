/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_load.h - building a rules snapshot from the configured rules files
 * (and database), and publishing it on reload (internal).
 */
#ifndef SL_SERVER_RULES_LOAD_H
#define SL_SERVER_RULES_LOAD_H

#include "config-t.h"
#include "sluice.h"

/*
 * Build a snapshot from every rules file of `cfg`. 0 with *out set (a new
 * reference), or SL_EPARSE/SL_EINVAL with every problem logged as
 * "file:line:col: message" and nothing built. Off the hot path: reads files.
 */
int sl__rules_load(const struct sl__config *cfg, sl_rules **out);

/*
 * Reload into `slot`: on success the new snapshot is published and serves
 * the next request; on failure the old one keeps serving. `why` names the
 * trigger for the log ("SIGHUP", "file change").
 */
int sl__rules_reload(const struct sl__config *cfg, sl_rules_slot *slot, const char *why);

#endif /* SL_SERVER_RULES_LOAD_H */
