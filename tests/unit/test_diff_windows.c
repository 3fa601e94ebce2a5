/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_diff_windows.c - differential tests: fixed_window, sliding_window,
 * sliding_log and concurrency against a slow, obviously correct model on
 * random traces (bursts, long idles, backward clock steps, costs of 0, 1,
 * near the quota and 2^64 - 1, random parameters from 1 ns to a year).
 *
 * The model shares no code with lib/: it keeps every recorded request in a
 * list and answers two questions by counting over it — "would k more be
 * admitted at time s?" and "is the state whole at time s?". Every field of
 * every decision is checked against those: verdict and remaining (the
 * largest admissible k, by binary search), retry_after (admitted at t + r,
 * not at t + r - 1; concurrency once a lease was released: an estimate, not
 * after the exact wait and below 1 s only when exact) and reset (whole at t + r, not at t + r - 1).
 * Invariants on what was admitted are checked too: never more than N per aligned window (fixed),
 * per period-long window (sliding_log), in flight (concurrency).
 *
 * sliding_window runs with random `buckets` (sub-windows, 1 to 1024), and
 * the model checks the bound docs/algorithms.md states for it: whenever a
 * request is admitted at t, the requests admitted in (t - period, t] are at
 * most requests + floor(A * e / S), S the sub-window, e the time into the
 * current one and A what the sub-window N before the current one admitted
 * (so always below 2 * requests).
 *
 * Does not: cover sliding_window counts beyond 2^64 - 1 (the library
 * documents that they saturate, and so does the model).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sluice.h"

#define SEED    0x5eed2024u
#define TRACES  1000
#define EVENTS  60
#define YEAR_NS (INT64_C(31536000) * SL_NS_PER_S)

typedef unsigned __int128 u128;
typedef __int128 i128;

/* ------------------------------------------------------------ the model */

struct m_event {
    int64_t t_ns;
    uint64_t cost;
    bool admitted; /* false: a rejected request counted (count_rejected) */
    bool released;
    int64_t expires_ns; /* concurrency */
    uint64_t lease;     /* concurrency: the library's id for it */
};

struct model {
    struct sl_limit l;
    struct m_event ev[EVENTS];
    size_t n;
    bool seen;
    int64_t last_ns;
    bool any_released; /* concurrency: its retry is an estimate from then on */
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rnd_in(uint64_t lo, uint64_t hi) /* inclusive */
{
    return lo + rnd() % (hi - lo + 1);
}

static i128 window_of(i128 t, int64_t p)
{
    i128 q = t / p;
    return (t % p != 0 && t < 0) ? q - 1 : q;
}

static uint64_t sat64(u128 v)
{
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* Sum of recorded costs whose window is w (fixed/sliding). */
static u128 sum_window(const struct model *m, i128 w)
{
    u128 sum = 0;
    for (size_t i = 0; i < m->n; i++)
        if (window_of(m->ev[i].t_ns, m->l.period_ns) == w)
            sum += m->ev[i].cost;
    return sum;
}

/* sliding_window: its sub-windows, N of S ns each. */
static unsigned sw_n(const struct model *m)
{
    return m->l.buckets > 1 ? m->l.buckets : 1;
}

static int64_t sw_sub(const struct model *m)
{
    return m->l.period_ns / sw_n(m);
}

/* Sum of recorded costs in sub-window b, saturated as a count is. */
static u128 sum_sub(const struct model *m, i128 b)
{
    u128 sum = 0;
    for (size_t i = 0; i < m->n; i++)
        if (window_of(m->ev[i].t_ns, sw_sub(m)) == b)
            sum += m->ev[i].cost;
    return sat64(sum);
}

/* Entries of the log in (s - period, s], and the newest of them. */
static u128 sum_live_log(const struct model *m, i128 s, i128 *newest)
{
    u128 sum = 0;
    *newest = INT64_MIN;
    for (size_t i = 0; i < m->n; i++) {
        if (m->ev[i].t_ns > s - m->l.period_ns && m->ev[i].t_ns <= s) {
            sum += m->ev[i].cost;
            if (m->ev[i].t_ns > *newest)
                *newest = m->ev[i].t_ns;
        }
    }
    return sum;
}

static u128 sum_held(const struct model *m, i128 s)
{
    u128 sum = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!m->ev[i].released && m->ev[i].expires_ns > s)
            sum += m->ev[i].cost;
    return sum;
}

/* Would a request of k >= 1 be admitted at time s (no clamping here)? */
static bool m_ok(const struct model *m, i128 s, u128 k)
{
    const struct sl_limit *l = &m->l;
    u128 n = l->requests;

    switch (l->algo) {
    case SL_ALGO_FIXED_WINDOW:
        return (u128)sat64(sum_window(m, window_of(s, l->period_ns))) + k <= n;
    case SL_ALGO_SLIDING_WINDOW: {
        /* estimate = old * (S - e) / S + full, the N newest sub-windows full */
        int64_t sub = sw_sub(m);
        i128 w = window_of(s, sub);
        u128 full = 0, old, e = (u128)(s - w * sub);
        u128 per[SL_SW_BUCKETS_MAX + 1] = {0}; /* costs of the sub-window j before w's */
        for (size_t i = 0; i < m->n; i++) {
            i128 j = w - window_of(m->ev[i].t_ns, sub);
            if (j >= 0 && j <= sw_n(m))
                per[j] += m->ev[i].cost;
        }
        for (unsigned j = 0; j < sw_n(m); j++)
            full += sat64(per[j]);
        old = sat64(per[sw_n(m)]);
        if (full + k > n)
            return false;
        return old * ((u128)sub - e) + (full + k) * (u128)sub <= n * (u128)sub;
    }
    case SL_ALGO_SLIDING_LOG: {
        i128 newest;
        u128 live = sum_live_log(m, s, &newest);
        if (live > 0 && l->min_interval_ns > 0 && s - newest < l->min_interval_ns)
            return false;
        return live + k <= n;
    }
    case SL_ALGO_CONCURRENCY:
        return sum_held(m, s) + k <= n;
    default:
        fail();
    }
    return false;
}

static bool m_whole(const struct model *m, i128 s)
{
    const struct sl_limit *l = &m->l;
    i128 newest;

    switch (l->algo) {
    case SL_ALGO_FIXED_WINDOW:
        return sum_window(m, window_of(s, l->period_ns)) == 0;
    case SL_ALGO_SLIDING_WINDOW:
        for (unsigned j = 0; j <= sw_n(m); j++)
            if (sum_sub(m, window_of(s, sw_sub(m)) - j) != 0)
                return false;
        return true;
    case SL_ALGO_SLIDING_LOG:
        return sum_live_log(m, s, &newest) == 0;
    default:
        return sum_held(m, s) == 0;
    }
}

/* The largest k >= 0 admissible at s (k = 0 always is), capped at N. */
static uint64_t m_remaining(const struct model *m, i128 s)
{
    uint64_t lo = 0, hi = m->l.requests;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (m_ok(m, s, mid))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* ---------------------------------------------------------- the checks */

struct stats {
    unsigned traces, decisions, denials, releases;
};

static void report(const struct model *m, int64_t now, uint64_t cost, const struct sl_decision *d,
                   const char *what)
{
    print_error("%s: algo %s N=%llu P=%lld buckets=%u mi=%lld lease=%lld cr=%d; now=%lld "
                "cost=%llu -> "
                "verdict %d remaining %lld retry %lld reset %lld\n",
                what, sl_algo_name(m->l.algo), (unsigned long long)m->l.requests,
                (long long)m->l.period_ns, m->l.buckets, (long long)m->l.min_interval_ns,
                (long long)m->l.lease_ns, m->l.count_rejected, (long long)now,
                (unsigned long long)cost, d->verdict, (long long)d->remaining,
                (long long)d->retry_after_ns, (long long)d->reset_ns);
    fail();
}

/* sliding_window's bound: admitted in (t - P, t] <= requests +
 * floor(A * e / S), A admitted in the sub-window N before t's. */
static void check_sw_bound(const struct model *m, i128 t)
{
    int64_t sub = sw_sub(m);
    i128 w = window_of(t, sub);
    u128 in_window = 0, oldest = 0;
    u128 e = (u128)(t - w * sub);

    for (size_t i = 0; i < m->n; i++) {
        const struct m_event *ev = &m->ev[i];
        if (!ev->admitted)
            continue;
        if (ev->t_ns > t - m->l.period_ns && ev->t_ns <= t)
            in_window += ev->cost;
        if (window_of(ev->t_ns, sub) == w - sw_n(m))
            oldest += ev->cost;
    }
    if (in_window > (u128)m->l.requests + oldest * e / (u128)sub ||
        (in_window > m->l.requests && in_window >= 2 * (u128)m->l.requests)) {
        print_error("sliding_window bound: N=%u requests=%llu P=%lld: %llu admitted in the "
                    "window ending %lld, oldest sub-window %llu\n",
                    sw_n(m), (unsigned long long)m->l.requests, (long long)m->l.period_ns,
                    (unsigned long long)in_window, (long long)t, (unsigned long long)oldest);
        fail();
    }
}

/* The invariants on admitted requests, checked when one is admitted at t. */
static void check_invariant(const struct model *m, i128 t)
{
    u128 sum = 0;

    if (m->l.algo == SL_ALGO_SLIDING_WINDOW) {
        check_sw_bound(m, t);
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        const struct m_event *e = &m->ev[i];
        if (!e->admitted)
            continue;
        if (m->l.algo == SL_ALGO_FIXED_WINDOW &&
            window_of(e->t_ns, m->l.period_ns) == window_of(t, m->l.period_ns))
            sum += e->cost;
        if (m->l.algo == SL_ALGO_SLIDING_LOG && e->t_ns > t - m->l.period_ns)
            sum += e->cost;
        if (m->l.algo == SL_ALGO_CONCURRENCY && !e->released && e->expires_ns > t)
            sum += e->cost;
    }
    assert_true(sum <= m->l.requests);
}

static void decide(struct model *m, void *st, int64_t now, uint64_t cost, struct stats *sx)
{
    struct sl_decision d;
    i128 t = m->seen ? (now > m->last_ns ? now : m->last_ns) : now;
    bool allow = cost == 0 || m_ok(m, t, cost);
    uint64_t rem;

    sl_algo_decide(st, &m->l, now, cost, &d);
    sx->decisions++;
    if (d.verdict != (allow ? SL_ALLOW : SL_DENY))
        report(m, now, cost, &d, "verdict");
    if (d.quota != (int64_t)(m->l.requests > INT64_MAX ? INT64_MAX : m->l.requests) ||
        d.delay_ns != 0)
        report(m, now, cost, &d, "quota/delay");
    if (cost > 0 && (allow || (m->l.count_rejected && m->l.algo != SL_ALGO_CONCURRENCY))) {
        struct m_event *e = &m->ev[m->n++];
        e->t_ns = (int64_t)t;
        e->cost = cost;
        e->admitted = allow;
        e->released = false;
        e->expires_ns = (int64_t)(t + m->l.lease_ns > INT64_MAX ? INT64_MAX : t + m->l.lease_ns);
        e->lease = d.lease;
        m->seen = true;
        m->last_ns = (int64_t)t;
        if (allow)
            check_invariant(m, t);
    }
    if (m->l.algo == SL_ALGO_CONCURRENCY && allow && cost > 0) {
        if (d.lease == 0)
            report(m, now, cost, &d, "no lease");
        for (size_t i = 0; i + 1 < m->n; i++)
            if (m->ev[i].lease == d.lease)
                report(m, now, cost, &d, "lease id reused");
    } else if (d.lease != 0) {
        report(m, now, cost, &d, "unexpected lease");
    }
    rem = m_remaining(m, t);
    if (d.remaining != (int64_t)(rem > INT64_MAX ? INT64_MAX : rem))
        report(m, now, cost, &d, "remaining");
    if (d.reset_ns < 0 || !m_whole(m, t + d.reset_ns) ||
        (d.reset_ns > 0 && m_whole(m, t + d.reset_ns - 1)))
        report(m, now, cost, &d, "reset");
    if (allow) {
        if (d.retry_after_ns != 0)
            report(m, now, cost, &d, "retry of an admitted request");
        return;
    }
    sx->denials++;
    if (cost > m->l.requests) {
        if (d.retry_after_ns != -1)
            report(m, now, cost, &d, "retry of an impossible cost");
        return;
    }
    if (m->any_released) {
        /* an estimate from the hold times: never later than the exact
         * wait, and below 1 s only when that is the exact wait */
        if (d.retry_after_ns <= 0 || m_ok(m, t + d.retry_after_ns - 1, cost) ||
            (d.retry_after_ns < SL_NS_PER_S && !m_ok(m, t + d.retry_after_ns, cost)))
            report(m, now, cost, &d, "estimated retry");
        return;
    }
    if (d.retry_after_ns <= 0 || !m_ok(m, t + d.retry_after_ns, cost) ||
        m_ok(m, t + d.retry_after_ns - 1, cost))
        report(m, now, cost, &d, "retry");
}

/* concurrency: release a lease held (or once held, or never) at `now`. */
static void release(struct model *m, void *st, int64_t now, struct stats *sx)
{
    i128 t = m->seen ? (now > m->last_ns ? now : m->last_ns) : now;
    uint64_t lease = rnd() % 4 == 0 || m->n == 0 ? rnd() : m->ev[rnd() % m->n].lease;
    int want = SL_ENOENT;

    for (size_t i = 0; i < m->n; i++) {
        struct m_event *e = &m->ev[i];
        if (lease != 0 && e->lease == lease && !e->released && e->expires_ns > t) {
            e->released = true;
            m->any_released = true;
            want = SL_OK;
        }
    }
    m->seen = true;
    m->last_ns = (int64_t)t;
    sx->releases++;
    assert_int_equal(sl_algo_release(st, &m->l, now, lease), want);
}

/* ---------------------------------------------------------- the traces */

static int64_t random_period(void)
{
    switch (rnd() % 4) {
    case 0:
        return (int64_t)rnd_in(1, 20);
    case 1:
        return (int64_t)rnd_in(1, 1000);
    case 2:
        return (int64_t)rnd_in(1, 100) * SL_NS_PER_S;
    default:
        return (int64_t)rnd_in(1, YEAR_NS);
    }
}

static uint64_t random_requests(enum sl_algo algo)
{
    bool small = algo == SL_ALGO_SLIDING_LOG || algo == SL_ALGO_CONCURRENCY;
    switch (rnd() % 5) {
    case 0:
        return 1;
    case 1:
    case 2:
        return rnd_in(1, 8);
    case 3:
        return rnd_in(1, 64);
    default:
        return small ? rnd_in(1, 64) : rnd_in(1, (uint64_t)1 << 63);
    }
}

static uint64_t random_cost(uint64_t n)
{
    switch (rnd() % 10) {
    case 0:
        return 0;
    case 1:
        return UINT64_MAX;
    case 2:
        return rnd_in(1, n < UINT64_MAX - 3 ? n + 2 : n);
    case 3:
        return n;
    default:
        return 1;
    }
}

/* Times: small steps, bursts at one instant, long idles, steps back. */
static int64_t next_time(int64_t t, int64_t p)
{
    i128 next;
    switch (rnd() % 8) {
    case 0:
        next = t; /* burst */
        break;
    case 1:
        next = (i128)t + (i128)p * (i128)rnd_in(1, 3) + (i128)rnd_in(0, (uint64_t)p); /* idle */
        break;
    case 2:
        next = (i128)t - (i128)rnd_in(0, (uint64_t)p); /* backward */
        break;
    default:
        next = (i128)t + (i128)rnd_in(0, (uint64_t)p / 4 + 1);
    }
    if (next > INT64_MAX / 2 || next < INT64_MIN / 2)
        return t;
    return (int64_t)next;
}

/* sliding_window: 1 (a third of the traces, today's two counters), a few,
 * an hour's minutes or up to the cap; the period rounded to a multiple. */
static uint16_t fixed_buckets; /* 0: random */

static void random_buckets(struct sl_limit *l)
{
    static const uint16_t some[] = {1, 1, 1, 2, 3, 3, 10, 60, 60, 0};
    uint16_t n = fixed_buckets ? fixed_buckets : some[rnd() % 10];

    if (n == 0)
        n = (uint16_t)(rnd() % 8 == 0 ? rnd_in(1, SL_SW_BUCKETS_MAX) : rnd_in(1, 64));
    l->buckets = n;
    l->period_ns = l->period_ns < n ? n : l->period_ns / n * n;
}

static void one_trace(enum sl_algo algo, struct stats *sx)
{
    struct model *m = test_calloc(1, sizeof(*m));
    const int64_t starts[] = {0, -(int64_t)rnd_in(0, 1u << 30), INT64_C(1700000000) * SL_NS_PER_S};
    int64_t t = starts[rnd() % 3] + (int64_t)rnd_in(0, 1000);
    const char *why = NULL;
    void *st;

    sl_limit_init(&m->l);
    m->l.algo = algo;
    m->l.requests = random_requests(algo);
    m->l.period_ns = random_period();
    m->l.count_rejected = rnd() % 3 == 0;
    if (algo == SL_ALGO_SLIDING_LOG && rnd() % 2)
        m->l.min_interval_ns = (int64_t)rnd_in(1, 2 * (uint64_t)m->l.period_ns);
    if (algo == SL_ALGO_CONCURRENCY)
        m->l.lease_ns = (int64_t)rnd_in(1, (uint64_t)m->l.period_ns);
    if (algo == SL_ALGO_SLIDING_WINDOW)
        random_buckets(&m->l);
    if (sl_limit_validate(&m->l, &why) != SL_OK) {
        print_error("random limit invalid: %s\n", why);
        fail();
    }
    st = test_malloc(sl_algo_state_size(&m->l));
    sl_algo_init(st, &m->l, t);
    for (int i = 0; i < EVENTS; i++) {
        t = next_time(t, algo == SL_ALGO_CONCURRENCY ? m->l.lease_ns : m->l.period_ns);
        if (algo == SL_ALGO_CONCURRENCY && rnd() % 4 == 0)
            release(m, st, t, sx);
        else
            decide(m, st, t, random_cost(m->l.requests), sx);
    }
    test_free(st);
    test_free(m);
    sx->traces++;
}

static void run_algo(enum sl_algo algo)
{
    struct stats sx = {0};
    uint64_t seed = SEED + (uint64_t)algo + ((uint64_t)fixed_buckets << 32);

    rng_state = seed;
    for (int i = 0; i < TRACES; i++)
        one_trace(algo, &sx);
    printf("# %s: seed 0x%llx, %u traces, %u decisions (%u denied), %u releases\n",
           sl_algo_name(algo), (unsigned long long)seed, sx.traces, sx.decisions, sx.denials,
           sx.releases);
    assert_true(sx.traces >= 1000);
    assert_true(sx.denials > sx.decisions / 20); /* the traces do exercise denials */
}

static void diff_fixed_window(void **unused)
{
    (void)unused;
    run_algo(SL_ALGO_FIXED_WINDOW);
}

static void diff_sliding_window(void **unused)
{
    (void)unused;
    run_algo(SL_ALGO_SLIDING_WINDOW);
}

/* 1,000 traces for each of N = 1, 3, 10, 60 exactly. */
static void diff_sliding_window_n(void **unused)
{
    static const uint16_t ns[] = {1, 3, 10, 60};

    (void)unused;
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        fixed_buckets = ns[i];
        printf("# sliding_window buckets %u:\n", ns[i]);
        run_algo(SL_ALGO_SLIDING_WINDOW);
    }
    fixed_buckets = 0;
}

static void diff_sliding_log(void **unused)
{
    (void)unused;
    run_algo(SL_ALGO_SLIDING_LOG);
}

static void diff_concurrency(void **unused)
{
    (void)unused;
    run_algo(SL_ALGO_CONCURRENCY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(diff_fixed_window),     cmocka_unit_test(diff_sliding_window),
        cmocka_unit_test(diff_sliding_window_n), cmocka_unit_test(diff_sliding_log),
        cmocka_unit_test(diff_concurrency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
