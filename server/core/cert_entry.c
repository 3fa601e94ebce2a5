/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cert_entry.c - the server-supplied `client_cert_name` descriptor entry
 * (cert_entry.h says the contract). The name comes from the connection
 * (conn_tls.c); this file only edits the decoded request.
 */
#include <string.h>

#include "cert_entry.h"
#include "conn.h"

static bool is_cert_key(struct sl_str k)
{
    return k.len == sizeof(SL__CERT_ENTRY_KEY) - 1 &&
           memcmp(k.p, SL__CERT_ENTRY_KEY, sizeof(SL__CERT_ENTRY_KEY) - 1) == 0;
}

void sl__cert_entries(const struct sl__conn *c, struct sl_request *req)
{
    size_t len = 0;
    const char *name = NULL;
    bool looked = false;

    for (size_t d = 0; d < req->n_descriptors; d++) {
        /* The decoder's own arrays: written through the request's view. */
        struct sl_descriptor *desc = (struct sl_descriptor *)&req->descriptors[d];
        struct sl_entry *e = (struct sl_entry *)desc->entries;
        size_t kept = 0;
        for (size_t i = 0; i < desc->n_entries; i++) {
            if (is_cert_key(e[i].key)) {
                if (!looked) {
                    name = sl__conn_peer_cert_name(c, &len);
                    looked = true;
                }
                if (name == NULL)
                    continue; /* no verified certificate: the entry goes */
                e[i].value = (struct sl_str){name, len};
            }
            e[kept++] = e[i];
        }
        desc->n_entries = kept;
    }
}
