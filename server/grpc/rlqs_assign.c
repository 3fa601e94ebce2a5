/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlqs_assign.c - max-min fair division of a rate limit among the members
 * of a rate limit quota bucket, within what their holds leave, and the
 * token bucket that carries a share (rlqs_assign.h). Pure arithmetic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rlqs_assign.h"

double sl__rlqs_held_rate(const struct sl__rlqs_member *m, int64_t now_ns)
{
    return m->hold_until_ns > now_ns ? m->hold_rate : 0.0;
}

int64_t sl__rlqs_held_burst(const struct sl__rlqs_member *m, int64_t now_ns)
{
    return m->hold_until_ns > now_ns ? m->hold_burst : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The water level L with sum(min(e_i, L)) <= cap, as large as that allows,
 * for sum(e_i) > cap: the live e sorted, L is met where what the smaller
 * ones take and k members at L exhaust cap. O(n log n): a pool of a
 * thousand members divides in some ten thousand steps. */
static double water_level(const struct sl__rlqs_member *m, const double *e, size_t n, double cap)
{
    double v[SL__RLQS_MAX_MEMBERS], below = 0.0;
    size_t k = 0;

    for (size_t i = 0; i < n && k < SL__RLQS_MAX_MEMBERS; i++)
        if (m[i].live)
            v[k++] = e[i];
    if (k == 0)
        return 0.0;
    qsort(v, k, sizeof(v[0]), cmp_double);
    for (size_t i = 0; i < k; i++) {
        double level = (cap - below) / (double)(k - i); /* the rest at one level */
        if (level <= v[i])
            return level * (1.0 - 1e-12); /* never a rounding above cap */
        below += v[i];
    }
    return v[k - 1]; /* not reached: sum(e) > cap */
}

/* Max-min fair targets of the live members over `cap`, into t[]. */
static void targets(const struct sl__rlqs_member *m, size_t n, size_t live, double cap,
                    double floor_frac, double *t)
{
    double floor = floor_frac * cap / (double)live, sum = 0.0;

    for (size_t i = 0; i < n; i++) {
        t[i] = 0.0;
        if (!m[i].live)
            continue;
        t[i] = m[i].demand > floor ? m[i].demand : floor;
        if (!(t[i] >= 0.0)) /* NaN */
            t[i] = floor;
        sum += t[i];
    }
    if (sum <= cap) { /* every demand met: the rest is shared equally */
        double extra = (cap - sum) / (double)live;
        for (size_t i = 0; i < n; i++)
            if (m[i].live)
                t[i] += extra;
        return;
    }
    double level = water_level(m, t, n, cap);
    for (size_t i = 0; i < n; i++)
        if (m[i].live && t[i] > level)
            t[i] = level;
}

/* Give next_rate within the holds: decreases at once, increases out of
 * the headroom in proportion to what each lacks. */
static void fit_rates(struct sl__rlqs_member *m, size_t n, const double *t, double cap,
                      int64_t now_ns)
{
    double held = 0.0, lack = 0.0;

    for (size_t i = 0; i < n; i++) {
        if (!m[i].live)
            continue;
        double h = sl__rlqs_held_rate(&m[i], now_ns);
        held += h;
        if (t[i] > h)
            lack += t[i] - h;
    }
    double room = cap - held;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].live)
            continue;
        double h = sl__rlqs_held_rate(&m[i], now_ns);
        if (t[i] <= h || lack <= room)
            m[i].next_rate = t[i];
        else if (room <= 0.0)
            m[i].next_rate = h;
        else
            m[i].next_rate = h + (t[i] - h) * (room / lack) * (1.0 - 1e-12);
    }
}

/* The same for bursts, in whole tokens: one for each live member first,
 * the rest in proportion to the rate targets. A member that gets no token
 * (the others' holds take them all) gets no rate either, until they are
 * given back - unless there are more members than the burst has tokens, the one
 * case where every member gets one and the sum exceeds the burst. */
static void fit_bursts(struct sl__rlqs_member *m, size_t n, size_t live, const double *t,
                       double cap, int64_t bcap, bool short_of_tokens, int64_t now_ns)
{
    int64_t held = 0, room, spread = bcap > (int64_t)live ? bcap - (int64_t)live : 0;

    for (size_t i = 0; i < n; i++)
        if (m[i].live)
            held += sl__rlqs_held_burst(&m[i], now_ns);
    room = bcap - held;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].live)
            continue;
        int64_t h = sl__rlqs_held_burst(&m[i], now_ns);
        int64_t want = 1 + (int64_t)floor((double)spread * (t[i] / cap));
        if (want <= h) {
            m[i].next_burst = want;
        } else {
            int64_t more = want - h < room ? want - h : room;
            if (more < 0)
                more = 0;
            m[i].next_burst = h + more;
            room -= more;
        }
        if (m[i].next_burst < 1) {
            if (short_of_tokens && m[i].next_rate > 0.0)
                m[i].next_burst = 1;
            else
                m[i].next_rate = 0.0; /* nothing to give yet */
        }
    }
}

void sl__rlqs_divide(const struct sl__rlqs_share *s, struct sl__rlqs_member *m, size_t n,
                     int64_t now_ns)
{
    double cap = s->rate, t[SL__RLQS_MAX_MEMBERS];
    int64_t bcap = s->burst;
    size_t live = 0;

    for (size_t i = 0; i < n; i++) {
        m[i].next_rate = 0.0;
        m[i].next_burst = 0;
        if (m[i].live) {
            live++;
        } else {
            cap -= sl__rlqs_held_rate(&m[i], now_ns);
            bcap -= sl__rlqs_held_burst(&m[i], now_ns);
        }
    }
    if (live == 0 || !(cap > 0.0) || n > SL__RLQS_MAX_MEMBERS)
        return;
    targets(m, n, live, cap, s->floor_frac, t);
    fit_rates(m, n, t, cap, now_ns);
    fit_bursts(m, n, live, t, cap, bcap, s->burst < (int64_t)n, now_ns);
}

void sl__rlqs_sending(struct sl__rlqs_member *m, double rate, int64_t burst, int64_t now_ns,
                      int64_t ttl_ns)
{
    if (m->hold_until_ns <= now_ns) {
        m->hold_rate = 0.0;
        m->hold_burst = 0;
    }
    if (rate > m->hold_rate)
        m->hold_rate = rate;
    if (burst > m->hold_burst)
        m->hold_burst = burst;
    if (now_ns + ttl_ns > m->hold_until_ns)
        m->hold_until_ns = now_ns + ttl_ns;
}

bool sl__rlqs_sent(struct sl__rlqs_member *m, double rate, int64_t burst, int64_t now_ns,
                   int64_t ttl_ns)
{
    bool freed = rate < sl__rlqs_held_rate(m, now_ns) || burst < sl__rlqs_held_burst(m, now_ns);

    m->hold_rate = rate;
    m->hold_burst = burst;
    m->hold_until_ns = now_ns + ttl_ns;
    return freed;
}

bool sl__rlqs_token_bucket(double rate, int64_t burst, struct sl__rlqs_bucket *out)
{
    double per_fill;

    if (!(rate > 0.0) || burst < 1)
        return false;
    out->max_tokens = burst > UINT32_MAX ? UINT32_MAX : (uint32_t)burst;
    per_fill = floor(rate); /* about a second's worth, at most the bucket */
    if (per_fill < 1.0)
        per_fill = 1.0;
    if (per_fill > (double)out->max_tokens)
        per_fill = (double)out->max_tokens;
    out->tokens_per_fill = (uint32_t)per_fill;
    /* rounded up: per_fill / interval never exceeds rate */
    double ms = ceil(per_fill * 1000.0 / rate);
    out->fill_interval_ms = ms < 1.0 ? 1 : ms > 1e12 ? (int64_t)1e12 : (int64_t)ms;
    if ((double)out->tokens_per_fill * 1000.0 / (double)out->fill_interval_ms > rate) {
        out->fill_interval_ms++; /* (rate above 1000 per ms: never, but exact) */
    }
    return true;
}

/* ------------------------------------------------------------ fleets */

double sl__rlqs_fleet_cap(const struct sl__rlqs_share *s, const struct sl__rlqs_node *nodes,
                          size_t n, size_t self)
{
    struct sl__rlqs_member m[SL__RLQS_MAX_MEMBERS];
    size_t k = 0, start[SL__RLQS_MAX_MEMBERS], end[SL__RLQS_MAX_MEMBERS];
    double held = 0.0, lack = 0.0, mine = 0.0, t_self = 0.0, c_self;

    if (self >= n || n > SL__RLQS_MAX_MEMBERS)
        return 0.0;
    for (size_t j = 0; j < n; j++) { /* every instance of the fleet, nothing held */
        start[j] = k;
        for (size_t i = 0; i < nodes[j].n && k < SL__RLQS_MAX_MEMBERS; i++, k++) {
            memset(&m[k], 0, sizeof(m[k]));
            m[k].live = true;
            m[k].demand = nodes[j].demand[i];
        }
        end[j] = k;
    }
    sl__rlqs_divide(s, m, k, 0);
    for (size_t j = 0; j < n; j++) {
        double t = 0.0, c = nodes[j].claim > 0.0 ? nodes[j].claim : 0.0;
        for (size_t i = start[j]; i < end[j]; i++)
            t += m[i].next_rate;
        held += c;
        if (t > c)
            lack += t - c;
        if (j == self)
            t_self = t;
    }
    c_self = nodes[self].claim > 0.0 ? nodes[self].claim : 0.0;
    double room = s->rate - held;
    if (t_self <= c_self || lack <= room)
        mine = t_self;
    else if (room <= 0.0)
        mine = c_self;
    else
        mine = c_self + (t_self - c_self) * (room / lack) * (1.0 - 1e-12);
    return mine < s->rate ? mine : s->rate;
}

long sl__rlqs_fleet_parse(const char *v, int64_t *expiry_ms, double *claim, double *d, size_t cap)
{
    char *end;
    long n = 0;
    long long e = strtoll(v, &end, 10);

    if (end == v || e < 0 || *end != ' ')
        return -1;
    *expiry_ms = (int64_t)e;
    v = end;
    *claim = strtod(v, &end);
    if (end == v || !(*claim >= 0.0) || !isfinite(*claim))
        return -1;
    for (v = end; *v == ' ';) {
        double x = strtod(v, &end);
        if (end == v || !(x >= 0.0) || !isfinite(x))
            return -1;
        if ((size_t)n < cap)
            d[n++] = x;
        v = end;
    }
    return *v == '\0' ? n : -1;
}
