/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * store_log.h - a store line from code that holds no store (private to
 * store/): the rules subscriber's work, which runs on a pool thread with
 * only its own configuration. sl__store_log(SL__SLOG_WARN, "store.what",
 * "message %s", ...) goes to the sink sl__store_config_set_log() was given
 * (store.h), like the stores' own lines (sl__rlog).
 *
 * The event must be a string literal "store.what" listed in
 * docs/operations.md (a test reads both). It does not rate-limit.
 */
#ifndef SL_STORE_LOG_H
#define SL_STORE_LOG_H

#include "store.h"

/* Remember the sink for these lines (sl__store_config_set_log calls it). */
void sl__store_log_sink(sl__store_log_fn fn, void *arg);

void sl__store_log_line(enum sl__store_level lvl, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The "" "" makes a non-literal event fail to compile. */
#define sl__store_log(lvl, event, ...) sl__store_log_line((lvl), "" event "", __VA_ARGS__)

#endif /* SL_STORE_LOG_H */
