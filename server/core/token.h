/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * token.h - the admin token (internal): every admin request needs it, so a
 * server never runs without one. It is admin.token when configured, else
 * the first line of a file (admin.token_file, or a default place), which
 * the first start creates with a random token.
 */
#ifndef SL_SERVER_TOKEN_H
#define SL_SERVER_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include "config-t.h"

/* Bytes of randomness in a created token (printed as twice as many hex
 * digits): 256 bits, beyond guessing at any request rate. */
#define SL__TOKEN_BYTES 32

/*
 * The file of the admin token: admin.token_file when set, else
 * "admin.token" beside rules.database, else beside the configuration file,
 * else in the working directory. Written to out[0..cap), NUL-terminated;
 * SL_ETOOBIG when it does not fit.
 */
int sl__token_path(const struct sl__config *c, char *out, size_t cap);

/*
 * Give c->admin_token its value: admin.token as configured, else the first
 * line of the token file; when that file does not exist and `create` is
 * true, a new token (SL__TOKEN_BYTES from getrandom, in hex) is written
 * there first: mode 0600, created under a temporary name and linked into
 * place, so that no reader sees it half-written and an existing file (one
 * another sluiced created meanwhile) is never replaced but read. With
 * `create` false (sluiced -t) nothing is written. Logs the file's path,
 * never the token. SL_OK, or SL_EINVAL with a sentence saying what to fix
 * in err[0..errlen).
 */
int sl__token_load(struct sl__config *c, bool create, char *err, size_t errlen);

#endif /* SL_SERVER_TOKEN_H */
