/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_query.c - splits and percent-decodes a URL query string.
 *
 * Bounded by its caller's arrays; no allocation. It does not validate UTF-8
 * (descriptor values are bytes to the library).
 */
#include "http_query.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode s[0..n) to the end of scratch; SL_OK or an error. */
static int decode(const char *s, size_t n, char *scratch, size_t cap, size_t *used,
                  struct sl_str *out)
{
    size_t start = *used;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return SL_EINVAL;
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return SL_EINVAL;
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (*used >= cap)
            return SL_ETOOBIG;
        scratch[(*used)++] = c;
    }
    out->p = scratch + start;
    out->len = *used - start;
    return SL_OK;
}

int sl__query_parse(const char *q, size_t len, struct sl__qpair *pairs, size_t max, char *scratch,
                    size_t cap)
{
    size_t n = 0, used = 0, i = 0;

    while (i < len) {
        size_t end = i, eq;
        int rc;
        while (end < len && q[end] != '&')
            end++;
        for (eq = i; eq < end && q[eq] != '='; eq++)
            ;
        if (end > i) {
            if (n == max)
                return SL_ETOOBIG;
            if ((rc = decode(q + i, eq - i, scratch, cap, &used, &pairs[n].name)) != SL_OK)
                return rc;
            if (eq < end)
                rc = decode(q + eq + 1, end - eq - 1, scratch, cap, &used, &pairs[n].value);
            else
                pairs[n].value = (struct sl_str){scratch + used, 0};
            if (rc != SL_OK)
                return rc;
            n++;
        }
        i = end + 1;
    }
    return (int)n;
}
