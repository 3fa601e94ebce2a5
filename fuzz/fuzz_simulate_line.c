/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_simulate_line.c - libFuzzer driver for the input lines of
 * `sluice simulate`: any bytes as a JSON line and as an nginx combined log
 * line; what parses must respect the library's caps and point inside the
 * input. It does not run the limiter.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sim_line.h"

#define CHECK(c) ((c) ? (void)0 : abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sl__sim_line s;
    const char *text = (const char *)data;
    struct sl__clf c;
    char err[256];

    if (sl__sim_line_parse(&s, text, size, err, sizeof(err)) == SL_OK) {
        CHECK(s.req.n_descriptors >= 1 && s.req.n_descriptors <= SL_MAX_DESCRIPTORS);
        for (size_t i = 0; i < s.req.n_descriptors; i++)
            CHECK(s.descs[i].n_entries >= 1 && s.descs[i].n_entries <= SL_MAX_ENTRIES);
        CHECK(s.t_ms >= 0 && s.req.now_ns == s.t_ms * SL_NS_PER_MS);
    }
    sl__sim_line_free(&s);
    if (sl__clf_parse(text, size, &c) >= 0) {
        CHECK(c.remote_address.p >= text &&
              c.remote_address.p + c.remote_address.len <= text + size);
        CHECK(c.path.p >= text && c.path.p + c.path.len <= text + size && c.path.len > 0);
        CHECK(c.t_ms >= 0);
    }
    return 0;
}
