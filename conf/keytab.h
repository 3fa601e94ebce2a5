/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * keytab.h - configuration key tables: each configuration key of sluiced
 * written once, with its type, the field it sets, its default and its
 * meaning, so that the defaults, the parser and the --help text (and the
 * documentation checked against it) come from one row and cannot drift.
 *
 * A layer that owns configuration keys (the server core, each store, each
 * protocol room) describes them in a `const struct sl__key[]` over its own
 * struct; sl__keytab_defaults() applies every row's default through the
 * same parser a configuration file goes through.
 *
 * It does not read files or YAML (the server walks the document and hands
 * scalars here) and knows nothing of what the keys mean.
 *
 * Ownership: K_STR and K_PATH fields are malloc'd strings owned by the
 * struct and freed by sl__keytab_free(); everything else is inline.
 */
#ifndef SL_CONF_KEYTAB_H
#define SL_CONF_KEYTAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum sl__ktype {
    SL__K_UINT,    /* unsigned/int field (size 4) or uint64_t (size 8), in [min, max] */
    SL__K_SIZE,    /* size_t, bytes: 65536, 64KiB, 1MiB, 1GiB */
    SL__K_DUR_MS,  /* int64_t, milliseconds, from a duration with its unit (rounded up) */
    SL__K_BOOL,    /* bool: true | false */
    SL__K_STR,     /* char *, owned */
    SL__K_PATH,    /* char *, owned, resolved against the configuration's directory */
    SL__K_BUF,     /* char[size], inline, NUL-terminated */
    SL__K_PATHBUF, /* char[size], inline, resolved against the configuration's directory */
    SL__K_CHOICE,  /* an enum (size 1 or 4): the index of the value in `choices` */
    SL__K_CUSTOM,  /* parse() does it all */
};

struct sl__key {
    const char *path; /* dotted: "server.read_timeout" */
    enum sl__ktype type;
    size_t off, size; /* the field in the table's struct */
    const char *def;  /* the default as a configuration file would write it; NULL: none */
    const char *help; /* one line */
    /* What --help shows as the default when def is NULL because the default
     * is worked out at start (the help line says how); NULL: "(none)". */
    const char *shown;
    /* K_UINT: accepted range (max 0 means no bound but the field's);
     * K_CHOICE: NULL-terminated names; K_CUSTOM: the parser, which sets the
     * field from text or returns -1 with *why a sentence saying what to fix. */
    uint64_t min, max;
    const char *const *choices;
    int (*parse)(const char *text, void *field, const char **why);
};

/* The field (offset, size) of `type`'s member, for a row. */
#define SL__KF(type, member) .off = offsetof(type, member), .size = sizeof(((type *)0)->member)

/* The row for `path`, or NULL. */
const struct sl__key *sl__keytab_find(const struct sl__key *keys, size_t n, const char *path);

/*
 * Set k's field in `base` from `text`. `dir` is the directory relative
 * paths are resolved against (NULL: taken as they are). Returns 0, or -1
 * with a message (starting with the key's path) in err[0..errlen).
 */
int sl__keytab_set(const struct sl__key *k, void *base, const char *text, const char *dir,
                   char *err, size_t errlen);

/* Apply every row's default to `base` (whose fields are zero). Returns 0,
 * or -1 when a default does not parse (a bug in the table: tests run it). */
int sl__keytab_defaults(const struct sl__key *keys, size_t n, void *base);

/* Free the owned strings of `base`'s K_STR and K_PATH fields. */
void sl__keytab_free(const struct sl__key *keys, size_t n, void *base);

/* One line per key: "  PATH  DEFAULT  HELP", the format of sluiced --help
 * (docs/configuration.md is checked against it). */
void sl__keytab_help(const struct sl__key *keys, size_t n, FILE *out);
/* The same line for a key that is not in a table (lists, patterns). */
void sl__keytab_help_line(FILE *out, const char *path, const char *def, const char *help);

/* Parsers a K_CUSTOM row or another layer may reuse. 0 or -1. */
int sl__keytab_parse_u64(const char *s, uint64_t max, uint64_t *out);
int sl__keytab_parse_size(const char *s, size_t *out);

#endif /* SL_CONF_KEYTAB_H */
