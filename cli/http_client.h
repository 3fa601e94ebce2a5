/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_client.h - the `sluice` commands' client of a running sluiced's
 * admin API (internal to cli/): one request to --server URL with the admin
 * token of --token-file as Authorization: Bearer, the answer read whole.
 * Built on Debian's libcurl (docs/operations.md says why).
 *
 * It knows no endpoint: callers give a path and read the body.
 * Ownership: an answer's body is malloc'd, freed by sl__cli_http_free().
 */
#ifndef SL_CLI_HTTP_CLIENT_H
#define SL_CLI_HTTP_CLIENT_H

#include <stddef.h>

struct sl__cli_http {
    const char *server; /* "http://127.0.0.1:6391", no trailing path */
    char *token;        /* from the token file (first line), NULL: none; owned */
    long timeout_ms;    /* the whole request */
};

struct sl__cli_answer {
    long status; /* HTTP status; 0 when no answer came */
    char *body;  /* NUL-terminated */
    size_t len;
};

/* Read the token from `path` (first line, trimmed) into h->token. 0, or
 * -1 with a message on stderr. */
int sl__cli_http_token_file(struct sl__cli_http *h, const char *path);

/* `method` `path` (with its query) on h->server, `body` (may be NULL)
 * sent as application/json. 0 with *a filled (any status), or -1 with a
 * message on stderr when no answer came. */
int sl__cli_http(const struct sl__cli_http *h, const char *method, const char *path,
                 const char *body, struct sl__cli_answer *a);

void sl__cli_http_free(struct sl__cli_answer *a);
void sl__cli_http_done(struct sl__cli_http *h);

#endif /* SL_CLI_HTTP_CLIENT_H */
