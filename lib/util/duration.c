/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * duration.c - durations as rules write them: a non-negative integer and a
 * unit (ms, s, m, h, d, w). A bare number is refused, because "60" could mean
 * seconds or milliseconds and a wrong guess is a limit off by 1000x.
 */
#include "sluice.h"

static const struct {
    const char *unit;
    int64_t ns;
} units[] = {
    {"ms", SL_NS_PER_MS},      {"s", SL_NS_PER_S},         {"m", 60 * SL_NS_PER_S},
    {"h", 3600 * SL_NS_PER_S}, {"d", 86400 * SL_NS_PER_S}, {"w", 7 * 86400 * SL_NS_PER_S},
};

int sl_duration_parse(const char *s, size_t len, int64_t *out_ns)
{
    size_t i = 0;
    int64_t n = 0;

    if (len == 0 || s[0] < '0' || s[0] > '9')
        return SL_EINVAL;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, s[i] - '0', &n))
            return SL_ERANGE;
    }
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        const char *p = units[u].unit;
        size_t j = i;
        while (*p != '\0' && j < len && s[j] == *p) {
            p++;
            j++;
        }
        if (*p == '\0' && j == len)
            return __builtin_mul_overflow(n, units[u].ns, out_ns) ? SL_ERANGE : SL_OK;
    }
    return SL_EINVAL;
}
