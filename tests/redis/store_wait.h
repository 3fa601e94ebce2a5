/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * store_wait.h - driving an asynchronous store from a test: the answer a
 * callback fills, a loop that always wakes, and running it until an answer
 * arrives. Shared by the Redis and Redis Cluster store tests.
 */
#ifndef SL_TEST_STORE_WAIT_H
#define SL_TEST_STORE_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "sluice.h"
#include "store.h"

/* What one store call answered; `started_ms` is the caller's to set (with
 * sw_now_ms()) when it times the call. */
struct answer {
    bool done;
    int err;
    struct sl_result res;
    int by; /* store.h's enum sl__store_by: who answered */
    uint64_t started_ms, done_ms;
};

/* Monotonic milliseconds (not the loop's cached time). */
uint64_t sw_now_ms(void);
/* An sl__store_cb: fills the struct answer `arg`. */
void sw_on_answer(void *arg, int err, const struct sl_result *res, enum sl__store_by by);
/* Initialise `loop` with a 1 ms timer so that UV_RUN_ONCE always returns. */
void sw_loop_init(uv_loop_t *loop, uv_timer_t *tick);
/* Run `loop` until *flag (NULL: never) or `max_ms` have passed. */
void sw_spin(uv_loop_t *loop, const bool *flag, uint64_t max_ms);

#endif
