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
    /* The whole file read: check and complete. SL_OK, or SL_EINVAL after
     * reporting every problem with sl__config_fail_key(). May be NULL. */
    int (*check)(void *cfg, const struct sl__config *c, struct sl__config_ctx *x);
    void (*destroy)(void *cfg); /* beyond the table's strings; may be NULL */
    void (*help)(FILE *out);    /* lines for what load() parses; may be NULL */
};

/* The registered sections, NULL-terminated (server/protocols.c). */
extern const struct sl__config_section *const sl__config_sections[];

/* The room's struct for `sec` in `c` (NULL if not registered). */
void *sl__config_room(const struct sl__config *c, const struct sl__config_section *sec);

/* For a section's load(): the document, the configuration being read, a
 * node's scalar text (NULL if not a scalar), and an error at the node's
 * file:line:col. An error is recorded, not fatal: the reader goes on to
 * the next key or item so that one run reports every error of the file;
 * returns SL_EINVAL for the caller to pass up. */
yaml_document_t *sl__config_doc(struct sl__config_ctx *x);
const struct sl__config *sl__config_of(struct sl__config_ctx *x);
const char *sl__config_scalar(const yaml_node_t *n);
int sl__config_fail(struct sl__config_ctx *x, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* For a section's check(): an error at a place it kept (line and column,
 * from 1) of something it read. */
int sl__config_fail_at(struct sl__config_ctx *x, size_t line, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* For a section's check(), once the file is read: an error at the place the
 * value of `path` (dotted, e.g. "grpc.max_message_bytes") was written, or
 * of the nearest enclosing key that was ("grpc"), or file:1:1. */
int sl__config_fail_key(struct sl__config_ctx *x, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Errors past this many are counted, not printed. */
#define SL__CONFIG_MAX_ERRORS 20
/* A buffer that holds that many errors of a usual length. */
#define SL__CONFIG_ERR_MAX 8192

/* Defaults: one loopback RESP listener on 6390, memory store, info logs. */
void sl__config_init(struct sl__config *c);
void sl__config_free(struct sl__config *c);

/*
 * Read `path` into `c` (which holds defaults). 0, or SL_EPARSE/SL_EINVAL with
 * every error of the file written to `err` (size `errlen`, e.g.
 * SL__CONFIG_ERR_MAX), one "file:line:col: message" per line ('\n'
 * between lines, none at the end): the first SL__CONFIG_MAX_ERRORS, then
 * a line saying how many more there were. A YAML syntax error stops the
 * reading: it is the only one. Reads files, creates none.
 */
int sl__config_load(struct sl__config *c, const char *path, char *err, size_t errlen);
/* The same for a file already in memory, data[0..len) (borrowed), read as
 * if it were at `path` (which names it in errors and anchors its relative
 * paths). Reads no file. */
int sl__config_load_buffer(struct sl__config *c, const char *path, const char *data, size_t len,
                           char *err, size_t errlen);

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
