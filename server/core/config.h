/*
 * config.h - reading and checking sluiced's YAML configuration (internal).
 * The keys, their defaults and meanings are a table in config.c, printed by
 * `sluiced --help` and documented in docs/configuration.md.
 */
#ifndef SL_SERVER_CONFIG_H
#define SL_SERVER_CONFIG_H

#include <stdio.h>

#include "config-t.h"

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
