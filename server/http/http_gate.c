/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_gate.c - the admin endpoints' gate: listener check and bearer token
 * (http_gate.h). The token compare takes the same time whatever the first
 * differing byte is, so timing does not reveal a prefix of the token.
 *
 * It does not route (http_api.c) and does not rate-limit failed attempts.
 */
#include <string.h>
#include <strings.h>

#include "conn.h"
#include "http_gate.h"
#include "server-t.h"
#include "worker-t.h"

bool sl__gate_listener(const struct sl__conn *c)
{
    return c->ls->admin_paths;
}

bool sl__gate_token_ok(const char *token, const char *authorization, size_t len)
{
    size_t tlen, i;
    unsigned char diff = 0;

    if (token == NULL)
        return true;
    if (len < 7 || strncasecmp(authorization, "Bearer ", 7) != 0)
        return false;
    authorization += 7;
    len -= 7;
    while (len > 0 && authorization[0] == ' ') {
        authorization++;
        len--;
    }
    tlen = strlen(token);
    diff = (unsigned char)(len != tlen);
    for (i = 0; i < tlen; i++) /* reads within both: index clamped to len */
        diff |= (unsigned char)(token[i] ^ (i < len ? authorization[i] : 0));
    return diff == 0;
}

bool sl__gate_admin(struct sl__conn *c, const struct sl__h1_req *r)
{
    static const char unauthorized[] = "{\"error\":\"this endpoint needs Authorization: Bearer "
                                       "TOKEN (admin.token)\"}";
    static const char www[] = "WWW-Authenticate: Bearer realm=\"sluiced\"\r\n";
    static const char nothere[] = "{\"error\":\"no such endpoint\"}";

    if (!sl__gate_listener(c)) {
        sl__h1_respond(c, -1, r->keep_alive, 404, NULL, 0, nothere, sizeof(nothere) - 1);
        return false;
    }
    if (!sl__gate_token_ok(c->w->srv->cfg.admin_token, r->authorization.p, r->authorization.len)) {
        sl__h1_respond(c, -1, r->keep_alive, 401, www, sizeof(www) - 1, unauthorized,
                       sizeof(unauthorized) - 1);
        return false;
    }
    return true;
}
