/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proto_name.c - the listeners' protocol masks over the protocols' names
 * (proto_name.h): what the configuration reads and prints of a listener's
 * `protocols:`. It knows no protocol's code; proto.c sniffs.
 */
#include <stdio.h>
#include <string.h>

#include "proto_name.h"

unsigned sl__proto_bit_named(const char *name, size_t len)
{
    for (unsigned i = 0; sl__proto_names_reg[i].name != NULL; i++) {
        const char *n = sl__proto_names_reg[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return 1u << i;
    }
    return 0;
}

unsigned sl__proto_all(void)
{
    unsigned b = 0;

    for (unsigned i = 0; sl__proto_names_reg[i].name != NULL; i++)
        b |= 1u << i;
    return b;
}

unsigned sl__proto_default(void)
{
    unsigned b = 0;

    for (unsigned i = 0; sl__proto_names_reg[i].name != NULL; i++)
        if (!sl__proto_names_reg[i].opt_in)
            b |= 1u << i;
    return b;
}

void sl__proto_names(unsigned mask, char *buf, size_t cap)
{
    size_t used = 0;

    if (cap == 0)
        return;
    buf[0] = '\0';
    for (unsigned i = 0; sl__proto_names_reg[i].name != NULL && used < cap; i++) {
        if (mask & (1u << i)) {
            int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "",
                             sl__proto_names_reg[i].name);
            used += n > 0 ? (size_t)n : 0;
        }
    }
}
