/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_plan.c - build the call for one check, in the engine of the store's
 * connections (module, Function or script), and read its reply (see
 * redis_plan.h for the contract and the key format).
 *
 * What it mirrors from lib/limiter.c, and must keep mirroring: the merging
 * of identical (key, limit) pairs into one summed cost, the per-descriptor
 * cost (descriptor hits, else the request's), and the contracts §Decisions reporting (shadow
 * limits reported as allowed, ranking deny > delay > lowest remaining, the
 * longer period on a tie, no delay and no lease when denied). The
 * all-or-nothing commit itself happens inside the script.
 *
 * It does not talk to Redis, allocate, or resolve rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis_plan.h"
#include "sluice_int.h"
#include "sluice_sat.h"

/* Largest integer the script handles exactly with margin: 2^52. */
#define EXACT_MAX       (INT64_C(1) << 52)
#define LEASE_PIECE_MAX 48

void sl__redis_opts_init(struct sl__redis_opts *o)
{
    memset(o, 0, sizeof(*o));
    memcpy(o->prefix, "sluice", sizeof("sluice"));
    o->slack_ms = 1000;
    o->engine = SL__ENGINE_SCRIPT;
}

int sl__redis_cmd_format(struct sl__redis_cmd *c, char **out)
{
    return redisFormatCommandArgv(out, c->argc - c->first, c->argv + c->first,
                                  c->argvlen + c->first);
}

/* The command's head for `op` in engine `e`: argv[0..1], and where it
 * starts. The module names the op in its command; the others take it as
 * their first argument after the keys (push_fixed). */
static void put_head(struct sl__redis_cmd *c, enum sl__redis_engine e, const char *op)
{
    static const char *const module_cmd[] = {"SLUICE.CHECK", "SLUICE.PEEK", "SLUICE.REFUND",
                                             "SLUICE.RESET", "SLUICE.RELEASE"};
    static const char *const ops[] = {"check", "peek", "refund", "reset", "release"};
    size_t k = 0;

    while (k + 1 < sizeof(ops) / sizeof(ops[0]) && strcmp(ops[k], op) != 0)
        k++;
    c->first = e == SL__ENGINE_MODULE ? 1 : 0;
    if (e == SL__ENGINE_MODULE) {
        c->argv[0] = NULL;
        c->argvlen[0] = 0;
        c->argv[1] = module_cmd[k];
    } else if (e == SL__ENGINE_FUNCTION) {
        c->argv[0] = "FCALL";
        c->argv[1] = sl__redis_fn_name;
    } else {
        c->argv[0] = "EVALSHA";
        c->argv[1] = sl__redis_lua_sha;
    }
    c->argvlen[0] = c->argv[0] != NULL ? strlen(c->argv[0]) : 0;
    c->argvlen[1] = strlen(c->argv[1]);
}

/* --------------------------------------------------------- limit fields */

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ns -> whole us, or -1 when not whole. */
static int64_t whole_us(int64_t ns)
{
    return ns % 1000 == 0 ? ns / 1000 : -1;
}

static bool fits(int64_t a, int64_t b)
{
    int64_t r;
    return !__builtin_mul_overflow(a, b, &r) && r < EXACT_MAX;
}

/* token_bucket (plain), gcra, leaky_bucket: period and rate reduced by
 * their gcd; cap_n requests of capacity, und_n undelayed (leaky). */
static int bucket_fields(int64_t p_us, uint64_t requests, int64_t cap_n, int64_t und_n,
                         int64_t f[5])
{
    int64_t r, g;

    if (requests >= (uint64_t)EXACT_MAX)
        return SL_ERANGE;
    r = (int64_t)requests;
    g = gcd64(p_us, r);
    f[0] = 0;
    f[1] = p_us / g;
    f[2] = r / g;
    f[3] = cap_n;
    f[4] = und_n;
    /* capacity * p exact; 1000 * (D mod r) exact (store/redis/lua/00_prelude.lua ns_ceil). */
    if (!fits(cap_n + 1, f[1]) || f[2] >= (INT64_C(1) << 42))
        return SL_ERANGE;
    return SL_OK;
}

int sl__redis_limit_fields(const struct sl_limit *l, int64_t f[5])
{
    int64_t p_us = l->algo == SL_ALGO_CONCURRENCY ? 0 : whole_us(l->period_ns);
    int64_t burst = l->burst < 0 ? 0 : l->burst;
    int64_t req = sl__sat_i64(l->requests);

    memset(f, 0, 5 * sizeof(f[0]));
    if (p_us < 0 || whole_us(l->min_interval_ns) < 0 || whole_us(l->warmup_ns) < 0 ||
        whole_us(l->lease_ns) < 0 || req >= EXACT_MAX)
        return SL_ERANGE;
    switch (l->algo) {
    case SL_ALGO_TOKEN_BUCKET:
        if (l->warmup_ns > 0) {
            f[0] = 1;
            f[1] = p_us;
            f[2] = req;
            f[3] = l->warmup_ns / 1000;
            return fits(f[3], 1000) && fits(p_us, 2000) ? SL_OK : SL_ERANGE;
        }
        return bucket_fields(p_us, l->requests, l->burst < 0 ? req : l->burst, 0, f);
    case SL_ALGO_GCRA:
        return bucket_fields(p_us, l->requests, burst + 1, 0, f);
    case SL_ALGO_LEAKY_BUCKET:
        return bucket_fields(p_us, l->requests, burst + 1, (l->nodelay ? burst : l->delay) + 1, f);
    case SL_ALGO_SLIDING_WINDOW: /* c: buckets N; each sub-window whole us */
        f[1] = p_us;
        f[2] = req;
        f[3] = l->buckets > 1 ? l->buckets : 1;
        return p_us % f[3] == 0 && fits(p_us, 2) ? SL_OK : SL_ERANGE;
    case SL_ALGO_FIXED_WINDOW: /* large products go through big integers */
    case SL_ALGO_SLIDING_LOG:
        f[1] = p_us;
        f[2] = req;
        f[3] = l->min_interval_ns / 1000;
        return fits(p_us, 2) && fits(f[3], 2) ? SL_OK : SL_ERANGE;
    case SL_ALGO_CONCURRENCY:
        f[1] = req;
        f[2] = l->lease_ns / 1000;
        return fits(f[2], 1000) ? SL_OK : SL_ERANGE;
    default:
        return SL_EINVAL;
    }
}

/* ---------------------------------------------------------------- arena */

static char *arena_put(struct sl__redis_cmd *c, const void *p, size_t len)
{
    char *at;

    if (len > SL__REDIS_ARENA - c->used)
        return NULL;
    at = c->arena + c->used;
    memcpy(at, p, len);
    c->used += len;
    return at;
}

static int push(struct sl__redis_cmd *c, const char *p, size_t len)
{
    if (p == NULL || c->argc >= SL__REDIS_ARGV_MAX)
        return SL_ETOOBIG;
    c->argv[c->argc] = p;
    c->argvlen[c->argc] = len;
    c->argc++;
    return SL_OK;
}

static int push_i64(struct sl__redis_cmd *c, int64_t v)
{
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "%lld", (long long)v);

    return push(c, arena_put(c, buf, (size_t)len), (size_t)len);
}

static int push_str(struct sl__redis_cmd *c, const char *s)
{
    size_t len = strlen(s);
    return push(c, arena_put(c, s, len), len);
}

/* Append `len` bytes escaped (see redis_plan.h). */
static bool put_escaped(struct sl__redis_cmd *c, const char *p, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";

    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        bool plain = ch >= '!' && ch <= '~' && ch != ':' && ch != '{' && ch != '}' && ch != '%';
        char esc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
        if (arena_put(c, plain ? (const char *)&ch : esc, plain ? 1 : 3) == NULL)
            return false;
    }
    return true;
}

/* A share_threshold rule's pattern, when the first entry of a match's
 * counter key (as lib/rules/match.c writes it: 'd' domain, then 'k' key
 * and 'v' value - or 'p' the rule's pattern for share_threshold - each
 * with a 16-bit length) is one: the hash tag is then made of the pattern,
 * so that every request value the rule shares one counter for lands on the
 * same key. False for every other match (the tag takes the request's first
 * entry), including ad hoc ones whose key is not in that format. */
static bool shared_pattern(const struct sl_match *m, struct sl_str *v)
{
    size_t at = 0, n = 0;
    char tags[3];
    struct sl_str f[3];

    while (n < 3 && at + 3 <= m->key_len) {
        size_t len = (size_t)(unsigned char)m->key[at + 1] << 8 | (unsigned char)m->key[at + 2];
        if (at + 3 + len > m->key_len)
            return false;
        tags[n] = m->key[at];
        f[n++] = (struct sl_str){m->key + at + 3, len};
        at += 3 + len;
    }
    if (n < 3 || tags[0] != 'd' || tags[1] != 'k' || tags[2] != 'p')
        return false;
    *v = f[2];
    return true;
}

/* "<prefix>:v1:{<tag>}:<key>:" in the arena; returns its start or NULL. */
static const char *key_base(const struct sl__redis_opts *o, const struct sl_request *req, size_t i,
                            const struct sl_match *m, struct sl__redis_cmd *c)
{
    size_t start = c->used;
    bool ok = put_escaped(c, o->prefix, strlen(o->prefix)) && arena_put(c, ":v1:{", 5) &&
              put_escaped(c, req->domain.p, req->domain.len);

    if (ok && req->descriptors != NULL && i < req->n_descriptors &&
        req->descriptors[i].n_entries > 0) {
        const struct sl_entry *e = &req->descriptors[i].entries[0];
        struct sl_str v = e->value;
        shared_pattern(m, &v);
        ok = arena_put(c, "/", 1) && put_escaped(c, e->key.p, e->key.len) && arena_put(c, "=", 1) &&
             put_escaped(c, v.p, v.len);
    }
    ok = ok && arena_put(c, "}:", 2) && put_escaped(c, m->key, m->key_len) && arena_put(c, ":", 1);
    return ok ? c->arena + start : NULL;
}

/* ---------------------------------------------------------------- build */

static uint64_t descriptor_cost(const struct sl_request *req, size_t i)
{
    if (req->descriptors != NULL && i < req->n_descriptors && req->descriptors[i].hits >= 0)
        return (uint64_t)req->descriptors[i].hits;
    return req->hits;
}

static int validate(const struct sl_request *req, const struct sl_match *m, size_t n)
{
    size_t leases = 0;

    if (req == NULL || (n > 0 && m == NULL))
        return SL_EINVAL;
    if (n > SL_MAX_DESCRIPTORS)
        return SL_ETOOBIG;
    for (size_t i = 0; i < n; i++) {
        if (m[i].n_limits > SL_MAX_LIMITS || m[i].key_len > SL_KEY_MAX)
            return SL_ETOOBIG;
        for (size_t j = 0; !m[i].unlimited && j < m[i].n_limits; j++) {
            if (m[i].limits[j] == NULL)
                return SL_EINVAL;
            leases += m[i].limits[j]->algo == SL_ALGO_CONCURRENCY;
        }
    }
    return leases > SL_MAX_LEASES ? SL_ETOOBIG : SL_OK;
}

struct item_acc {
    uint64_t cost;
    const struct sl_limit *l;
};

/* Add descriptor i's limits as slots, merging an identical (key, limit)
 * into an earlier item. Keys go to argv[3 + item]. */
static int add_descriptor(const struct sl__redis_opts *o, const struct sl__redis_plan_in *in,
                          size_t i, struct sl__redis_plan *p, struct sl__redis_cmd *c,
                          struct item_acc *acc)
{
    const struct sl_request *req = in->req;
    const struct sl_match *m = in->m;
    const char *base;
    size_t base_len;

    p->first[i] = (uint16_t)p->n_slots;
    p->count[i] = 0;
    if (m[i].unlimited || m[i].n_limits == 0)
        return SL_OK;
    base = key_base(o, req, i, &m[i], c);
    if (base == NULL)
        return SL_ETOOBIG;
    base_len = (size_t)(c->arena + c->used - base);
    for (size_t j = 0; j < m[i].n_limits; j++) {
        const struct sl_limit *l = m[i].limits[j];
        char id[17];
        size_t k, key_len = base_len + 16;
        const char *key;

        snprintf(id, sizeof(id), "%016llx", (unsigned long long)l->id);
        key = j == 0 ? base : arena_put(c, base, base_len);
        if (key == NULL || arena_put(c, id, 16) == NULL)
            return SL_ETOOBIG;
        for (k = 0; k < p->n_items; k++) {
            if (acc[k].l->id == l->id && c->argvlen[3 + k] == key_len &&
                memcmp(c->argv[3 + k], key, key_len) == 0)
                break;
        }
        if (k == p->n_items) {
            if (push(c, key, key_len) != SL_OK)
                return SL_ETOOBIG;
            acc[k].l = l;
            acc[k].cost = 0;
            p->item_l[k] = l;
            p->n_items++;
        } else {
            c->used -= j == 0 ? 0 : key_len; /* the copy is not needed */
        }
        acc[k].cost = sl__sat_addu(acc[k].cost, descriptor_cost(req, i));
        p->slots[p->n_slots].l = l;
        p->slots[p->n_slots].desc = (uint16_t)i;
        p->slots[p->n_slots].item = (uint16_t)k;
        p->n_slots++;
        p->count[i]++;
    }
    return SL_OK;
}

static const char *const op_names[] = {"check", "peek", "refund", "reset"};

/* The op (not for the module: its command names it), now and the
 * settings "<slack>,<prefix>" (store/redis/lua/00_prelude.lua). The
 * settings are the same call after call: the Functions library reads them
 * once. */
static int push_fixed(const struct sl__redis_opts *o, const char *op, int64_t now_ns,
                      struct sl__redis_cmd *c)
{
    char conf[32];
    int rc = o->engine == SL__ENGINE_MODULE ? SL_OK : push_str(c, op);
    int len = snprintf(conf, sizeof(conf), "%lld,", (long long)o->slack_ms);
    const char *at;

    if (rc == SL_OK) /* whole microseconds, rounded down (contracts §Time) */
        rc = o->redis_clock ? push_str(c, "redis")
                            : push_i64(c, now_ns / 1000 - (now_ns % 1000 < 0));
    at = arena_put(c, conf, (size_t)len);
    c->prefix_at = c->argc;
    if (rc == SL_OK && (at == NULL || arena_put(c, o->prefix, strlen(o->prefix)) == NULL))
        rc = SL_ETOOBIG;
    if (rc == SL_OK)
        rc = push(c, at, (size_t)len + strlen(o->prefix));
    return rc;
}

/* One item as one argument: "algo,cost,cr,shadow,warm,a,b,c,d". */
static int push_item(struct sl__redis_cmd *c, const struct item_acc *a, enum sl__redis_op op)
{
    int64_t f[5];
    char buf[160];
    int rc = sl__redis_limit_fields(a->l, f), len;
    uint64_t cost = op == SL__REDIS_PEEK || op == SL__REDIS_RESET ? 0 : a->cost;

    if (rc != SL_OK)
        return rc;
    if (cost >= SL__REDIS_COST_MAX)
        return SL_ERANGE;
    len = snprintf(buf, sizeof(buf), "%d,%llu,%d,%d,%lld,%lld,%lld,%lld,%lld", (int)a->l->algo,
                   (unsigned long long)cost, a->l->count_rejected, a->l->shadow, (long long)f[0],
                   (long long)f[1], (long long)f[2], (long long)f[3], (long long)f[4]);
    return push(c, arena_put(c, buf, (size_t)len), (size_t)len);
}

int sl__redis_cmd_tag_prefix(struct sl__redis_cmd *c, const char *tag)
{
    const char *conf = c->argv[c->prefix_at];
    size_t len = c->argvlen[c->prefix_at], start = c->used;
    bool ok = arena_put(c, conf, len) && arena_put(c, "{", 1) && arena_put(c, tag, strlen(tag)) &&
              arena_put(c, "}", 1);

    if (!ok)
        return SL_ETOOBIG;
    c->argv[c->prefix_at] = c->arena + start;
    c->argvlen[c->prefix_at] = c->used - start;
    return SL_OK;
}

int sl__redis_plan_build(const struct sl__redis_opts *o, const struct sl__redis_plan_in *in,
                         struct sl__redis_plan *plan, struct sl__redis_cmd *cmd)
{
    struct item_acc acc[SL__REDIS_MAX_ITEMS];
    enum sl__redis_op op = in->op;
    const struct sl_request *req = in->req;
    size_t n = in->n;
    int rc = validate(req, in->m, n);

    if (rc != SL_OK)
        return rc;
    plan->n_desc = n;
    plan->n_slots = 0;
    plan->n_items = 0;
    cmd->used = 0;
    put_head(cmd, o->engine, op_names[op]);
    cmd->argc = SL__REDIS_KEY0; /* argv[0..1]: the head; argv[2]: numkeys, below */
    for (size_t i = 0; rc == SL_OK && i < n; i++)
        rc = add_descriptor(o, in, i, plan, cmd, acc);
    if (rc == SL_OK)
        rc = push_fixed(o, op_names[op], req->now_ns, cmd);
    for (size_t k = 0; rc == SL_OK && k < plan->n_items; k++) {
        plan->item_cost[k] = op == SL__REDIS_PEEK || op == SL__REDIS_RESET ? 0 : acc[k].cost;
        rc = push_item(cmd, &acc[k], op);
    }
    if (rc == SL_OK) {
        char buf[8];
        int len = snprintf(buf, sizeof(buf), "%zu", plan->n_items);
        cmd->argv[2] = arena_put(cmd, buf, (size_t)len);
        cmd->argvlen[2] = (size_t)len;
        rc = cmd->argv[2] == NULL ? SL_ETOOBIG : SL_OK;
    }
    return rc;
}

/* ---------------------------------------------------------------- reply */

bool sl__redis_is_noscript(const struct redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR && r->str != NULL &&
           (strncmp(r->str, "NOSCRIPT", 8) == 0 || strcmp(r->str, "ERR Function not found") == 0);
}

bool sl__redis_is_nomodule(const struct redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR && r->str != NULL &&
           strncmp(r->str, "ERR unknown command", 19) == 0 && strstr(r->str, "SLUICE.") != NULL;
}

/* An integer element, or a decimal string (the script sends durations
 * beyond 2^53 ns as strings to keep them exact). */
static bool int_at(const redisReply *r, size_t i, int64_t *out)
{
    const redisReply *e;
    char *end;

    if (i >= r->elements)
        return false;
    e = r->element[i];
    if (e->type == REDIS_REPLY_INTEGER) {
        *out = e->integer;
        return true;
    }
    if (e->type != REDIS_REPLY_STRING || e->len == 0 || e->len > 20)
        return false;
    *out = strtoll(e->str, &end, 10);
    return end == e->str + e->len;
}

/* Read item k's decision (6 elements from 1 + 6k). */
static bool read_item(const redisReply *r, size_t k, struct sl_decision *d, const char **lease)
{
    size_t at = 1 + 6 * k;
    int64_t v;
    const redisReply *ls;

    memset(d, 0, sizeof(*d));
    if (!int_at(r, at, &v) || v < SL_ALLOW || v > SL_DENY || !int_at(r, at + 1, &d->remaining) ||
        !int_at(r, at + 2, &d->reset_ns) || !int_at(r, at + 3, &d->retry_after_ns) ||
        !int_at(r, at + 4, &d->delay_ns) || at + 5 >= r->elements)
        return false;
    d->verdict = (enum sl_verdict)v;
    ls = r->element[at + 5];
    if (ls->type != REDIS_REPLY_STRING || ls->len >= LEASE_PIECE_MAX)
        return false;
    *lease = ls->str;
    if (ls->len > 0) {
        const char *dash = strchr(ls->str, '-');
        d->lease = dash != NULL ? strtoull(dash + 1, NULL, 10) : 0;
        if (d->lease == 0)
            return false;
    }
    return true;
}

static void append_lease(char *out, const char *piece)
{
    size_t len = strlen(out), plen = strlen(piece);

    if (plen == 0 || len + plen + 2 > SL_LEASE_MAX)
        return;
    if (len > 0)
        out[len++] = '.';
    memcpy(out + len, piece, plen + 1);
}

int sl__redis_plan_result(const struct sl__redis_plan *plan, const struct redisReply *r,
                          struct sl_result *res, int64_t *now_us, struct sl_decision *items)
{
    struct sl_decision d[SL__REDIS_MAX_ITEMS];
    const char *lease[SL__REDIS_MAX_ITEMS];
    int64_t now;

    if (r == NULL)
        return SL_EINVAL;
    if (r->type == REDIS_REPLY_ERROR)
        return r->str != NULL && strstr(r->str, "SLUICE_RANGE") != NULL ? SL_ERANGE : SL_EINVAL;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 + 6 * plan->n_items || !int_at(r, 0, &now))
        return SL_EINVAL;
    for (size_t k = 0; k < plan->n_items; k++)
        if (!read_item(r, k, &d[k], &lease[k]))
            return SL_EINVAL;
    if (now_us != NULL)
        *now_us = now;
    if (items != NULL)
        memcpy(items, d, sizeof(d[0]) * plan->n_items);
    res->verdict = SL_ALLOW;
    res->delay_ns = 0;
    res->n_statuses = plan->n_desc;
    res->lease[0] = '\0';
    for (size_t i = 0; i < plan->n_desc; i++) {
        struct sl_status *st = &res->statuses[i];
        memset(st, 0, sizeof(*st));
        st->d.verdict = SL_ALLOW;
        for (size_t s = plan->first[i]; s < (size_t)plan->first[i] + plan->count[i]; s++) {
            const struct sl__redis_slot *sl = &plan->slots[s];
            const struct sl_limit *pl = plan->item_l[sl->item];
            struct sl_decision dd = sl__report_shadow(d[sl->item], pl, &st->shadow_denied);
            dd.quota = sl_limit_quota(pl);
            if (st->limit == NULL || sl__report_ranks_above(&dd, pl, &st->d, st->limit)) {
                st->d = dd;
                st->limit = sl->l;
            }
        }
        if (st->d.verdict > res->verdict)
            res->verdict = st->d.verdict;
        if (st->d.verdict == SL_DELAY && st->d.delay_ns > res->delay_ns)
            res->delay_ns = st->d.delay_ns;
    }
    if (res->verdict == SL_DENY) {
        res->delay_ns = 0;
        return SL_OK;
    }
    for (size_t k = 0; k < plan->n_items; k++)
        append_lease(res->lease, lease[k]);
    return SL_OK;
}

/* -------------------------------------------------------------- release */

/* Length of the "<h>-<id>" part of a piece "<h>-<id>[-<T>]" (T: 1..4 of
 * [0-9a-z], the cluster slot tag, see store/redis/lua/90_main.lua), or 0. */
static size_t lease_piece_ok(const char *p, size_t len)
{
    size_t dash = 16, end = len;

    if (len < 18 || len > LEASE_PIECE_MAX || p[dash] != '-')
        return 0;
    for (size_t i = len; i > dash + 1; i--)
        if (p[i - 1] == '-') {
            end = i - 1;
            break;
        }
    if (end < len && (len - end - 1 < 1 || len - end - 1 > 4))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = p[i];
        bool hex = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
        bool tag = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z');
        if (i == dash || i == end ? ch != '-'
                                  : (i < dash  ? !hex
                                     : i < end ? !(ch >= '0' && ch <= '9')
                                               : !tag))
            return 0;
    }
    return end > dash + 1 ? end : 0;
}

/* The lease index key of piece "<h>-<id>[-<T>]" ("<id>" ends at `end`):
 * "<prefix>:v1:lease:<h>:<id>", or "<prefix>{T}:v1:lease:<h>:<id>". */
static int push_index_key(struct sl__redis_cmd *c, const struct sl__redis_opts *o, const char *p,
                          size_t len, size_t end)
{
    size_t start = c->used;
    bool ok = arena_put(c, o->prefix, strlen(o->prefix));

    if (ok && end < len)
        ok = arena_put(c, "{", 1) && arena_put(c, p + end + 1, len - end - 1) &&
             arena_put(c, "}", 1);
    ok = ok && arena_put(c, ":v1:lease:", 10) && arena_put(c, p, 16) && arena_put(c, ":", 1) &&
         arena_put(c, p + 17, end - 17);
    return ok ? push(c, c->arena + start, c->used - start) : SL_ETOOBIG;
}

int sl__redis_release_build(const struct sl__redis_opts *o, const char *lease, size_t len,
                            int64_t now_ns, struct sl__redis_cmd *cmd)
{
    const char *piece[SL_MAX_LEASES];
    size_t plen[SL_MAX_LEASES], pend[SL_MAX_LEASES], n = 0, at = 0;
    int rc = SL_OK;

    if (lease == NULL || len == 0 || len >= SL_LEASE_MAX)
        return SL_EINVAL;
    while (at <= len) {
        const char *dot = memchr(lease + at, '.', len - at);
        size_t end = dot != NULL ? (size_t)(dot - lease) : len;
        if (n == SL_MAX_LEASES || (pend[n] = lease_piece_ok(lease + at, end - at)) == 0)
            return SL_EINVAL;
        piece[n] = lease + at;
        plen[n++] = end - at;
        at = end + 1;
    }
    cmd->used = 0;
    put_head(cmd, o->engine, "release");
    cmd->argc = 2;
    rc = push_i64(cmd, (int64_t)n);
    for (size_t i = 0; rc == SL_OK && i < n; i++)
        rc = push_index_key(cmd, o, piece[i], plen[i], pend[i]);
    if (rc == SL_OK)
        rc = push_fixed(o, "release", now_ns, cmd);
    for (size_t i = 0; rc == SL_OK && i < n; i++)
        rc = push(cmd, arena_put(cmd, piece[i] + 17, pend[i] - 17), pend[i] - 17);
    return rc;
}

int sl__redis_release_result(const struct redisReply *r)
{
    int64_t released;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !int_at(r, 1, &released))
        return SL_EINVAL;
    return released > 0 ? SL_OK : SL_ENOENT;
}
