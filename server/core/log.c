/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * log.c - one line per event on stderr: "2026-01-02T03:04:05.678Z info msg".
 * Each line goes out in one write(2) so lines from workers never interleave.
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

static atomic_int level = SL__LOG_INFO;

static const char *const names[] = {"error", "warn", "info", "debug"};

void sl__log_set_level(enum sl__log_level lvl)
{
    atomic_store(&level, (int)lvl);
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

static void vlog(enum sl__log_level lvl, uint64_t suppressed, const char *fmt, va_list ap)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ %s ", ts.tv_nsec / 1000000,
                          names[lvl]);
    int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    if (m < 0)
        m = 0;
    n += (size_t)m < sizeof(line) - n - 1 ? (size_t)m : sizeof(line) - n - 2;
    if (suppressed > 0 && n + 64 < sizeof(line)) { /* the note fits whole, or is left out */
        m = snprintf(line + n, sizeof(line) - n - 1, " (%llu more like it in the last second)",
                     (unsigned long long)suppressed);
        n += m > 0 && (size_t)m < sizeof(line) - n - 1 ? (size_t)m : 0;
    }
    /* one event, one line: a message may not smuggle in a newline */
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0)
        return; /* nowhere left to report it */
}

void sl__log(enum sl__log_level lvl, const char *fmt, ...)
{
    va_list ap;

    if (!sl__log_enabled(lvl))
        return;
    va_start(ap, fmt);
    vlog(lvl, 0, fmt, ap);
    va_end(ap);
}

void sl__log_rate(struct sl__lograte *r, enum sl__log_level lvl, const char *fmt, ...)
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
    vlog(lvl, atomic_exchange_explicit(&r->suppressed, 0, memory_order_relaxed), fmt, ap);
    va_end(ap);
}
