/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_hold.h - answer an HTTP request after a delay without blocking the
 * worker (internal; see http_hold.c).
 */
#ifndef SL_SERVER_HTTP_HOLD_H
#define SL_SERVER_HTTP_HOLD_H

#include <stddef.h>
#include <stdint.h>

struct sl__conn;

/* Fill reply slot `slot` of `c` (reserved, >= 0) with a copy of
 * bytes[0..len) after `delay_ms` milliseconds of loop time. The connection
 * stays alive meanwhile (a reserved slot keeps it). Worker thread only. */
void sl__h1_hold(struct sl__conn *c, int64_t slot, int64_t delay_ms, const char *bytes, size_t len);

#endif /* SL_SERVER_HTTP_HOLD_H */
