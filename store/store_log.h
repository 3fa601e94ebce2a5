/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * store_log.h - the stores' lines for the operator (private to store/):
 * sl__store_log(SL__STORE_LOG_WARN, "store.what", "message %s", ...) goes
 * to the sink the daemon gave sl__store_set_log() (store.h), which writes
 * it to the daemon's log with its event name.
 *
 * The event must be a string literal of the form "store.what", listed in
 * docs/operations.md (a test reads both). It does not rate-limit: a caller
 * whose line could repeat says it once (see redis_conn.c's AUTH warning).
 */
#ifndef SL_STORE_LOG_H
#define SL_STORE_LOG_H

#include "store.h"

void sl__store_log_line(enum sl__store_log_level lvl, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The "" "" makes a non-literal event fail to compile. */
#define sl__store_log(lvl, event, ...) sl__store_log_line((lvl), "" event "", __VA_ARGS__)

#endif /* SL_STORE_LOG_H */
