/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * privilege.c - the admin privilege (privilege.h): the listener rule and a
 * constant-time comparison of the token, and the client certificate names
 * that stand for it (admin.client_cert_names). It does not parse any protocol's
 * credentials (each protocol extracts the secret it was given).
 */
#include <string.h>

#include "config-t.h"
#include "privilege.h"

bool sl__token_equal(const char *token, const char *given, size_t len)
{
    unsigned char diff;
    size_t tlen;

    if (token == NULL)
        return false;
    tlen = strlen(token);
    diff = (unsigned char)(len != tlen);
    for (size_t i = 0; i < tlen; i++) /* reads within both: index clamped to len */
        diff |= (unsigned char)(token[i] ^ (i < len ? given[i] : 0));
    return diff == 0;
}

bool sl__admin_token_equal(const struct sl__config *cfg, const char *given, size_t len)
{
    return sl__token_equal(cfg->admin_token, given, len);
}

bool sl__admin_cert_name_ok(const struct sl__config *cfg, const char *name, size_t len)
{
    if (name == NULL)
        return false;
    for (size_t i = 0; i < cfg->n_admin_cert_names; i++)
        if (strlen(cfg->admin_cert_names[i]) == len &&
            memcmp(cfg->admin_cert_names[i], name, len) == 0)
            return true;
    return false;
}

bool sl__admin_allowed(const struct sl__config *cfg, const struct sl__listener *ls, bool proven)
{
    (void)cfg; /* sluiced always has a token (token.c); none proves nothing */
    return ls->admin_paths && proven;
}
