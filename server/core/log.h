/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * log.h - sluiced's log: one line per event on stderr, with a UTC time, a
 * level and the event's name (internal). It does not rotate, buffer or ship
 * logs anywhere: the service manager owns stderr.
 *
 * Every line names its event: a dotted lower-case name, "area.what"
 * (conn.refused, rules.reload_failed), a string literal at the call site,
 * listed in docs/operations.md (a test holds the two together), so that an
 * operator can grep and alert on it whatever the message's words become.
 * The area is the part of the daemon that speaks (server, worker, conn,
 * rules, proxy, ...); a layer that gets a logger of its own names its
 * events the same way (the stores: "store.*").
 *
 * Two formats (log.format), chosen once at start:
 *   text  2026-01-02T03:04:05.678Z warn conn.refused conn: 10000 connections open, ...
 *   json  {"ts":"2026-01-02T03:04:05.678Z","level":"warn","event":"conn.refused",
 *          "msg":"conn: 10000 connections open, ...","limit":"server.max_connections"}
 * A line's fields (sl__log_fields) are members of its JSON object; the
 * text line has the message only, which says the same for a reader.
 */
#ifndef SL_SERVER_LOG_H
#define SL_SERVER_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config-t.h"

/* Lines above this level are dropped; the format of every line. Set once
 * at start, read by all. */
void sl__log_set_level(enum sl__log_level lvl);
void sl__log_set_format(enum sl__log_format fmt);
bool sl__log_enabled(enum sl__log_level lvl);
/* Parse "error", "warn", "info", "debug"; -1 if unknown. */
int sl__log_parse_level(const char *s, size_t len);

/* A field of a line: a key (not "ts", "level", "event" or "msg") and a
 * string, or a number when str is NULL. Borrowed for the call. */
struct sl__log_field {
    const char *key;
    const char *str;
    int64_t num;
};
#define SL__LOG_STR(k, v) ((struct sl__log_field){(k), (v), 0})
#define SL__LOG_INT(k, v) ((struct sl__log_field){(k), NULL, (int64_t)(v)})

/* One line of event `event` at level `lvl`: the message from fmt, and
 * with _fields the fields f[0..n). Any thread; one write(2) per line. */
void sl__log_event(enum sl__log_level lvl, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sl__log_fields(enum sl__log_level lvl, const char *event, const struct sl__log_field *f,
                    size_t n, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A line that an attacker could repeat (a refused connection): logged at
 * most once a second per limiter, the next line saying how many were left
 * out (in JSON, a "suppressed" field). A limiter is a zeroed static,
 * shared by every thread. */
struct sl__lograte {
    _Atomic int64_t next_s;      /* monotonic second the next line may go out */
    _Atomic uint64_t suppressed; /* lines left out since the last one */
};
void sl__log_rate(struct sl__lograte *r, enum sl__log_level lvl, const char *event,
                  const struct sl__log_field *f, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The usual calls: sl__warn("area.what", "message %s", ...). The event must
 * be a string literal (the "" "" around it makes anything else fail to
 * compile), so that every name can be found in the source. */
#define sl__err(event, ...)  sl__log_event(SL__LOG_ERROR, "" event "", __VA_ARGS__)
#define sl__warn(event, ...) sl__log_event(SL__LOG_WARN, "" event "", __VA_ARGS__)
#define sl__info(event, ...) sl__log_event(SL__LOG_INFO, "" event "", __VA_ARGS__)
#define sl__dbg(event, ...)                                                                        \
    do {                                                                                           \
        if (sl__log_enabled(SL__LOG_DEBUG))                                                        \
            sl__log_event(SL__LOG_DEBUG, "" event "", __VA_ARGS__);                                \
    } while (0)

#endif /* SL_SERVER_LOG_H */
