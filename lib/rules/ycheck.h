/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * ycheck.h - typed reads of YAML nodes for the rules compiler (internal).
 *
 * Each reader either stores the value and returns true, or records one
 * diagnostic at the node's position saying what is wrong and what to write
 * instead, and returns false. None of them allocate except sl__y_str.
 */
#ifndef SL_RULES_YCHECK_H
#define SL_RULES_YCHECK_H

#include "rules/rules_int.h"

struct sl__cctx {
    const char *origin;
    const char *domain;
    struct sl__diags *d;
    enum sl_rules_source src;
};

#define SL__ERR(c, n, ...) sl__diag((c)->d, (c)->origin, (n)->line, (n)->col, __VA_ARGS__)

/* A map's keys against a table of known names: fills vals[i] with the value
 * node of names[i] (or NULL), diagnoses unknown and repeated keys and
 * non-scalar keys. `what` names the map in messages. Returns false when
 * anything was diagnosed. */
bool sl__y_fields(struct sl__cctx *c, const struct sl__ynode *map, const char *what,
                  const char *const *names, size_t n_names, const struct sl__ynode **vals);

bool sl__y_bool(struct sl__cctx *c, const struct sl__ynode *n, const char *what, bool *out);
bool sl__y_uint(struct sl__cctx *c, const struct sl__ynode *n, const char *what, uint64_t max,
                uint64_t *out);
bool sl__y_int(struct sl__cctx *c, const struct sl__ynode *n, const char *what, int64_t *out);
bool sl__y_duration(struct sl__cctx *c, const struct sl__ynode *n, const char *what,
                    int64_t *out_ns);
/* A scalar string, copied (caller frees). */
bool sl__y_str(struct sl__cctx *c, const struct sl__ynode *n, const char *what, char **out);
/* `replaces: [{name: X}, ...]` into an owned array of names. */
bool sl__y_replaces(struct sl__cctx *c, const struct sl__ynode *n, char ***out, size_t *n_out);
/* A metadata map as JSON object text (owned). */
bool sl__y_json(struct sl__cctx *c, const struct sl__ynode *n, char **out);

/* Parse the limits of one descriptor (`rate_limit` and `limits`) into
 * node->limits; sets unlimited/has_policy. */
bool sl__parse_policy(struct sl__cctx *c, const struct sl__ynode *rate_limit,
                      const struct sl__ynode *limits, struct sl__rnode *node);

#endif /* SL_RULES_YCHECK_H */
