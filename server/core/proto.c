/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proto.c - the sniffing of a connection's first bytes (as memcached's
 * try_read_command_negotiate does) over the registered protocols, and the
 * listener masks. It does not parse any protocol: each protocol's sniff()
 * judges its own bytes.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

const struct sl__proto *sl__proto_find(const char *name, size_t len)
{
    for (size_t i = 0; sl__protos[i] != NULL; i++) {
        const char *n = sl__protos[i]->name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return sl__protos[i];
    }
    return NULL;
}

unsigned sl__proto_bit(const struct sl__proto *p)
{
    for (unsigned i = 0; sl__protos[i] != NULL; i++)
        if (sl__protos[i] == p)
            return 1u << i;
    return 0;
}

unsigned sl__proto_all(void)
{
    unsigned b = 0;

    for (unsigned i = 0; sl__protos[i] != NULL; i++)
        b |= 1u << i;
    return b;
}

unsigned sl__proto_default(void)
{
    unsigned b = 0;

    for (unsigned i = 0; sl__protos[i] != NULL; i++)
        if (!sl__protos[i]->opt_in)
            b |= 1u << i;
    return b;
}

void sl__proto_names(unsigned mask, char *buf, size_t cap)
{
    size_t used = 0;

    if (cap == 0)
        return;
    buf[0] = '\0';
    for (unsigned i = 0; sl__protos[i] != NULL && used < cap; i++) {
        if (mask & (1u << i)) {
            int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", sl__protos[i]->name);
            used += n > 0 ? (size_t)n : 0;
        }
    }
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
