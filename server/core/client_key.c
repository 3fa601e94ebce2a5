/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * client_key.c - an address's client key (client_key.h): IPv4 as is,
 * IPv6 masked to its prefix. It keeps no table (conn.c and guard.c do).
 */
#include <netinet/in.h>
#include <string.h>

#include "client_key.h"

static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

size_t sl__client_key(const struct sockaddr *sa, unsigned v6_prefix_bits, unsigned char out[16])
{
    const unsigned char *a;
    unsigned bits = v6_prefix_bits >= 1 && v6_prefix_bits <= 128 ? v6_prefix_bits : 128;

    if (sa->sa_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family != AF_INET6)
        return 0;
    a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
    if (memcmp(a, v4_mapped, sizeof(v4_mapped)) == 0) {
        memcpy(out, a + 12, 4);
        return 4;
    }
    memcpy(out, a, 16);
    for (unsigned i = bits / 8; i < 16; i++)
        out[i] = i == bits / 8 ? (unsigned char)(out[i] & (0xff00u >> (bits % 8))) : 0;
    return 16;
}
