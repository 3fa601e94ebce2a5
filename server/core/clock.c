/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * clock.c - the daemon's time source (docs/contracts.md §Time): CLOCK_REALTIME made
 * non-decreasing, or a frozen test clock advanced on request.
 *
 * The real clock keeps its "last value" per thread, so reading it takes no
 * shared cache line; the library clamps per key anyway, so workers that
 * differ by a few nanoseconds cannot grant anything extra.
 */
#include <stdatomic.h>
#include <time.h>

#include "clock.h"
#include "sluice.h"

static atomic_bool test_mode;
static _Atomic int64_t test_now_ns;
static _Thread_local int64_t last_ns;

void sl__clock_set_test(int64_t start_ms)
{
    atomic_store(&test_now_ns, start_ms * SL_NS_PER_MS);
    atomic_store(&test_mode, true);
}

bool sl__clock_is_test(void)
{
    return atomic_load_explicit(&test_mode, memory_order_relaxed);
}

int64_t sl__clock_now_ns(void)
{
    struct timespec ts;
    int64_t now;

    if (sl__clock_is_test())
        return atomic_load(&test_now_ns);
    clock_gettime(CLOCK_REALTIME, &ts);
    now = (int64_t)ts.tv_sec * SL_NS_PER_S + ts.tv_nsec;
    if (now < last_ns)
        return last_ns;
    last_ns = now;
    return now;
}

int sl__clock_advance_ms(int64_t ms, int64_t *now_ns)
{
    int64_t add, cur;

    if (!sl__clock_is_test() || ms < 0 || __builtin_mul_overflow(ms, SL_NS_PER_MS, &add))
        return SL_EINVAL;
    cur = atomic_load(&test_now_ns);
    for (;;) {
        int64_t next;
        if (__builtin_add_overflow(cur, add, &next))
            return SL_EINVAL;
        if (atomic_compare_exchange_weak(&test_now_ns, &cur, next)) {
            *now_ns = next;
            return SL_OK;
        }
    }
}
