/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * log.c - one line per event on stderr (log.h), as text
 * ("2026-01-02T03:04:05.678Z info server.ready ready") or as one JSON object
 * for log shippers. Each line goes out in one write(2) so lines from
 * workers never interleave, and a line is always whole: a long message is
 * cut, never the line's end (a JSON line stays valid JSON, its strings
 * valid UTF-8).
 *
 * It does not buffer, rotate or filter by subsystem.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LINE_MAX_BYTES 2048
#define MSG_MAX_BYTES  1024 /* a message, formatted, before escaping */
#define FIELDS_ROOM    384  /* of the line, kept for the fields after the message */

static atomic_int level = SL__LOG_INFO;
static atomic_int format = SL__LOG_TEXT;

static const char *const names[] = {"error", "warn", "info", "debug"};

void sl__log_set_level(enum sl__log_level lvl)
{
    atomic_store(&level, (int)lvl);
}

void sl__log_set_format(enum sl__log_format fmt)
{
    atomic_store(&format, (int)fmt);
}

bool sl__log_enabled(enum sl__log_level lvl)
{
    return (int)lvl <= atomic_load_explicit(&level, memory_order_relaxed);
}

int sl__log_parse_level(const char *s, size_t len)
{
    for (int i = 0; i < 4; i++)
        if (strlen(names[i]) == len && strncasecmp(names[i], s, len) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------ a line */

/* A line being written into a fixed buffer: what does not fit is left out,
 * and `cap` keeps room for the line's end. */
struct line {
    char p[LINE_MAX_BYTES];
    size_t len, cap;
};

static bool put(struct line *l, const char *s, size_t n)
{
    if (l->len > l->cap || n > l->cap - l->len)
        return false;
    memcpy(l->p + l->len, s, n);
    l->len += n;
    return true;
}

static bool puts_(struct line *l, const char *s)
{
    return put(l, s, strlen(s));
}

/* The length of the valid UTF-8 sequence at s[0..n), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

    if (s[0] >= 0xf8 || k == 0 || k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((k == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (k == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (k == 4 && s[0] == 0xf0 && s[1] < 0x90) || (k == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0; /* overlong, surrogate, or above U+10FFFF */
    return k;
}

/* s[0..n) as the inside of a JSON string: quotes, backslashes and control
 * characters escaped, bytes that are not UTF-8 replaced by U+FFFD. Stops
 * at the last whole character that fits (false: it was cut). */
static bool put_json(struct line *l, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    char esc[8];

    for (size_t i = 0; i < n;) {
        size_t k = u[i] < 0x80 ? 1 : utf8_len(u + i, n - i);
        bool ok;
        if (u[i] == '"' || u[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)u[i];
            ok = put(l, esc, 2);
        } else if (u[i] < 0x20 || u[i] == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
            ok = put(l, esc, 6);
        } else if (k == 0) {
            ok = put(l, "\\ufffd", 6);
            k = 1;
        } else {
            ok = put(l, s + i, k);
        }
        if (!ok)
            return false;
        i += k;
    }
    return true;
}

static bool put_i64(struct line *l, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%lld", (long long)v);

    return put(l, num, (size_t)n);
}

/* ,"key":value for each field that fits whole. */
static void put_fields(struct line *l, const struct sl__log_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t mark = l->len;
        bool ok = puts_(l, ",\"") && put_json(l, f[i].key, strlen(f[i].key)) && puts_(l, "\":");
        if (f[i].str != NULL)
            ok = ok && puts_(l, "\"") && put_json(l, f[i].str, strlen(f[i].str)) && puts_(l, "\"");
        else
            ok = ok && put_i64(l, f[i].num);
        if (!ok)
            l->len = mark; /* a field is whole or absent */
    }
}

static void put_time(struct line *l)
{
    struct timespec ts;
    struct tm tm;
    char t[40];
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(t + n, sizeof(t) - n, ".%03ldZ", ts.tv_nsec / 1000000);
    puts_(l, t);
}

static void text_line(struct line *l, enum sl__log_level lvl, const char *event, const char *msg,
                      uint64_t suppressed)
{
    char more[64];

    put_time(l);
    puts_(l, " ");
    puts_(l, names[lvl]);
    puts_(l, " ");
    puts_(l, event);
    puts_(l, " ");
    if (suppressed > 0)
        snprintf(more, sizeof(more), " (%llu more like it in the last second)",
                 (unsigned long long)suppressed);
    l->cap -= suppressed > 0 ? strlen(more) : 0;
    size_t start = l->len;
    put(l, msg, strnlen(msg, l->cap > l->len ? l->cap - l->len : 0));
    /* one event, one line: a message may not smuggle in a newline */
    for (size_t i = start; i < l->len; i++)
        if (l->p[i] == '\n' || l->p[i] == '\r')
            l->p[i] = ' ';
    l->cap += suppressed > 0 ? strlen(more) : 0;
    if (suppressed > 0)
        puts_(l, more);
}

static void json_line(struct line *l, enum sl__log_level lvl, const char *event, const char *msg,
                      const struct sl__log_field *f, size_t n, uint64_t suppressed)
{
    puts_(l, "{\"ts\":\"");
    put_time(l);
    puts_(l, "\",\"level\":\"");
    puts_(l, names[lvl]);
    puts_(l, "\",\"event\":\"");
    put_json(l, event, strlen(event));
    puts_(l, "\",\"msg\":\"");
    l->cap -= FIELDS_ROOM; /* the message may not crowd out the fields */
    put_json(l, msg, strlen(msg));
    l->cap += FIELDS_ROOM;
    puts_(l, "\"");
    put_fields(l, f, n);
    if (suppressed > 0)
        put_fields(l, &SL__LOG_INT("suppressed", suppressed), 1);
    puts_(l, "}");
}

static void vlog(enum sl__log_level lvl, const char *event, const struct sl__log_field *f, size_t n,
                 uint64_t suppressed, const char *fmt, va_list ap)
{
    struct line l = {.len = 0, .cap = LINE_MAX_BYTES - 2}; /* room for "}\n" */
    char msg[MSG_MAX_BYTES];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (atomic_load_explicit(&format, memory_order_relaxed) == SL__LOG_JSON)
        json_line(&l, lvl, event, msg, f, n, suppressed);
    else
        text_line(&l, lvl, event, msg, suppressed);
    l.p[l.len++] = '\n';
    if (write(STDERR_FILENO, l.p, l.len) < 0)
        return; /* nowhere left to report it */
}

void sl__log_event(enum sl__log_level lvl, const char *event, const char *fmt, ...)
{
    va_list ap;

    if (!sl__log_enabled(lvl))
        return;
    va_start(ap, fmt);
    vlog(lvl, event, NULL, 0, 0, fmt, ap);
    va_end(ap);
}

void sl__log_fields(enum sl__log_level lvl, const char *event, const struct sl__log_field *f,
                    size_t n, const char *fmt, ...)
{
    va_list ap;

    if (!sl__log_enabled(lvl))
        return;
    va_start(ap, fmt);
    vlog(lvl, event, f, n, 0, fmt, ap);
    va_end(ap);
}

void sl__log_rate(struct sl__lograte *r, enum sl__log_level lvl, const char *event,
                  const struct sl__log_field *f, size_t n, const char *fmt, ...)
{
    struct timespec ts;
    int64_t now_s, next;
    va_list ap;

    if (!sl__log_enabled(lvl))
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now_s = (int64_t)ts.tv_sec;
    next = atomic_load_explicit(&r->next_s, memory_order_relaxed);
    if (now_s < next ||
        !atomic_compare_exchange_strong_explicit(&r->next_s, &next, now_s + 1, memory_order_relaxed,
                                                 memory_order_relaxed)) {
        atomic_fetch_add_explicit(&r->suppressed, 1, memory_order_relaxed);
        return;
    }
    va_start(ap, fmt);
    vlog(lvl, event, f, n, atomic_exchange_explicit(&r->suppressed, 0, memory_order_relaxed), fmt,
         ap);
    va_end(ap);
}
