/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_client.h - one HTTP request of the `sluice` command line to a
 * running sluiced's admin API, through libcurl (Debian's libcurl4): JSON
 * in, JSON out, a bearer token, bounded times. The answer's body is
 * malloc'd and the caller's to free.
 *
 * It does not retry, follow redirects or keep connections between calls.
 */
#ifndef SL_CLI_HTTP_CLIENT_H
#define SL_CLI_HTTP_CLIENT_H

#include <stddef.h>

struct sl__http_answer {
    long status; /* the HTTP status */
    char *body;  /* NUL-terminated; malloc'd */
    size_t len;
};

/*
 * `method` `url` with `json` as the body (NULL: none; sent as
 * Content-Type: application/json) and, when `token` is not NULL,
 * Authorization: Bearer TOKEN. 0 with *out filled (any status), or -1 with
 * err saying why no answer came (cannot connect, timed out, bad URL).
 */
int sl__http_call(const char *method, const char *url, const char *token, const char *json,
                  struct sl__http_answer *out, char *err, size_t errlen);

#endif /* SL_CLI_HTTP_CLIENT_H */
