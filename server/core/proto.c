/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proto.c - the sniffing of a connection's first bytes (as memcached's
 * try_read_command_negotiate does) over the registered protocols, and the
 * protocols' bits (the masks by name are proto_name.c's), and the rooms'
 * own lines of /metrics and members of /v1/stats gathered for the HTTP
 * and admin rooms, which name no other room. It does not parse any
 * protocol: each protocol's sniff() judges its own bytes.
 */
#include <stdbool.h>
#include <string.h>

#include "conn.h"
#include "proto.h"

unsigned sl__proto_bit(const struct sl__proto *p)
{
    for (unsigned i = 0; sl__protos[i] != NULL; i++)
        if (sl__protos[i] == p)
            return 1u << i;
    return 0;
}

bool sl__proto_registered(void)
{
    size_t i = 0;

    for (; sl__protos[i] != NULL; i++) {
        const struct sl__proto_name *n = &sl__proto_names_reg[i];
        const char *alpn = sl__protos[i]->alpn;
        if (n->name == NULL || strcmp(n->name, sl__protos[i]->name) != 0 ||
            n->opt_in != sl__protos[i]->opt_in || (n->alpn == NULL) != (alpn == NULL) ||
            (alpn != NULL && strcmp(n->alpn, alpn) != 0))
            return false;
    }
    return sl__proto_names_reg[i].name == NULL;
}

int sl__proto_sniff(unsigned enabled, const char *buf, size_t len, const struct sl__proto **out)
{
    bool undecided = false;

    for (unsigned i = 0; sl__protos[i] != NULL; i++) {
        const struct sl__proto *p = sl__protos[i];
        if (!(enabled & (1u << i)))
            continue;
        int r = p->sniff(buf, len);
        if (r == 1 && !undecided) {
            *out = p;
            return 1;
        }
        if (r == -2)
            undecided = true; /* a more specific protocol may still claim it */
    }
    return undecided ? -2 : -1;
}

void sl__protos_render_metrics(const struct sl__server *srv, struct sl__buf *out)
{
    for (unsigned i = 0; sl__protos[i] != NULL; i++)
        if (sl__protos[i]->render_metrics != NULL)
            sl__protos[i]->render_metrics(srv, out);
}

void sl__protos_render_stats(const struct sl__server *srv, struct sl__buf *out)
{
    for (unsigned i = 0; sl__protos[i] != NULL; i++) {
        size_t before = out->len;
        if (sl__protos[i]->render_stats == NULL)
            continue;
        sl__buf_append(out, ",", 1);
        sl__protos[i]->render_stats(srv, out);
        if (out->len == before + 1)
            out->len = before; /* nothing to say */
    }
}

int sl__protos_main_start(struct sl__server *srv)
{
    for (unsigned i = 0; sl__protos[i] != NULL; i++)
        if (sl__protos[i]->main_start != NULL && sl__protos[i]->main_start(srv) != 0)
            return -1;
    return 0;
}

void sl__protos_main_stop(struct sl__server *srv)
{
    for (unsigned i = 0; sl__protos[i] != NULL; i++)
        if (sl__protos[i]->main_stop != NULL)
            sl__protos[i]->main_stop(srv);
}
