/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_remote.h - `sluice rules add|ls|rm --server URL`: the rules
 * database of a running sluiced, through its admin API (POST /v1/rules,
 * PUT and DELETE /v1/rules/{id}, GET /v1/rules; docs/http.md), so that the
 * daemon validates, stores, applies and (with rules sync) publishes the
 * change to its fleet at once. What each prints and exits matches the
 * commands on a database file (cmd_rules.c).
 *
 * It does not validate a rule itself (cmd_rules.c does that first, with
 * the file's positions) or read the database file.
 */
#ifndef SL_CLI_RULES_REMOTE_H
#define SL_CLI_RULES_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

/* A running sluiced: the admin listener's base URL and the bearer token
 * (NULL: none). Borrowed. */
struct sl__remote {
    const char *url;
    const char *token;
};

/* Read the token from the first line of `path` into token[0..cap). 0, or
 * -1 with a message on stderr. */
int sl__remote_token(const char *path, char *token, size_t cap);

/* Store rule `id` (yaml[0..], NUL-terminated, of `domain`): POST, or PUT
 * with `replace`. Each returns the command's exit status (0, or 1 with
 * stderr saying why). */
int sl__remote_add(const struct sl__remote *r, const char *id, const char *domain, const char *yaml,
                   bool replace);
int sl__remote_ls(const struct sl__remote *r, bool full);
int sl__remote_rm(const struct sl__remote *r, const char *id);

#endif /* SL_CLI_RULES_REMOTE_H */
