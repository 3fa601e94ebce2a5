/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_http_json.c - libFuzzer driver for the JSON check bodies: every input
 * goes through the Envoy and the native parser (with a small arena so both
 * the arena and the malloc spill paths run), and a parsed request must keep
 * the library's caps. It does not check decisions.
 */
#include <stdint.h>
#include <stdlib.h>

#include "http_json.h"

static _Alignas(16) char mem[4096];

/* CHECK() vanishes under NDEBUG (release builds); this does not. */
#define CHECK(c) ((c) ? (void)0 : abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sl__json_req r;
    struct sl__json_arena a;

    for (int native = 0; native < 2; native++) {
        sl__json_arena_init(&a, mem, sizeof(mem));
        int rc = native ? sl__json_parse_check(&r, &a, (const char *)data, size)
                        : sl__json_parse_envoy(&r, &a, (const char *)data, size);
        if (rc == SL_OK) {
            CHECK(r.req.n_descriptors >= 1 && r.req.n_descriptors <= SL_MAX_DESCRIPTORS);
            for (size_t i = 0; i < r.req.n_descriptors; i++) /* Envoy's may have none */
                CHECK(r.descs[i].n_entries >= (size_t)native &&
                      r.descs[i].n_entries <= SL_MAX_ENTRIES);
        } else {
            CHECK(r.error[0] != '\0');
        }
        sl__json_req_release(&r);
    }
    return 0;
}
