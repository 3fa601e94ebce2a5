/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * log.h - sluiced's log: one line per event on stderr, with a UTC time and a
 * level (internal). It does not rotate, buffer or ship logs anywhere: the
 * service manager owns stderr.
 */
#ifndef SL_SERVER_LOG_H
#define SL_SERVER_LOG_H

#include <stdatomic.h>
#include <stdint.h>

#include "config-t.h"

/* Lines above this level are dropped. Set once at start, read by all. */
void sl__log_set_level(enum sl__log_level lvl);
bool sl__log_enabled(enum sl__log_level lvl);
/* Parse "error", "warn", "info", "debug"; -1 if unknown. */
int sl__log_parse_level(const char *s, size_t len);

void sl__log(enum sl__log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line that an attacker could repeat (a refused connection): logged at
 * most once a second per limiter, the next line saying how many were left
 * out. A limiter is a zeroed static, shared by every thread. */
struct sl__lograte {
    _Atomic int64_t next_s;      /* monotonic second the next line may go out */
    _Atomic uint64_t suppressed; /* lines left out since the last one */
};
void sl__log_rate(struct sl__lograte *r, enum sl__log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define sl__err(...)  sl__log(SL__LOG_ERROR, __VA_ARGS__)
#define sl__warn(...) sl__log(SL__LOG_WARN, __VA_ARGS__)
#define sl__info(...) sl__log(SL__LOG_INFO, __VA_ARGS__)
#define sl__dbg(...)                                                                               \
    do {                                                                                           \
        if (sl__log_enabled(SL__LOG_DEBUG))                                                        \
            sl__log(SL__LOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

#endif /* SL_SERVER_LOG_H */
