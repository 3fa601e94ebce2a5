/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_config.c - libFuzzer driver for sluiced's configuration parser
 * (server/core/config.c and every room's section, the key tables): any
 * bytes as a sluice.yaml read from memory. A load succeeds with no error
 * text or fails with one, each line naming the file, within the buffer.
 *
 * It resolves no host names: the proxy's servers are looked up with
 * getaddrinfo, which this driver answers for numeric addresses only, so
 * that a fuzzed name never waits on DNS. It reads no file (rules and
 * token files are only recorded as paths).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

typedef int (*gai_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    static gai_fn real;
    struct addrinfo h = {0};

    if (real == NULL)
        real = (gai_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    if (hints != NULL)
        h = *hints;
    h.ai_flags |= AI_NUMERICHOST;
    return real != NULL ? real(node, service, &h, res) : EAI_FAIL;
}

static char err[SL__CONFIG_ERR_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl__config c;
    int rc;

    sl__config_init(&c);
    rc =
        sl__config_load_buffer(&c, "/fuzz/sluice.yaml", (const char *)data, size, err, sizeof(err));
    CHECK(rc == SL_OK || rc == SL_EINVAL || rc == SL_EPARSE);
    CHECK((rc == SL_OK) == (err[0] == '\0'));
    CHECK(memchr(err, '\0', sizeof(err)) != NULL);
    CHECK(rc == SL_OK || strncmp(err, "/fuzz/sluice.yaml", 17) == 0);
    sl__config_free(&c);
    return 0;
}
