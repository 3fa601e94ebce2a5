/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * combined_log.c - read one line of nginx's default "combined" access log:
 * the client address, the time (1 s resolution, with its UTC offset) and the
 * request path, which `sluice simulate --log-format combined` turns into
 * the descriptors remote_address and path.
 *
 * It does not use the status, sizes, referrer or user agent, and does not
 * decode percent-escapes in the path (rules see the path as nginx logged it).
 */
#include <string.h>

#include "sim_line.h"

static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Exactly `n` digits at p into *out. */
static bool num(const char *p, int n, int64_t *out)
{
    int64_t v = 0;

    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return true;
}

/* "10/Oct/2000:13:55:36 -0700" (26 bytes) as Unix ms. */
static bool parse_time(const char *p, size_t len, int64_t *out_ms)
{
    int64_t d, y, hh, mm, ss, oh, om, mon = -1;

    if (len != 26 || p[2] != '/' || p[6] != '/' || p[11] != ':' || p[14] != ':' || p[17] != ':' ||
        p[20] != ' ' || (p[21] != '+' && p[21] != '-'))
        return false;
    for (int i = 0; i < 12; i++)
        if (memcmp(p + 3, months[i], 3) == 0)
            mon = i + 1;
    if (mon < 0 || !num(p, 2, &d) || !num(p + 7, 4, &y) || !num(p + 12, 2, &hh) ||
        !num(p + 15, 2, &mm) || !num(p + 18, 2, &ss) || !num(p + 22, 2, &oh) ||
        !num(p + 24, 2, &om))
        return false;
    if (d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60 || y < 1970)
        return false;
    int64_t s = days_from_civil(y, mon, d) * 86400 + hh * 3600 + mm * 60 + ss;
    int64_t off = (oh * 3600 + om * 60) * (p[21] == '-' ? -1 : 1);
    *out_ms = (s - off) * 1000;
    return *out_ms >= 0;
}

/* Find `c` in [p, end); NULL if absent. */
static const char *find(const char *p, const char *end, char c)
{
    return p < end ? memchr(p, c, (size_t)(end - p)) : NULL;
}

long sl__clf_parse(const char *line, size_t len, struct sl__clf *out)
{
    const char *end = line + len, *p = line, *q, *sp;

    q = find(p, end, ' ');
    if (q == NULL || q == p)
        return -1;
    out->remote_address = (struct sl_str){p, (size_t)(q - p)};
    p = find(q, end, '[');
    q = p ? find(p, end, ']') : NULL;
    if (q == NULL || !parse_time(p + 1, (size_t)(q - p - 1), &out->t_ms))
        return -1;
    p = find(q, end, '"');
    q = p ? find(p + 1, end, '"') : NULL;
    if (q == NULL)
        return -1;
    sp = find(p + 1, q, ' '); /* after the method */
    if (sp == NULL)
        return -1;
    p = sp + 1;
    sp = find(p, q, ' '); /* before the protocol (absent in HTTP/0.9) */
    if (sp == NULL)
        sp = q;
    const char *qm = find(p, sp, '?');
    if (qm != NULL)
        sp = qm;
    if (sp == p)
        return -1;
    out->path = (struct sl_str){p, (size_t)(sp - p)};
    return (long)len;
}
