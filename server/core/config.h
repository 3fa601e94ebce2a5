/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * config.h - reading and checking sluiced's YAML configuration (internal).
 * The keys, their defaults and meanings are a table in config.c, printed by
 * `sluiced --help` and documented in docs/configuration.md.
 */
#ifndef SL_SERVER_CONFIG_H
#define SL_SERVER_CONFIG_H

#include <stdio.h>

#include <yaml.h>

#include "config-t.h"
#include "keytab.h"

/*
 * A room's own configuration section: a top-level key (e.g. `proxy:`)
 * whose keys the room owns, in a struct of its own. Rooms list theirs in
 * sl__config_sections (the server's registration, server/protocols.c); the
 * core parses the file, keeps each room's struct in c->rooms and never
 * looks inside. Every scalar row of `keys` has its default applied (as the
 * core's own keys) and is printed by --help; what a table cannot hold
 * (lists, mappings of their own) the room parses in load().
 */
struct sl__config_ctx; /* the document being read and where errors go */

struct sl__config_section {
    const char *name; /* the top-level key */
    size_t size;      /* bytes of the room's struct (zeroed, then the defaults) */
    const struct sl__key *keys;
    size_t n_keys;
    void (*init)(void *cfg); /* after the defaults; may be NULL */
    /* Offered every key under the section first (`path` dotted, `v` its
     * value): 0 handled, 1 not handled here (the table or a nested
     * mapping then), -1 after sl__config_fail(). May be NULL. */
    int (*load)(void *cfg, struct sl__config_ctx *x, const char *path, yaml_node_t *v);
    /* The whole file read: check and complete. SL_OK or SL_EINVAL with
     * err. May be NULL. */
    int (*check)(void *cfg, const struct sl__config *c, char *err, size_t errlen);
    void (*destroy)(void *cfg); /* beyond the table's strings; may be NULL */
    void (*help)(FILE *out);    /* lines for what load() parses; may be NULL */
};

/* The registered sections, NULL-terminated (server/protocols.c). */
extern const struct sl__config_section *const sl__config_sections[];

/* The room's struct for `sec` in `c` (NULL if not registered). */
void *sl__config_room(const struct sl__config *c, const struct sl__config_section *sec);

/* For a section's load(): the document, the configuration being read, a
 * node's scalar text (NULL if not a scalar), and an error at the node's
 * file:line:col (returns -1). */
yaml_document_t *sl__config_doc(struct sl__config_ctx *x);
const struct sl__config *sl__config_of(struct sl__config_ctx *x);
const char *sl__config_scalar(const yaml_node_t *n);
int sl__config_fail(struct sl__config_ctx *x, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Defaults: one loopback RESP listener on 6390, memory store, info logs. */
void sl__config_init(struct sl__config *c);
void sl__config_free(struct sl__config *c);

/*
 * Read `path` into `c` (which holds defaults). 0, or SL_EPARSE/SL_EINVAL with
 * one "file:line:col: message" written to `err` (size `errlen`).
 */
int sl__config_load(struct sl__config *c, const char *path, char *err, size_t errlen);

/* Fill what the file left out (the default listener) and copy the server
 * limits into each listener. sl__config_load() calls it. */
void sl__config_finish(struct sl__config *c);

/* Parse a rate-limit header family name ("ietf", "x-ratelimit",
 * "retry-after", "all", "none") into its bit(s) (enum sl__hdr_family);
 * SL_EINVAL for anything else. */
int sl__hdr_family_parse(const char *name, size_t len, unsigned *out);

/* Print every configuration key with its default and meaning. */
void sl__config_help(FILE *f);

#endif /* SL_SERVER_CONFIG_H */
