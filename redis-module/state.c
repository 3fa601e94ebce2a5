/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * state.c - the scripts' stored states to the library's layouts and back
 * (see state.h for the formats). Every number read is checked; a state that
 * does not decode is refused rather than guessed at, and a state that
 * cannot be written exactly as the scripts would is refused before
 * anything is written (SL_ERANGE, the scripts' SLUICE_RANGE).
 */
#include <stdio.h>
#include <string.h>

#include "sluice_sat.h"
#include "sluice_state.h"
#include "state.h"

#define EXACT   (INT64_C(1) << 53)  /* Lua numbers are exact below this */
#define SAT     (INT64_C(1) << 52)  /* where the scripts saturate counts and debts */
#define LOG_MAX (UINT64_C(1) << 20) /* sliding_log entries one call expands */

enum kind { K_BUCKET, K_WARM, K_FW, K_SW, K_SG, K_CC };

static enum kind kind_of(const struct sl_limit *l)
{
    switch (l->algo) {
    case SL_ALGO_TOKEN_BUCKET:
        return l->warmup_ns > 0 ? K_WARM : K_BUCKET;
    case SL_ALGO_GCRA:
    case SL_ALGO_LEAKY_BUCKET:
        return K_BUCKET;
    case SL_ALGO_FIXED_WINDOW:
        return K_FW;
    case SL_ALGO_SLIDING_WINDOW:
        return K_SW;
    case SL_ALGO_SLIDING_LOG:
        return K_SG;
    default:
        return K_CC;
    }
}

static bool in(int64_t v, int64_t lo, int64_t hi)
{
    return v >= lo && v <= hi;
}

/* ------------------------------------------------------------- limits */

/* The backlog algorithms: a = period_us / g, b = requests / g, c = the
 * capacity in requests, d = leaky_bucket's undelayed requests (delay + 1).
 * The library decides the same with the reduced pair as with the original
 * one: every comparison and every duration is a ratio of the two. */
static bool bucket_limit(const struct sl__mfields *f, struct sl_limit *l)
{
    l->requests = (uint64_t)f->b;
    l->period_ns = f->a * 1000;
    if (f->c < 1)
        return false;
    if (f->algo == SL_ALGO_TOKEN_BUCKET) {
        l->burst = f->c;
        return true;
    }
    l->burst = f->c - 1;
    if (f->algo == SL_ALGO_LEAKY_BUCKET) {
        if (f->d < 1 || f->d > f->c)
            return false;
        l->delay = f->d - 1;
    }
    return true;
}

bool sl__mstate_limit(const struct sl__mfields *f, struct sl_limit *l, const char **why)
{
    sl_limit_init(l);
    *why = "item fields out of range";
    if (!in(f->a, 0, EXACT - 1) || !in(f->b, 0, EXACT - 1) || !in(f->c, 0, EXACT - 1) ||
        !in(f->d, 0, EXACT - 1) || !in(f->cr, 0, 1) || !in(f->shadow, 0, 1) || !in(f->warm, 0, 1) ||
        !in(f->cost, 0, EXACT - 1))
        return false;
    l->algo = (enum sl_algo)f->algo;
    l->count_rejected = f->cr == 1;
    l->shadow = f->shadow == 1;
    switch (f->algo) {
    case SL_ALGO_TOKEN_BUCKET:
        if (f->warm == 1) {
            l->requests = (uint64_t)f->b;
            l->period_ns = f->a * 1000;
            l->warmup_ns = f->c * 1000;
            break;
        }
        /* fall through */
    case SL_ALGO_GCRA:
    case SL_ALGO_LEAKY_BUCKET:
        if (!bucket_limit(f, l))
            return false;
        break;
    case SL_ALGO_FIXED_WINDOW:
        l->requests = (uint64_t)f->b;
        l->period_ns = f->a * 1000;
        break;
    case SL_ALGO_SLIDING_WINDOW: /* c: the sub-windows (buckets; 0 or 1: one) */
        if (f->c > SL_SW_BUCKETS_MAX) {
            *why = "sliding_window: buckets out of range";
            return false;
        }
        l->requests = (uint64_t)f->b;
        l->period_ns = f->a * 1000;
        l->buckets = (uint16_t)(f->c > 1 ? f->c : 1);
        break;
    case SL_ALGO_SLIDING_LOG:
        if ((uint64_t)f->b > LOG_MAX) {
            *why = "sliding_log: the module expands at most 2^20 entries per key";
            return false;
        }
        l->requests = (uint64_t)f->b;
        l->period_ns = f->a * 1000;
        l->min_interval_ns = f->c * 1000;
        l->log_cap = (uint32_t)l->requests;
        break;
    case SL_ALGO_CONCURRENCY:
        l->requests = (uint64_t)f->a;
        l->lease_ns = f->b * 1000;
        break;
    default:
        *why = "unknown algorithm";
        return false;
    }
    return sl_limit_validate(l, why) == SL_OK;
}

size_t sl__mstate_size(const struct sl_limit *l)
{
    return sl_algo_state_size(l);
}

bool sl__mstate_has_fresh(const struct sl_limit *l)
{
    enum kind k = kind_of(l);
    return k == K_BUCKET || k == K_WARM || k == K_CC;
}

/* ------------------------------------------------------------- decode */

static bool int_ns(struct sl__mp_reader *r, int64_t *ns)
{
    int64_t us;

    if (!sl__mp_int(r, &us) || !in(us, -EXACT, EXACT))
        return false;
    *ns = us * 1000;
    return true;
}

static bool int_in(struct sl__mp_reader *r, int64_t lo, int64_t hi, int64_t *v)
{
    return sl__mp_int(r, v) && in(*v, lo, hi);
}

/* "l0,l1,..." base 2^24, little-endian, into a number below 2^64. */
static bool limbs(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0, limb = 0;
    unsigned shift = 0;
    bool digit = false;

    *out = 0;
    if (len == 0) /* no limbs: zero */
        return true;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == ',') {
            if (!digit || limb >= (UINT64_C(1) << 24) || shift >= 64 ||
                (shift > 40 && (limb >> (64 - shift)) != 0))
                return false;
            v |= limb << shift;
            shift += 24;
            limb = 0;
            digit = false;
            if (i == len)
                break;
        } else if (s[i] >= '0' && s[i] <= '9' && limb < (UINT64_C(1) << 24)) {
            limb = limb * 10 + (uint64_t)(s[i] - '0');
            digit = true;
        } else {
            return false;
        }
    }
    *out = v;
    return true;
}

static int decode_bucket(struct sl__mp_reader *r, uint64_t n, void *blob)
{
    struct sl__backlog *b = blob;
    int64_t d;
    unsigned __int128 v;

    if (n != 2 || !int_ns(r, &b->last_ns) || !int_in(r, 0, EXACT, &d))
        return SL_EINVAL;
    v = (unsigned __int128)d * 1000;
    b->lo = (uint64_t)v;
    b->hi = (uint64_t)(v >> 64);
    return SL_OK;
}

static int decode_warm(struct sl__mp_reader *r, uint64_t n, const struct sl_limit *l, void *blob)
{
    struct sl__warm_state *w = blob;
    int64_t rem;
    const char *s;
    size_t len;

    if (n != 4 || !int_ns(r, &w->last_ns) || !int_ns(r, &w->next_free_ns) ||
        !int_in(r, 0, 999, &rem) || !sl__mp_str(r, &s, &len) || !limbs(s, len, &w->stored) ||
        w->stored > 2 * (uint64_t)l->warmup_ns * l->requests)
        return SL_EINVAL;
    w->next_free_ns += rem;
    return SL_OK;
}

/* [last_us, count] (fixed_window) or [last_us, c0, ..., cN] (sliding_window
 * of N sub-windows). */
static int decode_windows(struct sl__mp_reader *r, uint64_t n, const struct sl_limit *l,
                          enum kind k, void *blob)
{
    struct sl__sw_state *s = blob; /* fixed_window's is its first two fields */
    uint64_t counts = k == K_FW ? 1u : (uint64_t)(l->buckets > 1 ? l->buckets : 1) + 1;

    _Static_assert(offsetof(struct sl__fw_state, count) == offsetof(struct sl__sw_state, c),
                   "fixed_window is sliding_window's head");
    if (n != counts + 1 || !int_ns(r, &s->last_ns))
        return SL_EINVAL;
    for (uint64_t i = 0; i < counts; i++) {
        int64_t c;
        if (!int_in(r, 0, EXACT, &c))
            return SL_EINVAL;
        s->c[i] = (uint64_t)c;
    }
    return SL_OK;
}

static int decode_log(struct sl__mp_reader *r, uint64_t n, const struct sl_limit *l, void *blob)
{
    struct sl__sg_state *s = blob;
    int64_t last = INT64_MIN;

    if (n % 2 != 0)
        return SL_EINVAL;
    s->head = 0;
    s->len = 0;
    for (uint64_t i = 0; i < n; i += 2) {
        int64_t t, count;
        if (!int_ns(r, &t) || !int_in(r, 1, EXACT, &count) || t < last ||
            (uint64_t)count > l->requests - s->len)
            return SL_EINVAL;
        for (int64_t j = 0; j < count; j++)
            s->ring[s->len++] = t;
        last = t;
    }
    return SL_OK;
}

static int decode_cc(struct sl__mp_reader *r, uint64_t n, const struct sl_limit *l, void *blob,
                     int64_t *base_us)
{
    struct sl__cc_state *s = blob;
    int64_t next_k, last;

    if (n < 3 || (n - 3) % 3 != 0 || (n - 3) / 3 > l->requests || !int_in(r, 0, EXACT, base_us) ||
        !int_in(r, 0, EXACT, &next_k) || !int_in(r, -1, EXACT, &last))
        return SL_EINVAL;
    s->next_id = (uint64_t)*base_us * 1000 + (uint64_t)next_k;
    s->last_ns = last == -1 ? INT64_MIN : last * 1000;
    s->n = (n - 3) / 3;
    s->hold_ns = -1; /* not kept in Redis: a denial's retry is the lease's expiry */
    for (uint64_t i = 0; i < s->n; i++) {
        int64_t k, slots;
        if (!int_in(r, 0, EXACT, &k) || !int_ns(r, &s->leases[i].expires_ns) ||
            !int_in(r, 0, EXACT, &slots))
            return SL_EINVAL;
        s->leases[i].id = (uint64_t)*base_us * 1000 + (uint64_t)k;
        s->leases[i].slots = (uint64_t)slots;
    }
    return SL_OK;
}

int sl__mstate_decode(const struct sl_limit *l, const char *raw, size_t len, int64_t now_ns,
                      void *blob, int64_t *base_us)
{
    struct sl__mp_reader r = {(const uint8_t *)raw, (const uint8_t *)raw + len, false};
    enum kind k = kind_of(l);
    uint64_t n;
    int rc;

    /* floor(now / 1000): the creation time of a fresh concurrency state */
    *base_us = now_ns / 1000 - (now_ns % 1000 < 0);
    if (raw == NULL) {
        sl_algo_init(blob, l, now_ns);
        return SL_OK;
    }
    if (!sl__mp_array(&r, &n))
        return SL_EINVAL;
    switch (k) {
    case K_BUCKET:
        rc = decode_bucket(&r, n, blob);
        break;
    case K_WARM:
        rc = decode_warm(&r, n, l, blob);
        break;
    case K_FW:
    case K_SW:
        rc = decode_windows(&r, n, l, k, blob);
        break;
    case K_SG:
        rc = decode_log(&r, n, l, blob);
        break;
    default:
        rc = decode_cc(&r, n, l, blob, base_us);
        break;
    }
    return rc == SL_OK && !r.bad && r.p == r.end ? SL_OK : SL_EINVAL;
}

int sl__mstate_cc_leases(const char *raw, size_t len, uint64_t *n)
{
    struct sl__mp_reader r = {(const uint8_t *)raw, (const uint8_t *)raw + len, false};
    uint64_t items;

    if (raw == NULL || !sl__mp_array(&r, &items) || items < 3 || (items - 3) % 3 != 0)
        return SL_EINVAL;
    *n = (items - 3) / 3;
    return SL_OK;
}

/* ------------------------------------------------------------- encode */

/* A time in ns as whole us within the exact range. */
static bool put_us(struct sl__mp_writer *w, int64_t ns)
{
    if (ns % 1000 != 0 || !in(ns / 1000, -EXACT, EXACT))
        return false;
    sl__mp_put_int(w, ns / 1000);
    return true;
}

static bool put_count(struct sl__mp_writer *w, uint64_t v)
{
    sl__mp_put_int(w, v > (uint64_t)SAT ? SAT : (int64_t)v);
    return true;
}

static int encode_bucket(const struct sl_limit *l, const void *blob, struct sl__mp_writer *w,
                         int64_t *ttl_ns)
{
    struct sl__backlog b = *(const struct sl__backlog *)blob;
    unsigned __int128 v = ((unsigned __int128)b.hi << 64) | b.lo, d = v / 1000;

    if (v % 1000 != 0 && d < (unsigned __int128)SAT)
        return SL_ERANGE; /* not a whole number of the scripts' units */
    if (d > (unsigned __int128)SAT)
        d = (unsigned __int128)SAT;
    v = d * 1000; /* saturated as the scripts saturate it */
    b.lo = (uint64_t)v;
    b.hi = (uint64_t)(v >> 64);
    sl__mp_put_array(w, 2);
    if (!put_us(w, b.last_ns))
        return SL_ERANGE;
    sl__mp_put_int(w, (int64_t)d);
    *ttl_ns = sl__sat_sub(sl__state_whole_at(&b, l), b.last_ns);
    return SL_OK;
}

static int encode_warm(const struct sl_limit *l, const void *blob, struct sl__mp_writer *w,
                       int64_t *ttl_ns)
{
    const struct sl__warm_state *s = blob;
    int64_t free_us = s->next_free_ns / 1000 - (s->next_free_ns % 1000 < 0);
    char text[32];
    size_t len = 0;

    for (uint64_t v = s->stored; v > 0; v >>= 24) {
        int n = snprintf(text + len, sizeof(text) - len, "%s%llu", len > 0 ? "," : "",
                         (unsigned long long)(v & 0xffffff));
        len += (size_t)n;
    }
    sl__mp_put_array(w, 4);
    if (!put_us(w, s->last_ns) || !in(free_us, -EXACT, EXACT))
        return SL_ERANGE;
    sl__mp_put_int(w, free_us);
    sl__mp_put_int(w, s->next_free_ns - free_us * 1000);
    sl__mp_put_str(w, text, len);
    *ttl_ns = sl__sat_sub(sl__state_whole_at(s, l), s->last_ns);
    return SL_OK;
}

static int encode_windows(const struct sl_limit *l, const void *blob, enum kind k,
                          struct sl__mp_writer *w, int64_t *ttl_ns)
{
    const struct sl__sw_state *s = blob; /* fixed_window's is its first two fields */
    unsigned counts = k == K_FW ? 1u : (unsigned)(l->buckets > 1 ? l->buckets : 1) + 1;
    int64_t whole;

    sl__mp_put_array(w, counts + 1);
    if (!put_us(w, s->last_ns))
        return SL_ERANGE;
    for (unsigned i = 0; i < counts; i++)
        put_count(w, s->c[i] > (uint64_t)SAT ? (uint64_t)SAT : s->c[i]);
    whole = sl__state_whole_at(blob, l);
    *ttl_ns = whole == INT64_MIN ? 0 : sl__sat_sub(whole, s->last_ns);
    return SL_OK;
}

static int encode_log(const struct sl_limit *l, const void *blob, struct sl__mp_writer *w,
                      int64_t *ttl_ns)
{
    const struct sl__sg_state *s = blob;
    uint64_t runs = 0;

    for (uint32_t i = 0; i < s->len; i++)
        runs += i == 0 ||
                s->ring[(s->head + i) % l->requests] != s->ring[(s->head + i - 1) % l->requests];
    sl__mp_put_array(w, 2 * runs);
    for (uint32_t i = 0; i < s->len;) {
        int64_t t = s->ring[(s->head + i) % l->requests];
        uint32_t j = i;
        while (j < s->len && s->ring[(s->head + j) % l->requests] == t)
            j++;
        if (!put_us(w, t))
            return SL_ERANGE;
        sl__mp_put_int(w, (int64_t)(j - i));
        i = j;
    }
    *ttl_ns = s->len > 0 ? l->period_ns : 0; /* from the newest entry */
    return SL_OK;
}

static int encode_cc(const void *blob, int64_t base_us, struct sl__mp_writer *w, int64_t *ttl_ns)
{
    const struct sl__cc_state *s = blob;
    uint64_t base = (uint64_t)base_us * 1000;

    if (s->next_id < base || s->next_id - base >= (uint64_t)EXACT)
        return SL_ERANGE;
    sl__mp_put_array(w, 3 + 3 * s->n);
    sl__mp_put_int(w, base_us);
    sl__mp_put_int(w, (int64_t)(s->next_id - base));
    if (s->last_ns == INT64_MIN)
        sl__mp_put_int(w, -1);
    else if (!put_us(w, s->last_ns))
        return SL_ERANGE;
    for (uint64_t i = 0; i < s->n; i++) {
        const struct sl__cc_lease *ls = &s->leases[i];
        if (ls->id < base || ls->id - base >= (uint64_t)EXACT || !in((int64_t)ls->slots, 0, EXACT))
            return SL_ERANGE;
        sl__mp_put_int(w, (int64_t)(ls->id - base));
        if (!put_us(w, ls->expires_ns))
            return SL_ERANGE;
        sl__mp_put_int(w, (int64_t)ls->slots);
    }
    *ttl_ns = s->n == 0 || s->last_ns == INT64_MIN
                  ? 0
                  : sl__sat_sub(s->leases[s->n - 1].expires_ns, s->last_ns);
    return SL_OK;
}

int sl__mstate_encode(const struct sl_limit *l, const void *blob, int64_t base_us,
                      struct sl__mp_writer *w, int64_t *ttl_ns)
{
    enum kind k = kind_of(l);
    int rc;

    w->len = 0;
    w->full = false;
    switch (k) {
    case K_BUCKET:
        rc = encode_bucket(l, blob, w, ttl_ns);
        break;
    case K_WARM:
        rc = encode_warm(l, blob, w, ttl_ns);
        break;
    case K_FW:
    case K_SW:
        rc = encode_windows(l, blob, k, w, ttl_ns);
        break;
    case K_SG:
        rc = encode_log(l, blob, w, ttl_ns);
        break;
    default:
        rc = encode_cc(blob, base_us, w, ttl_ns);
        break;
    }
    if (rc == SL_OK && w->full)
        return SL_ENOMEM;
    if (*ttl_ns < 0)
        *ttl_ns = 0;
    return rc;
}
