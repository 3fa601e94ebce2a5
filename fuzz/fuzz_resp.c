/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_resp.c - libFuzzer driver for the RESP request parser: any bytes,
 * parsed command after command as a connection would, under a small cap so
 * the cap paths are reached. Checks that every result is in range and every
 * argument lies inside the input, and that feeding each command in pieces
 * through the resume state (as a slow client's reads arrive) gives exactly
 * what one whole read gives.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resp_parse.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

static struct sl__resp_cmd cmd, piecewise;

/* Parse b[0..n) as reads of `step` bytes: the result of the last call. */
static ssize_t in_pieces(const char *b, size_t n, size_t step, struct sl__resp_resume *rs)
{
    ssize_t r = -2;

    for (size_t have = step < n ? step : n;; have = have + step < n ? have + step : n) {
        r = sl__resp_parse_resume(b, have, 4096, &piecewise, rs);
        if (r != -2 || have == n)
            return r;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct sl__resp_resume rs = {0};
    size_t off = 0, step = size > 0 ? (size_t)data[0] % 7 + 1 : 1;
    ssize_t n;

    while (off < size) {
        n = sl__resp_parse(p + off, size - off, 4096, &cmd);
        ssize_t m = in_pieces(p + off, size - off, step, &rs);
        CHECK(m == n);
        if (n <= 0)
            break;
        CHECK((size_t)n <= size - off && cmd.argc <= SL__RESP_MAX_ARGS);
        CHECK(piecewise.argc == cmd.argc);
        for (size_t i = 0; i < cmd.argc; i++) {
            CHECK(cmd.argv[i].p >= p + off && cmd.argv[i].p + cmd.argv[i].len <= p + off + n);
            CHECK(piecewise.argv[i].p == cmd.argv[i].p && piecewise.argv[i].len == cmd.argv[i].len);
        }
        off += (size_t)n;
    }
    sl__resp_resume_free(&rs);
    return 0;
}
