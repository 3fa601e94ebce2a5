/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * store_wait.c - see store_wait.h.
 */
#include "store_wait.h"

uint64_t sw_now_ms(void)
{
    return uv_hrtime() / 1000000;
}

void sw_on_answer(void *arg, int err, const struct sl_result *res, enum sl__store_by by)
{
    struct answer *a = arg;

    a->done = true;
    a->err = err;
    a->by = (int)by;
    a->done_ms = sw_now_ms();
    if (res != NULL)
        a->res = *res;
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

void sw_loop_init(uv_loop_t *loop, uv_timer_t *tick)
{
    uv_loop_init(loop);
    uv_timer_init(loop, tick);
    uv_timer_start(tick, on_tick, 1, 1);
}

void sw_spin(uv_loop_t *loop, const bool *flag, uint64_t max_ms)
{
    uv_update_time(loop);
    for (uint64_t end = uv_now(loop) + max_ms; (flag == NULL || !*flag) && uv_now(loop) < end;)
        uv_run(loop, UV_RUN_ONCE);
}
