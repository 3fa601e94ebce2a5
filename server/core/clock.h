/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * clock.h - the daemon's one time source (docs/contracts.md §Time), internal.
 *
 * Real mode: CLOCK_REALTIME in Unix epoch nanoseconds, made non-decreasing
 * per thread (a step back of the wall clock repeats the last value instead).
 * Test mode (`--test-clock START_MS`): frozen at START_MS until advanced;
 * shared by every worker, advanced atomically. Nothing else in sluiced reads
 * a clock for decisions.
 */
#ifndef SL_SERVER_CLOCK_H
#define SL_SERVER_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Switch to test mode at `start_ms`; call once, before the workers start. */
void sl__clock_set_test(int64_t start_ms);
bool sl__clock_is_test(void);
/* The time for decisions, Unix epoch ns. Thread-safe, lock-free. */
int64_t sl__clock_now_ns(void);
/* Test mode: move the clock forward by `ms` (>= 0). SL_EINVAL in real mode
 * or for a negative or overflowing amount. Returns the new time via *now. */
int sl__clock_advance_ms(int64_t ms, int64_t *now_ns);

#endif /* SL_SERVER_CLOCK_H */
