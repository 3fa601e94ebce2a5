/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_diff_buckets.c - differential tests: token_bucket (plain and warm-up),
 * gcra and leaky_bucket against slow reference models written here, on
 * random traces, every field of every decision compared.
 *
 * The models share no code or representation with lib/: they keep exact
 * rationals (a reduced fraction of two __int128, overflow-checked) in the
 * reference systems' own terms — tokens (bucket4j), an absolute theoretical
 * arrival time (redis-cell), requests of water (nginx), Guava's permits,
 * thresholds and slope — while the library keeps scaled integers. Rounding
 * rules are the contract's: durations up, counts down, saturated at
 * INT64_MAX ns; a warm-up wait is rounded up to a whole ns when reserved.
 *
 * Also checked on the plain token bucket traces: no interval of length t
 * ever admits more than burst + rate * t.
 *
 * Does not: test the table or the limiter (one bare state per trace).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "support/buckets_trace.h"

#define SEED   UINT64_C(0x5eed0b0c4e75)
#define TRACES 1000
#define EVENTS 48

typedef __int128 i128;

/* ------------------------------------------------------------ rationals */

struct q {
    i128 n;
    i128 d; /* > 0, gcd(n, d) == 1 */
};

static const i128 I128_MAX = (i128)(((unsigned __int128)1 << 127) - 1);

static i128 iabs(i128 v)
{
    return v < 0 ? -v : v;
}

static i128 gcd(i128 a, i128 b)
{
    a = iabs(a);
    b = iabs(b);
    while (b != 0) {
        i128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static i128 mulc(i128 a, i128 b)
{
    if (a != 0 && iabs(b) > I128_MAX / iabs(a))
        fail_msg("reference model overflow (mul)");
    return a * b;
}

static i128 addc(i128 a, i128 b)
{
    if ((b > 0 && a > I128_MAX - b) || (b < 0 && a < -I128_MAX - b))
        fail_msg("reference model overflow (add)");
    return a + b;
}

static struct q mk(i128 n, i128 d)
{
    i128 g;

    if (d < 0) {
        n = -n;
        d = -d;
    }
    g = gcd(n, d);
    if (g > 1) {
        n /= g;
        d /= g;
    }
    return (struct q){n, d};
}

static struct q qi(i128 n)
{
    return (struct q){n, 1};
}

static struct q qadd(struct q a, struct q b)
{
    i128 g = gcd(a.d, b.d);
    return mk(addc(mulc(a.n, b.d / g), mulc(b.n, a.d / g)), mulc(a.d / g, b.d));
}

static struct q qsub(struct q a, struct q b)
{
    return qadd(a, (struct q){-b.n, b.d});
}

static struct q qmul(struct q a, struct q b)
{
    i128 g1 = gcd(a.n, b.d), g2 = gcd(b.n, a.d);

    if (g1 == 0 || g2 == 0)
        return qi(0);
    return mk(mulc(a.n / g1, b.n / g2), mulc(a.d / g2, b.d / g1));
}

static struct q qdiv(struct q a, struct q b)
{
    assert_true(b.n != 0);
    return qmul(a, mk(b.d, b.n));
}

static int qcmp(struct q a, struct q b)
{
    struct q s = qsub(a, b);
    return (s.n > 0) - (s.n < 0);
}

static struct q qmax(struct q a, struct q b)
{
    return qcmp(a, b) >= 0 ? a : b;
}

static struct q qmin(struct q a, struct q b)
{
    return qcmp(a, b) <= 0 ? a : b;
}

static i128 qfloor(struct q a)
{
    i128 f = a.n / a.d;
    return (a.n % a.d != 0 && a.n < 0) ? f - 1 : f;
}

static i128 qceil(struct q a)
{
    return -qfloor((struct q){-a.n, a.d});
}

static int64_t sat64(i128 v)
{
    return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

/* A count for `remaining`: floored, never negative. */
static int64_t count_of(struct q a)
{
    i128 f = qfloor(a);
    return f < 0 ? 0 : sat64(f);
}

/* A duration to report: rounded up, saturated. */
static int64_t dur_of(struct q a)
{
    i128 c = qceil(a);
    return c < 0 ? 0 : sat64(c);
}

/* ---------------------------------------------------------------- random */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t rnd_in(uint64_t lo, uint64_t hi)
{
    return lo + rnd() % (hi - lo + 1);
}

/* Roughly log-uniform in [1, max]. */
static uint64_t rnd_log(uint64_t max)
{
    unsigned bits = (unsigned)rnd_in(0, 63 - (unsigned)__builtin_clzll(max));
    uint64_t v = (UINT64_C(1) << bits) | (rnd() & ((UINT64_C(1) << bits) - 1));
    return v > max ? max : v;
}

static uint64_t rnd_cost(int64_t burst)
{
    uint64_t r = rnd_in(0, 99);
    uint64_t big = (uint64_t)(burst < 0 ? 8 : burst) + 3;

    if (r < 10)
        return 0;
    if (r < 60)
        return 1;
    if (r < 93)
        return rnd_in(2, big);
    if (r < 96)
        return UINT64_MAX;
    if (r < 98)
        return UINT64_C(1) << 63;
    return rnd_in(big, UINT64_C(1) << 40);
}

/* The next time: bursts, small steps, long idles, backward steps. */
static int64_t rnd_next_time(int64_t t, int64_t interval_ns, int64_t period_ns)
{
    uint64_t r = rnd_in(0, 99);
    int64_t step;

    if (r < 35)
        step = 0;
    else if (r < 65)
        step = (int64_t)rnd_in(0, (uint64_t)interval_ns * 2);
    else if (r < 80)
        step = (int64_t)rnd_in(0, (uint64_t)period_ns * 2);
    else if (r < 85)
        step = (int64_t)rnd_in(0, (uint64_t)period_ns * 50);
    else if (r < 90)
        step = (int64_t)rnd_in(1, 3);
    else
        step = -(int64_t)rnd_in(1, (uint64_t)period_ns * 2);
    return t + step;
}

/* ----------------------------------------------------------- the models */

struct model {
    struct sl_limit l;
    int64_t last_ns;      /* the last time recorded (init or a commit) */
    struct q x;           /* tokens | TAT (ns) | water (requests) | stored permits */
    int64_t next_free_ns; /* warm-up only */
};

/* What every duration state saturates at: INT64_MAX ns, or more if the
 * limit's own capacity is longer (a model of contracts §Time's "saturate, never wrap"). */
static struct q horizon(struct q full)
{
    return qmax(qi(INT64_MAX), full);
}

static struct q interval_of(const struct sl_limit *l) /* ns per request */
{
    return mk(l->period_ns, (i128)l->requests);
}

/* bucket4j: tokens refilled continuously at requests/period, capped at B. */
static void tb_decide(struct model *m, int64_t now, uint64_t c, struct sl_decision *d)
{
    const struct sl_limit *l = &m->l;
    struct q iv = interval_of(l);
    struct q cap = qi(l->burst < 0 ? (i128)l->requests : l->burst);
    struct q tokens = qmin(cap, qadd(m->x, qdiv(qi((i128)now - m->last_ns), iv)));
    struct q cost = qi(c);
    struct q after = qsub(tokens, cost);

    d->quota = sat64(l->burst < 0 ? (i128)l->requests : l->burst);
    if (c == 0 || qcmp(after, qi(0)) >= 0) {
        d->verdict = SL_ALLOW;
        if (c == 0)
            after = tokens;
        d->remaining = count_of(after);
        d->reset_ns = dur_of(qmul(qsub(cap, after), iv));
        if (c != 0) {
            m->x = after;
            m->last_ns = now;
        }
        return;
    }
    d->verdict = SL_DENY;
    d->remaining = count_of(tokens);
    d->reset_ns = dur_of(qmul(qsub(cap, tokens), iv));
    d->retry_after_ns = qcmp(cost, cap) > 0 ? -1 : dur_of(qmul(qsub(cost, tokens), iv));
    if (l->count_rejected) {
        /* the debt saturates: at most `horizon` ns of refill missing */
        struct q floor_tokens = qsub(cap, qdiv(horizon(qmul(cap, iv)), iv));
        m->x = qmax(after, floor_tokens);
        m->last_ns = now;
    }
}

/* redis-cell: TAT' = max(TAT, now) + T * cost, allowed if TAT' - DVT <= now. */
static void gcra_decide(struct model *m, int64_t now, uint64_t c, struct sl_decision *d)
{
    const struct sl_limit *l = &m->l;
    struct q t = interval_of(l);
    i128 limit = (i128)(l->burst < 0 ? 0 : l->burst) + 1;
    struct q dvt = qmul(t, qi(limit));
    struct q qnow = qi(now);
    struct q tat = qmax(m->x, qnow);
    struct q inc = qmul(t, qi(c));
    struct q new_tat = qadd(tat, inc);
    struct q allow_at = qsub(new_tat, dvt);
    struct q ttl;

    d->quota = sat64(limit);
    if (c == 0 || qcmp(allow_at, qnow) <= 0) {
        d->verdict = SL_ALLOW;
        ttl = qsub(c == 0 ? tat : new_tat, qnow);
        if (c != 0) {
            m->x = new_tat;
            m->last_ns = now;
        }
    } else {
        d->verdict = SL_DENY;
        d->retry_after_ns = qcmp(inc, dvt) > 0 ? -1 : dur_of(qsub(allow_at, qnow));
        ttl = qsub(tat, qnow);
        if (l->count_rejected) {
            m->x = qmin(new_tat, qadd(qnow, horizon(dvt)));
            m->last_ns = now;
        }
    }
    d->remaining = count_of(qdiv(qsub(dvt, ttl), t));
    d->reset_ns = dur_of(ttl);
}

/* nginx limit_req: water leaks at requests/period; 1 + burst fit; excess
 * (water - 1) above `delay` waits (excess - delay) / rate. */
static void leaky_decide(struct model *m, int64_t now, uint64_t c, struct sl_decision *d)
{
    const struct sl_limit *l = &m->l;
    struct q iv = interval_of(l);
    i128 burst = l->burst < 0 ? 0 : l->burst;
    struct q cap = qi(burst + 1);
    struct q undelayed = qi((l->nodelay ? burst : l->delay) + 1);
    struct q water = qmax(qi(0), qsub(m->x, qdiv(qi((i128)now - m->last_ns), iv)));
    struct q next = qadd(water, qi(c));

    d->quota = sat64(burst + 1);
    if (c == 0) {
        d->verdict = SL_ALLOW;
        d->remaining = count_of(qsub(cap, water));
        d->reset_ns = dur_of(qmul(water, iv));
        return;
    }
    if (qcmp(next, cap) > 0) {
        d->verdict = SL_DENY;
        d->remaining = count_of(qsub(cap, water));
        d->reset_ns = dur_of(qmul(water, iv));
        d->retry_after_ns = qcmp(qi(c), cap) > 0 ? -1 : dur_of(qmul(qsub(next, cap), iv));
        if (l->count_rejected) {
            m->x = qmin(next, qdiv(horizon(qmul(cap, iv)), iv));
            m->last_ns = now;
        }
        return;
    }
    d->verdict = qcmp(next, undelayed) > 0 ? SL_DELAY : SL_ALLOW;
    if (d->verdict == SL_DELAY)
        d->delay_ns = dur_of(qmul(qsub(next, undelayed), iv));
    d->remaining = count_of(qsub(cap, next));
    d->reset_ns = dur_of(qmul(next, iv));
    m->x = next;
    m->last_ns = now;
}

/* Guava SmoothWarmingUp (coldFactor 3), literally. */
struct guava {
    struct q stable, cold, threshold, max, slope, cooldown;
};

static struct guava guava_of(const struct sl_limit *l)
{
    struct guava g;
    struct q w = qi(l->warmup_ns);

    g.stable = interval_of(l);
    g.cold = qmul(g.stable, qi(3));
    g.threshold = qdiv(qmul(mk(1, 2), w), g.stable);
    g.max = qadd(g.threshold, qdiv(qmul(qi(2), w), qadd(g.stable, g.cold)));
    g.slope = qdiv(qsub(g.cold, g.stable), qsub(g.max, g.threshold));
    g.cooldown = qdiv(w, g.max);
    return g;
}

static struct q permits_to_time(const struct guava *g, struct q permits)
{
    return qadd(g->stable, qmul(permits, g->slope));
}

static struct q stored_to_wait(const struct guava *g, struct q stored, struct q take)
{
    struct q above = qsub(stored, g->threshold);
    struct q wait = qi(0);

    if (qcmp(above, qi(0)) > 0) {
        struct q t = qmin(above, take);
        struct q len = qadd(permits_to_time(g, above), permits_to_time(g, qsub(above, t)));
        wait = qdiv(qmul(t, len), qi(2));
        take = qsub(take, t);
    }
    return qadd(wait, qmul(g->stable, take));
}

static void guava_reserve(struct model *m, const struct guava *g, int64_t now, uint64_t c)
{
    struct q spend, wait;

    if (now > m->next_free_ns) { /* resync */
        m->x = qmin(g->max, qadd(m->x, qdiv(qi((i128)now - m->next_free_ns), g->cooldown)));
        m->next_free_ns = now;
    }
    spend = qmin(qi(c), m->x);
    if (qcmp(qmul(qi(c), g->stable), qi((i128)INT64_MAX - m->next_free_ns)) >= 0) {
        /* every permit costs at least `stable`: the wait saturates (and the
         * exact sum would not fit this model's 128 bits) */
        m->next_free_ns = INT64_MAX;
    } else {
        wait = qadd(stored_to_wait(g, m->x, spend), qmul(qsub(qi(c), spend), g->stable));
        m->next_free_ns = sat64((i128)m->next_free_ns + qceil(wait));
    }
    m->x = qsub(m->x, spend);
}

static int64_t guava_whole_at(const struct model *m, const struct guava *g)
{
    i128 rest = qceil(qmul(qsub(g->max, m->x), g->cooldown));
    return sat64((i128)m->next_free_ns + rest);
}

static void warm_decide(struct model *m, int64_t now, uint64_t c, struct sl_decision *d)
{
    struct guava g = guava_of(&m->l);
    struct model after = *m;
    bool free_now = m->next_free_ns <= now;

    d->quota = sat64((i128)m->l.requests);
    if (c != 0 && (free_now || m->l.count_rejected)) {
        guava_reserve(&after, &g, now, c);
        after.last_ns = now;
    }
    if (c == 0 || free_now) {
        d->verdict = SL_ALLOW;
        d->remaining = after.next_free_ns <= now ? 1 : 0;
    } else {
        d->verdict = SL_DENY;
        d->retry_after_ns = sat64((i128)m->next_free_ns - now);
    }
    /* reset is reported for the state the decision leaves when admitted,
     * and for the unchanged state when denied */
    i128 reset = (i128)guava_whole_at(d->verdict == SL_DENY ? m : &after, &g) - now;
    d->reset_ns = reset < 0 ? 0 : sat64(reset);
    *m = after;
}

typedef void (*model_fn)(struct model *m, int64_t now, uint64_t c, struct sl_decision *d);

static void model_init(struct model *m, const struct sl_limit *l, int64_t now)
{
    memset(m, 0, sizeof(*m));
    m->l = *l;
    m->last_ns = now;
    m->next_free_ns = now;
    if (l->algo == SL_ALGO_TOKEN_BUCKET && l->warmup_ns > 0)
        m->x = guava_of(l).max; /* starts cold */
    else if (l->algo == SL_ALGO_TOKEN_BUCKET)
        m->x = qi(l->burst < 0 ? (i128)l->requests : l->burst); /* starts full */
    else if (l->algo == SL_ALGO_GCRA)
        m->x = qi(now); /* TAT: now */
    else
        m->x = qi(0); /* no water */
}

/* ----------------------------------------------------------- the runner */

static const char *field_names[] = {"verdict",        "quota",    "remaining",
                                    "retry_after_ns", "reset_ns", "delay_ns"};

static void compare(const struct sl_decision *want, const struct sl_decision *got, int trace,
                    int ev, const struct sl_limit *l, int64_t t, uint64_t c)
{
    int64_t w[6] = {want->verdict,        want->quota,    want->remaining,
                    want->retry_after_ns, want->reset_ns, want->delay_ns};
    int64_t g[6] = {got->verdict,        got->quota,    got->remaining,
                    got->retry_after_ns, got->reset_ns, got->delay_ns};

    for (int i = 0; i < 6; i++) {
        if (w[i] == g[i])
            continue;
        print_error("seed %#llx trace %d event %d: %s %s: model %lld, library %lld\n"
                    "  limit: requests %llu period %lld burst %lld delay %lld nodelay %d "
                    "warmup %lld count_rejected %d; t %lld cost %llu\n",
                    (unsigned long long)SEED, trace, ev, sl_algo_name(l->algo), field_names[i],
                    (long long)w[i], (long long)g[i], (unsigned long long)l->requests,
                    (long long)l->period_ns, (long long)l->burst, (long long)l->delay, l->nodelay,
                    (long long)l->warmup_ns, l->count_rejected, (long long)t,
                    (unsigned long long)c);
        fail();
    }
}

struct admitted {
    int64_t eff_ns;
    uint64_t cost;
};

/* No window [a, b] of admitted requests holds more than B + R (b - a) / P. */
static void check_burst_invariant(const struct sl_limit *l, const struct admitted *a, size_t n)
{
    i128 cap = l->burst < 0 ? (i128)l->requests : l->burst;

    for (size_t i = 0; i < n; i++) {
        i128 sum = 0;
        for (size_t j = i; j < n; j++) {
            sum += a[j].cost;
            i128 lhs = mulc(sum, l->period_ns);
            i128 rhs = addc(mulc(cap, l->period_ns),
                            mulc((i128)l->requests, (i128)a[j].eff_ns - a[i].eff_ns));
            if (lhs > rhs)
                fail_msg("burst invariant broken: %zu..%zu admit more than B + rate * t", i, j);
        }
    }
}

/* Times at the ends of int64 as well as ordinary ones (edge-time traces). */
static bool edge_times;

static int64_t rnd_edge_time(void)
{
    static const int64_t edges[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX};
    uint64_t r = rnd_in(0, 9);

    if (r < 7)
        return edges[r];
    return (int64_t)rnd();
}

/* Run one random trace of `l` on the library and on `model`. */
static void run_trace(const struct sl_limit *l, model_fn model, int trace, int *invariant_checks)
{
    struct bk_state st;
    struct model m;
    struct admitted adm[EVENTS];
    size_t n_adm = 0;
    int64_t interval = l->period_ns / (int64_t)l->requests + 1;
    int64_t t = edge_times ? rnd_edge_time()
                           : INT64_C(1700000000000000000) + (int64_t)rnd_in(0, UINT64_C(1) << 40);
    int64_t last = t; /* the library's last recorded time, as seen here */

    bk_init(&st, l, t);
    model_init(&m, l, t);
    for (int ev = 0; ev < EVENTS; ev++) {
        uint64_t c = l->warmup_ns > 0 ? rnd_cost(6) : rnd_cost(l->burst);
        struct sl_decision got, want;
        int64_t eff;

        t = edge_times ? rnd_edge_time() : rnd_next_time(t, interval, l->period_ns);
        eff = t > last ? t : last;
        memset(&want, 0, sizeof(want));
        model(&m, eff, c, &want);
        if (c != 0 && want.verdict == SL_DENY && l->count_rejected) {
            /* a counted denial reports the state with it recorded */
            struct model again = m;
            struct sl_decision after;

            memset(&after, 0, sizeof(after));
            model(&again, eff, c, &after);
            want.remaining = after.remaining;
            want.reset_ns = after.reset_ns;
            want.retry_after_ns = after.retry_after_ns;
        }
        sl_algo_decide(&st, l, t, c, &got);
        compare(&want, &got, trace, ev, l, t, c);
        if (c != 0 && (got.verdict != SL_DENY || l->count_rejected))
            last = eff;
        if (c != 0 && got.verdict != SL_DENY)
            adm[n_adm++] = (struct admitted){eff, c};
    }
    if (l->algo == SL_ALGO_TOKEN_BUCKET && l->warmup_ns == 0) {
        check_burst_invariant(l, adm, n_adm);
        (*invariant_checks)++;
    }
}

static struct sl_limit rnd_limit(enum sl_algo algo)
{
    struct sl_limit l;

    sl_limit_init(&l);
    l.algo = algo;
    l.requests = rnd_in(0, 3) == 0 ? 1 : rnd_log(1000);
    l.period_ns = (int64_t)rnd_log(UINT64_C(1000000000000));
    l.count_rejected = rnd_in(0, 2) == 0;
    switch (algo) {
    case SL_ALGO_TOKEN_BUCKET:
        l.burst = rnd_in(0, 3) == 0 ? -1 : (int64_t)rnd_in(1, 40);
        break;
    case SL_ALGO_GCRA:
        l.burst = rnd_in(0, 3) == 0 ? -1 : (int64_t)rnd_in(0, 40);
        break;
    default:
        l.burst = rnd_in(0, 3) == 0 ? -1 : (int64_t)rnd_in(0, 40);
        if (rnd_in(0, 2) == 0)
            l.nodelay = true;
        else
            l.delay = (int64_t)rnd_in(0, l.burst < 0 ? 0 : (uint64_t)l.burst);
        break;
    }
    sl_limit_finish(&l);
    return l;
}

static struct sl_limit rnd_warm_limit(void)
{
    struct sl_limit l;

    sl_limit_init(&l);
    l.algo = SL_ALGO_TOKEN_BUCKET;
    l.requests = rnd_in(1, 8);
    l.period_ns = (int64_t)rnd_in(1000, UINT64_C(4000000000));
    l.warmup_ns = (int64_t)rnd_log(UINT64_C(20000000000));
    l.count_rejected = rnd_in(0, 2) == 0;
    sl_limit_finish(&l);
    return l;
}

static void run_many(enum sl_algo algo, bool warm, model_fn model)
{
    int traces = 0, invariant_checks = 0;

    edge_times = false;

    rng_state = SEED ^ ((uint64_t)algo << 32) ^ (uint64_t)warm;
    print_message("seed %#llx (%s%s)\n", (unsigned long long)SEED, sl_algo_name(algo),
                  warm ? ", warm-up" : "");
    for (int i = 0; i < TRACES; i++) {
        struct sl_limit l = warm ? rnd_warm_limit() : rnd_limit(algo);
        run_trace(&l, model, i, &invariant_checks);
        traces++;
    }
    assert_int_equal(traces, TRACES);
    if (algo == SL_ALGO_TOKEN_BUCKET && !warm)
        assert_int_equal(invariant_checks, TRACES);
}

/* The same comparison with times at the ends of int64 (and random ones, in
 * any order): nothing wraps, the models still agree. */
static void diff_edge_times(void **unused)
{
    static const struct {
        enum sl_algo algo;
        bool warm;
        model_fn model;
    } runs[] = {
        {SL_ALGO_TOKEN_BUCKET, false, tb_decide},
        {SL_ALGO_TOKEN_BUCKET, true, warm_decide},
        {SL_ALGO_GCRA, false, gcra_decide},
        {SL_ALGO_LEAKY_BUCKET, false, leaky_decide},
    };
    int traces = 0, unused_checks = 0;

    rng_state = SEED ^ 0xed9e;
    edge_times = true;
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        for (int i = 0; i < TRACES / 4; i++) {
            struct sl_limit l = runs[r].warm ? rnd_warm_limit() : rnd_limit(runs[r].algo);
            run_trace(&l, runs[r].model, i, &unused_checks);
            traces++;
        }
    }
    edge_times = false;
    assert_int_equal(traces, TRACES);
}

static void diff_token_bucket(void **unused)
{
    run_many(SL_ALGO_TOKEN_BUCKET, false, tb_decide);
}

static void diff_token_bucket_warmup(void **unused)
{
    run_many(SL_ALGO_TOKEN_BUCKET, true, warm_decide);
}

static void diff_gcra(void **unused)
{
    run_many(SL_ALGO_GCRA, false, gcra_decide);
}

static void diff_leaky_bucket(void **unused)
{
    run_many(SL_ALGO_LEAKY_BUCKET, false, leaky_decide);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(diff_token_bucket), cmocka_unit_test(diff_token_bucket_warmup),
        cmocka_unit_test(diff_gcra),         cmocka_unit_test(diff_leaky_bucket),
        cmocka_unit_test(diff_edge_times),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
