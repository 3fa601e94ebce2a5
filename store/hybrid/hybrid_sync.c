/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * hybrid_sync.c - the hybrid store's syncs: one Redis link per worker
 * (link/rlink.h: the worker's loop, TLS and AUTH as configured), the
 * sync script loaded on it, and every sync_interval one script call per
 * batch of kept keys, all sent at once (pipelined, one write), each
 * adding its keys' deltas and returning their fleet totals.
 *
 * A lost call (timeout, error reply, connection gone) puts its deltas back
 * as pending: they go with the next sync once Redis answers again. A call
 * that timed out may still have been executed by Redis; its deltas are
 * then counted twice (never fewer: the error is on the side of denying).
 * A timeout drops the connection (freeing the calls stuck on it) and it
 * reconnects with the links' backoff (sl__rbackoff: from 50 ms doubling
 * to store.redis.backoff_max, each wait drawn in its upper half).
 *
 * A reset is one more script call on the same connection (not waited
 * for): the key's counters deleted and its reset marker set, which every
 * sync reads back with the counters (hybrid.c acts on it).
 *
 * When the store is freed, kept deltas are pushed once more over a
 * blocking connection (the blocking Redis link, link/rlink.h: TLS and
 * AUTH as configured), bounded by 1 s (or store.hybrid.timeout if longer)
 * per step, so a node that restarts loses nothing it had recorded while
 * Redis was up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "hybrid_int.h"
#include "rlink.h"
#include "store_log.h"

/*
 * KEYS[1..n]: the counters, KEYS[n+i]: counter i's reset marker;
 * ARGV[2i-1]: counter i's delta (a decimal), ARGV[2i]: its expiry in ms. A
 * delta of 0 only reads. Returns, per counter, its total and the time of
 * the latest reset of its key (ms; 0: none, or not a number: a value
 * written there by something else must not stop every sync).
 */
static const char sync_lua[] =
    "local n, r = #KEYS / 2, {}\n"
    "for i = 1, n do\n"
    "  local d = ARGV[2 * i - 1]\n"
    "  if d ~= '0' then\n"
    "    r[2 * i - 1] = redis.call('INCRBY', KEYS[i], d)\n"
    "    redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])\n"
    "  else\n"
    "    r[2 * i - 1] = tonumber(redis.call('GET', KEYS[i]) or '0') or 0\n"
    "  end\n"
    "  r[2 * i] = tonumber(redis.call('GET', KEYS[n + i]) or '0') or 0\n"
    "end\n"
    "return r\n";

/*
 * A reset of one key and limit for the whole fleet. KEYS[1]: its reset
 * marker, KEYS[2..]: its counters; ARGV[1]: the reset's time (ms), ARGV[2]:
 * how long the marker lives (ms: as long as a counter may). The counters
 * are deleted, and the marker keeps the latest reset's time.
 */
static const char reset_lua[] = "if #KEYS > 1 then redis.call('DEL', unpack(KEYS, 2)) end\n"
                                "local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0\n"
                                "if tonumber(ARGV[1]) > cur then\n"
                                "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                                "end\n"
                                "return 1\n";

/* Bytes of arguments one key takes at most: key, its marker, delta, ttl. */
#define KEY_BYTES (SL__REDIS_PREFIX_MAX + 64)
#define ARG_BYTES (2 * KEY_BYTES + 24 + 24)

static void start(struct sl__hystore *st);

static void set_conn(struct sl__hystore *st, enum sl__hy_conn c)
{
    st->conn = c;
    SL__HY_SET(st, connected, c == SL__HY_READY);
    if (c == SL__HY_READY)
        SL__HY_SET(st, ever_connected, true);
}

static void finish_call(struct sl__hy_call *c)
{
    struct sl__hystore *st = c->st;

    c->busy = false;
    uv_timer_stop(&c->timer);
    st->calls_out--;
    SL__HY_SET(st, in_flight, st->calls_out);
}

static void lose_call(struct sl__hy_call *c)
{
    struct sl__hystore *st = c->st;

    for (unsigned i = 0; i < c->n; i++)
        sl__hy_restore(st, &st->ents[c->idx[i]]);
    SL__HY_CNT(st, sync_failures, 1);
    finish_call(c);
}

static void on_conn_timer(uv_timer_t *t);

/* This worker's Redis stopped answering (why) or answers again: logged as
 * the Redis store logs an unreachable node, once per process (the first
 * worker to see it, the last to see it end) when the stores share state. */
static void stall_edge(struct sl__hystore *st, bool bad, const char *why)
{
    const struct sl__cnode *m = &st->master;
    bool line = true;

    if (bad == st->stalled)
        return;
    st->stalled = bad;
    if (st->shared != NULL)
        line = bad ? atomic_fetch_add(&st->shared->stalled, 1) == 0
                   : atomic_fetch_sub(&st->shared->stalled, 1) == 1;
    if (line && bad)
        sl__store_log(SL__SLOG_WARN, "store.hybrid_stalled",
                      "hybrid: redis %s:%d %s: decisions stay local, their counts are kept "
                      "and pushed once it answers",
                      m->host, m->port, why);
    else if (line)
        sl__store_log(SL__SLOG_INFO, "store.hybrid_back", "hybrid: redis %s:%d answers again",
                      m->host, m->port);
}

static void retry_later(struct sl__hystore *st)
{
    uv_timer_start(&st->conn_timer, on_conn_timer, (uint64_t)sl__rbackoff_next(&st->backoff), 0);
}

static int64_t probe_ms(const struct sl__hystore *st)
{
    int64_t t = 4 * st->cfg.timeout_ms;
    return t < 200 ? 200 : t;
}

/* The time a connection in progress has to become ready. */
static void probe(struct sl__hystore *st)
{
    uv_timer_start(&st->conn_timer, on_conn_timer, (uint64_t)probe_ms(st), 0);
}

/* Sentinel: give up on the question out (its NULL reply is no answer)
 * and ask the next sentinel the next time. */
static void drop_ask(struct sl__hystore *st)
{
    st->asking = false;
    st->sentinel = (st->sentinel + 1) % st->n_sentinels;
    sl__rlink_drop(st->ask);
}

/* Close the connection now (or give up on the question to a sentinel):
 * every call on it comes back lost. */
static void drop(struct sl__hystore *st)
{
    bool asked = st->asking;

    if (st->watching) {
        st->watching = false;
        sl__rlink_drop(st->ask);
    }
    if (asked)
        drop_ask(st);
    if (!asked && (st->link == NULL || !sl__rlink_is_busy(st->link)))
        return;
    set_conn(st, SL__HY_DOWN);
    st->sha[0] = '\0';
    for (unsigned i = 0; i < st->n_calls; i++)
        if (st->calls[i].busy)
            lose_call(&st->calls[i]);
    if (!st->closing)
        retry_later(st);
    sl__rlink_drop(st->link); /* the NULL replies find nothing busy */
}

static void on_conn_timer(uv_timer_t *t)
{
    struct sl__hystore *st = t->data;

    if (st->closing)
        return;
    if (st->conn == SL__HY_CONNECTING) {
        stall_edge(st, true,
                   st->asking ? "has no master a sentinel names in time"
                              : "does not answer a new connection");
        drop(st); /* no answer in time (a frozen Redis accepts, then says nothing) */
    } else if (st->conn == SL__HY_DOWN)
        start(st);
}

static void on_loaded(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hystore *st = priv;

    if (r == NULL || st->closing || l != st->link)
        return;
    if (r->type != REDIS_REPLY_STRING || r->len != 40) {
        drop(st);
        return;
    }
    memcpy(st->sha, r->str, 40);
    st->sha[40] = '\0';
    sl__rbackoff_reset(&st->backoff);
    uv_timer_stop(&st->conn_timer);
    set_conn(st, SL__HY_READY);
    stall_edge(st, false, "");
}

static void on_up(struct sl__rlink *l, void *arg)
{
    (void)l;
    (void)arg; /* ready once the script is loaded (on_loaded) */
}

/* Lost, never made, or AUTH refused: the calls on it have had their NULL
 * replies (lost) already. */
static void on_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__hystore *st = arg;

    (void)l;
    (void)why;
    set_conn(st, SL__HY_DOWN);
    st->sha[0] = '\0';
    if (!st->closing)
        retry_later(st);
}

static const struct sl__rlink_events link_events = {.up = on_up, .down = on_down};

/* Sentinel: ROLE's reply on a new connection. A Redis that says it is not
 * a master (a demoted one the sentinels have not caught up with) is left,
 * and the sentinels are asked again; a refused ROLE (an ACL without
 * +role) is no proof either way: the -READONLY of a sync would be. */
static void on_role(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hystore *st = priv;

    if (r == NULL || st->closing || l != st->link)
        return;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") != 0)
        drop(st);
}

static void connect_at(struct sl__hystore *st, const char *host, int port)
{
    if (sl__rlink_connect(st->link, host, port) != SL_OK) {
        set_conn(st, SL__HY_DOWN);
        retry_later(st);
        return;
    }
    set_conn(st, SL__HY_CONNECTING);
    /* after the link's AUTH; the script's reply says the connection is ready */
    if ((st->n_sentinels > 0 && sl__rlink_command(st->link, on_role, st, "ROLE") != SL_OK) ||
        sl__rlink_command(st->link, on_loaded, st, "SCRIPT LOAD %s", sync_lua) != SL_OK) {
        drop(st);
        return;
    }
    probe(st);
}

/* A sentinel's answer: sync with the master it names, or (no answer, an
 * unknown name) ask the next one after the backoff. */
static void on_master(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hystore *st = priv;
    struct sl__cnode m;

    if (st->closing || !st->asking || l != st->ask)
        return;
    if (!sl__rlink_master_addr(r, m.host, sizeof(m.host), &m.port)) {
        drop(st); /* the next sentinel, after the backoff */
        return;
    }
    st->asking = false;
    sl__rlink_drop(st->ask); /* closed once this callback returns */
    st->master = m;
    connect_at(st, m.host, m.port);
}

/* The sentinel's link went down before it answered (its NULL reply came
 * first and handled it), or could not be made. */
static void on_ask_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__hystore *st = arg;

    (void)why;
    if (st->closing || l != st->ask)
        return;
    if (st->watching) { /* the next question goes to the next sentinel */
        st->watching = false;
        st->sentinel = (st->sentinel + 1) % st->n_sentinels;
    } else if (st->asking)
        drop(st);
}

/* A sentinel's answer while synced: still the master synced with, or a
 * failover made another the master: leave this one (the calls out come
 * back lost, their deltas pending) and sync with the one it names. */
static void on_watch_answer(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hystore *st = priv;
    struct sl__cnode m;

    if (st->closing || !st->watching || l != st->ask)
        return;
    st->watching = false;
    sl__rlink_drop(st->ask); /* closed once this callback returns */
    if (!sl__rlink_master_addr(r, m.host, sizeof(m.host), &m.port)) {
        st->sentinel = (st->sentinel + 1) % st->n_sentinels;
        return; /* no answer: the sync itself says whether the master is fine */
    }
    if (st->conn != SL__HY_READY ||
        (strcmp(m.host, st->master.host) == 0 && m.port == st->master.port))
        return;
    stall_edge(st, true, "is not the master the sentinels name any more");
    drop(st);
}

static void on_watch(uv_timer_t *t)
{
    struct sl__hystore *st = t->data;
    const struct sl__cnode *s = &st->sentinels[st->sentinel];

    if (st->closing || st->asking)
        return;
    if (st->watching) { /* the last question was not answered: the next sentinel */
        st->watching = false;
        st->sentinel = (st->sentinel + 1) % st->n_sentinels;
        sl__rlink_drop(st->ask);
        return;
    }
    if (st->conn != SL__HY_READY)
        return;
    if (sl__rlink_ask_master(st->ask, s->host, s->port, st->cfg.redis->master_name, on_watch_answer,
                             st) == SL_OK)
        st->watching = true;
    else
        st->sentinel = (st->sentinel + 1) % st->n_sentinels;
}

static const struct sl__rlink_events ask_events = {.up = on_up, .down = on_ask_down};

static void start(struct sl__hystore *st)
{
    const struct sl__cnode *s;

    if (st->n_sentinels == 0) {
        connect_at(st, st->master.host, st->master.port);
        return;
    }
    s = &st->sentinels[st->sentinel];
    set_conn(st, SL__HY_CONNECTING);
    if (sl__rlink_ask_master(st->ask, s->host, s->port, st->cfg.redis->master_name, on_master,
                             st) != SL_OK) {
        st->sentinel = (st->sentinel + 1) % st->n_sentinels;
        set_conn(st, SL__HY_DOWN);
        retry_later(st);
        return;
    }
    st->asking = true;
    probe(st);
}

int sl__hy_sync_init(struct sl__hystore *st)
{
    const struct sl__redis_config *rc = st->cfg.redis;
    unsigned batch = st->cfg.batch;

    st->n_calls = (st->cfg.max_keys + batch - 1) / batch;
    st->calls = calloc(st->n_calls, sizeof(*st->calls));
    st->argv = calloc(3 + 4 * (size_t)batch, sizeof(*st->argv));
    st->argvlen = calloc(3 + 4 * (size_t)batch, sizeof(*st->argvlen));
    st->argbuf_cap = 64 + (size_t)batch * ARG_BYTES;
    st->argbuf = malloc(st->argbuf_cap);
    if (st->calls == NULL || st->argv == NULL || st->argvlen == NULL || st->argbuf == NULL)
        return SL_ENOMEM;
    for (unsigned i = 0; i < st->n_calls; i++) {
        struct sl__hy_call *c = &st->calls[i];
        c->st = st;
        c->idx = calloc(batch, sizeof(*c->idx));
        if (c->idx == NULL)
            return SL_ENOMEM;
        uv_timer_init(st->loop, &c->timer);
        uv_unref((uv_handle_t *)&c->timer);
        c->timer.data = c;
    }
    uv_timer_init(st->loop, &st->conn_timer);
    uv_unref((uv_handle_t *)&st->conn_timer);
    st->conn_timer.data = st;
    sl__rbackoff_init(&st->backoff, rc->backoff_min_ms, rc->backoff_max_ms);
    /* No connect timeout of the link's own: the probe (probe_ms) bounds
     * the whole of it, script load included, and says the stall. */
    st->link_conf.user = rc->user;
    st->link_conf.password = rc->password;
    if (rc->tls.on) {
        /* Files that do not make a context (sluiced -t says why) fail
         * each connection until they are fixed: read again then. */
        (void)sl__rlink_tls_init(&st->tls, &rc->tls);
        st->link_conf.tls = &st->tls;
    }
    st->group = sl__rlink_group_new(st->loop);
    if (st->group == NULL)
        return SL_ENOMEM;
    st->link = sl__rlink_new(st->group, &st->link_conf, &link_events, st);
    if (st->link == NULL)
        return SL_ENOMEM;
    snprintf(st->master.host, sizeof(st->master.host), "%s", rc->host);
    st->master.port = rc->port;
    if (rc->sentinels[0] != '\0') {
        int n = sl__redis_parse_addrs(rc->sentinels, st->sentinels, SL__SENTINEL_MAX);
        if (n <= 0)
            return SL_EINVAL; /* the configuration's check refused it already */
        st->n_sentinels = (unsigned)n;
        st->master.port = 0; /* none named yet */
        st->ask_conf.tls = st->link_conf.tls;
        st->ask = sl__rlink_new(st->group, &st->ask_conf, &ask_events, st);
        if (st->ask == NULL)
            return SL_ENOMEM;
        uv_timer_init(st->loop, &st->watch);
        uv_unref((uv_handle_t *)&st->watch);
        st->watch.data = st;
        uv_timer_start(&st->watch, on_watch, SL__HY_WATCH_MS, SL__HY_WATCH_MS);
    }
    start(st);
    return SL_OK;
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

void sl__hy_sync_close(struct sl__hystore *st)
{
    if (st->calls == NULL)
        return;
    drop(st);
    sl__rlink_free(st->link);
    st->link = NULL;
    sl__rlink_free(st->ask);
    if (st->ask != NULL)
        uv_close((uv_handle_t *)&st->watch, on_closed);
    st->ask = NULL;
    sl__rlink_group_free(st->group);
    st->group = NULL;
    if (st->link_conf.tls != NULL) {
        sl__rlink_tls_close(&st->tls);
        st->link_conf.tls = NULL;
    }
    uv_close((uv_handle_t *)&st->conn_timer, on_closed);
    for (unsigned i = 0; i < st->n_calls; i++) {
        if (st->calls[i].idx != NULL)
            uv_close((uv_handle_t *)&st->calls[i].timer, on_closed);
    }
}

static void on_call_timeout(uv_timer_t *t)
{
    struct sl__hy_call *c = t->data;

    if (c->busy) {
        char why[64];
        snprintf(why, sizeof(why), "did not answer a sync within %lld ms",
                 (long long)c->st->cfg.timeout_ms);
        stall_edge(c->st, true, why);
        drop(c->st); /* loses c and every other call on the connection */
    }
}

static bool is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str != NULL && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* The Redis is no master (any more): -READONLY (a replica, from the
 * script's write or the command itself) or -MASTERDOWN. */
static bool is_not_master(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str != NULL &&
           (strstr(r->str, "READONLY") != NULL || strncmp(r->str, "MASTERDOWN", 10) == 0);
}

static void on_reply(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hy_call *c = priv;
    struct sl__hystore *st = c->st;

    (void)l;
    if (!c->busy)
        return; /* already lost (timeout) */
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 * (size_t)c->n) {
        if (r != NULL && is_noscript(r) && st->link != NULL && sl__rlink_is_up(st->link)) {
            st->sha[0] = '\0'; /* Redis restarted or flushed: load it again */
            set_conn(st, SL__HY_CONNECTING);
            (void)sl__rlink_command(st->link, on_loaded, st, "SCRIPT LOAD %s", sync_lua);
            probe(st);
        } else if (r != NULL && is_not_master(r)) {
            /* a failover demoted it: every call out is lost (pending
             * again) and the sentinels say where the master is now; with
             * no sentinels, the same Redis after the backoff */
            lose_call(c);
            stall_edge(st, true, "is not a master any more");
            drop(st);
            return;
        }
        lose_call(c);
        return;
    }
    for (unsigned i = 0; i < c->n; i++) {
        const redisReply *e = r->element[2 * i], *m = r->element[2 * i + 1];
        struct sl__hy_ent *x = &st->ents[c->idx[i]];
        if (e->type == REDIS_REPLY_INTEGER && e->integer >= 0 && m->type == REDIS_REPLY_INTEGER)
            sl__hy_apply(st, x, (uint64_t)e->integer, m->integer > 0 ? m->integer : 0);
        else
            sl__hy_restore(st, x);
    }
    finish_call(c);
}

/* The keys of a sync call over entries idx[0..k): the counters, then
 * their markers, as st->argv[at...] in b; the bytes of b used. */
static size_t key_args(struct sl__hystore *st, const uint32_t *idx, unsigned k, size_t at, char *b)
{
    size_t used = 0;

    for (int marker = 0; marker < 2; marker++) {
        for (unsigned i = 0; i < k; i++) {
            const struct sl__hy_ent *e = &st->ents[idx[i]];
            const struct sl__hy_key key = {e->h, &e->l, e->w, marker};
            size_t len = sl__hy_key_name(st, &key, b + used, KEY_BYTES);
            st->argv[at] = b + used;
            st->argvlen[at++] = len;
            used += len + 1;
        }
    }
    return used;
}

static int send_call(struct sl__hystore *st, struct sl__hy_call *c)
{
    size_t used = 0, argc = 3;
    char *b = st->argbuf;

    st->argv[0] = "EVALSHA";
    st->argvlen[0] = 7;
    st->argv[1] = st->sha;
    st->argvlen[1] = 40;
    st->argv[2] = b;
    st->argvlen[2] = (size_t)snprintf(b, 24, "%u", 2 * c->n);
    used = st->argvlen[2] + 1;
    used += key_args(st, c->idx, c->n, argc, b + used);
    argc += 2 * (size_t)c->n;
    for (unsigned i = 0; i < c->n; i++) {
        const struct sl__hy_ent *e = &st->ents[c->idx[i]];
        int n = snprintf(b + used, 24, "%llu", (unsigned long long)e->inflight);
        st->argv[argc] = b + used;
        st->argvlen[argc++] = (size_t)n;
        used += (size_t)n + 1;
        n = snprintf(b + used, 24, "%lld", (long long)sl__hy_limit_ttl_ms(st, &e->l));
        st->argv[argc] = b + used;
        st->argvlen[argc++] = (size_t)n;
        used += (size_t)n + 1;
    }
    if (sl__rlink_argv(st->link, on_reply, c, (int)argc, st->argv, st->argvlen) != SL_OK)
        return SL_EINVAL;
    c->busy = true;
    st->calls_out++;
    SL__HY_SET(st, in_flight, st->calls_out);
    SL__HY_CNT(st, sync_calls, 1);
    SL__HY_CNT(st, sync_keys, c->n);
    /* the loop's cached time may be as old as the loop's last wait: a
     * timeout counted from it would fire early */
    uv_update_time(st->loop);
    uv_timer_start(&c->timer, on_call_timeout, (uint64_t)st->cfg.timeout_ms, 0);
    return SL_OK;
}

void sl__hy_sync_run(struct sl__hystore *st, int64_t now_ns)
{
    unsigned ci = 0;
    struct sl__hy_call *c = NULL;
    bool sent = false;

    if (st->closing || st->calls_out > 0)
        return; /* the previous sync is still out */
    st->next_sync_ns = now_ns + st->cfg.sync_interval_ms * SL_NS_PER_MS;
    sl__hy_sweep(st, now_ns);
    if (st->conn != SL__HY_READY || st->link == NULL)
        return; /* kept: they go when Redis is back */
    for (uint32_t li = 0; li < st->n_live; li++) {
        uint32_t i = st->live[li];
        struct sl__hy_ent *e = &st->ents[i];
        if (c == NULL) {
            c = &st->calls[ci++];
            c->n = 0;
        }
        e->inflight = e->pending;
        e->pending = 0;
        e->in_call = true;
        SL__HY_SET(st, kept,
                   atomic_load_explicit(&st->ctr.kept, memory_order_relaxed) - e->inflight);
        c->idx[c->n++] = i;
        if (c->n == st->cfg.batch) {
            if (send_call(st, c) != SL_OK) {
                for (unsigned k = 0; k < c->n; k++)
                    sl__hy_restore(st, &st->ents[c->idx[k]]);
                return;
            }
            sent = true;
            c = NULL;
        }
    }
    if (c != NULL && c->n > 0) {
        if (send_call(st, c) != SL_OK) {
            for (unsigned k = 0; k < c->n; k++)
                sl__hy_restore(st, &st->ents[c->idx[k]]);
        } else {
            sent = true;
        }
    }
    if (sent)
        SL__HY_CNT(st, syncs, 1);
}

/* ------------------------------------------------------------ shutdown */

/* One blocking EVAL of the script over ents idx[0..k) with their pending
 * deltas; true when Redis took them. */
static bool push_blocking(struct sl__hystore *st, struct sl__rlink_sync *s, const uint32_t *idx,
                          unsigned k)
{
    size_t argc = 3, used = 0;
    char nk[16], err[256];
    redisReply *r;
    bool ok;

    st->argv[0] = "EVAL";
    st->argvlen[0] = 4;
    st->argv[1] = sync_lua;
    st->argvlen[1] = sizeof(sync_lua) - 1;
    st->argvlen[2] = (size_t)snprintf(nk, sizeof(nk), "%u", 2 * k);
    st->argv[2] = nk;
    used = key_args(st, idx, k, argc, st->argbuf);
    argc += 2 * (size_t)k;
    for (unsigned j = 0; j < k; j++) {
        const struct sl__hy_ent *e = &st->ents[idx[j]];
        int w = snprintf(st->argbuf + used, 24, "%llu", (unsigned long long)e->pending);
        st->argv[argc] = st->argbuf + used;
        st->argvlen[argc++] = (size_t)w;
        used += (size_t)w + 1;
        w = snprintf(st->argbuf + used, 24, "%lld", (long long)sl__hy_limit_ttl_ms(st, &e->l));
        st->argv[argc] = st->argbuf + used;
        st->argvlen[argc++] = (size_t)w;
        used += (size_t)w + 1;
    }
    r = sl__rlink_sync_argv(s, (int)argc, st->argv, st->argvlen, err, sizeof(err));
    ok = r != NULL && r->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    return ok;
}

/* Where the last push goes: store.redis.host:port, or the master the
 * first sentinel that answers names (each asked within ms). */
static bool final_target(const struct sl__hystore *st, const struct sl__rlink_conf *lc, int64_t ms,
                         struct sl__cnode *out)
{
    const struct sl__redis_config *rc = st->cfg.redis;
    struct sl__rlink_conf sc = *lc;

    if (st->n_sentinels == 0) {
        snprintf(out->host, sizeof(out->host), "%s", rc->host);
        out->port = rc->port;
        return true;
    }
    sc.user = sc.password = NULL; /* the sentinels: no AUTH */
    for (unsigned k = 0; k < st->n_sentinels; k++) {
        const struct sl__cnode *s = &st->sentinels[(st->sentinel + k) % st->n_sentinels];
        const struct sl__rlink_master_q q = {s->host, s->port, rc->master_name, ms};
        if (sl__rlink_sync_master(&sc, &q, out->host, sizeof(out->host), &out->port) == SL_OK)
            return true;
    }
    return false;
}

void sl__hy_final_push(struct sl__hystore *st)
{
    struct sl__cnode to;
    const struct sl__redis_config *rc = st->cfg.redis;
    int64_t ms = st->cfg.timeout_ms > 1000 ? st->cfg.timeout_ms : 1000; /* stopping can wait */
    struct sl__rlink_conf lc = {.user = rc != NULL ? rc->user : NULL,
                                .password = rc != NULL ? rc->password : NULL,
                                .connect_timeout_ms = ms};
    struct sl__rlink_tls tls;
    struct sl__rlink_sync *s = NULL;
    uint32_t *idx = NULL;
    char err[256];
    unsigned k = 0;

    if (st->ents == NULL || st->argv == NULL || st->argbuf == NULL || st->cfg.redis == NULL)
        return;
    for (uint32_t i = 0; i < st->cfg.max_keys; i++)
        k += st->ents[i].used && st->ents[i].pending > 0;
    if (k == 0)
        return;
    if (rc->tls.on) {
        if (sl__rlink_tls_init(&tls, &rc->tls) != SL_OK) {
            sl__rlink_tls_close(&tls);
            return; /* as Redis unreachable: sluiced -t reports the files */
        }
        lc.tls = &tls;
    }
    idx = calloc(st->cfg.batch, sizeof(*idx));
    if (idx == NULL)
        goto out;
    /* AUTH refused (or any step failing) leaves the deltas unpushed */
    if (!final_target(st, &lc, ms, &to))
        goto out;
    s = sl__rlink_sync_open(&lc, to.host, to.port, ms, err, sizeof(err));
    if (s == NULL)
        goto out;
    k = 0;
    for (uint32_t i = 0; i <= st->cfg.max_keys; i++) {
        if (i < st->cfg.max_keys) {
            if (!st->ents[i].used || st->ents[i].pending == 0)
                continue;
            idx[k++] = i;
            if (k < st->cfg.batch)
                continue;
        }
        if (k == 0)
            break;
        if (!push_blocking(st, s, idx, k))
            goto out;
        for (unsigned j = 0; j < k; j++)
            st->ents[idx[j]].pending = 0;
        SL__HY_CNT(st, final_pushes, k);
        k = 0;
    }
out:
    free(idx);
    sl__rlink_sync_close(s);
    if (lc.tls != NULL)
        sl__rlink_tls_close(&tls);
}

/* ------------------------------------------------------------ resets */

/* Said at most every 10 s per worker (the line counts what it stands for):
 * an admin script resetting many keys while Redis is away is one line. */
static void unsent(struct sl__hystore *st, const char *why)
{
    uint64_t now = uv_now(st->loop);

    SL__HY_CNT(st, fleet_resets_unsent, 1);
    st->resets_unsaid++;
    if (st->reset_said_ms != 0 && now - st->reset_said_ms < 10000)
        return;
    sl__store_log(SL__SLOG_WARN, "store.hybrid_reset_local",
                  "%llu reset(s) reached no other node (%s): forgotten on this node only, "
                  "the others keep counting until the key's window or bucket is over",
                  (unsigned long long)st->resets_unsaid, why);
    st->reset_said_ms = now;
    st->resets_unsaid = 0;
}

static void on_reset_reply(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__hystore *st = priv;

    (void)l;
    if (st->closing)
        return;
    if (r == NULL)
        unsent(st, "the connection to Redis was lost");
    else if (r->type == REDIS_REPLY_ERROR)
        unsent(st, r->str != NULL ? r->str : "Redis answered an error");
}

void sl__hy_reset_fleet(struct sl__hystore *st, const uint64_t h[2], const struct sl_limit *l,
                        int64_t now_ns)
{
    int64_t first, last, now_ms = now_ns / SL_NS_PER_MS;
    size_t nk, argc = 0, used = 0;
    const char **argv = NULL;
    size_t *argvlen = NULL;
    char *b = NULL, head[3][24];

    if (st->closing)
        return;
    if (st->conn != SL__HY_READY || st->link == NULL) {
        unsent(st, "Redis is not connected");
        return;
    }
    sl__hy_reset_windows(l, now_ns, &first, &last);
    nk = 1 + (size_t)(last - first + 1); /* the marker, then the counters */
    argv = malloc((3 + nk + 2) * sizeof(*argv));
    argvlen = malloc((3 + nk + 2) * sizeof(*argvlen));
    b = malloc(nk * KEY_BYTES);
    if (argv == NULL || argvlen == NULL || b == NULL) {
        unsent(st, "out of memory");
        goto out;
    }
    argv[argc] = "EVAL";
    argvlen[argc++] = 4;
    argv[argc] = reset_lua;
    argvlen[argc++] = sizeof(reset_lua) - 1;
    argvlen[argc] = (size_t)snprintf(head[0], sizeof(head[0]), "%zu", nk);
    argv[argc++] = head[0];
    for (int64_t w = first - 1; w <= last; w++) { /* first - 1: the marker */
        const struct sl__hy_key key = {h, l, w, w == first - 1};
        size_t len = sl__hy_key_name(st, &key, b + used, KEY_BYTES);
        argv[argc] = b + used;
        argvlen[argc++] = len;
        used += len + 1;
    }
    argvlen[argc] = (size_t)snprintf(head[1], sizeof(head[1]), "%lld", (long long)now_ms);
    argv[argc++] = head[1];
    argvlen[argc] =
        (size_t)snprintf(head[2], sizeof(head[2]), "%lld", (long long)sl__hy_limit_ttl_ms(st, l));
    argv[argc++] = head[2];
    if (sl__rlink_argv(st->link, on_reset_reply, st, (int)argc, argv, argvlen) != SL_OK) {
        unsent(st, "the command could not be queued");
        goto out;
    }
    SL__HY_CNT(st, fleet_resets, 1);
out:
    free(argv);
    free(argvlen);
    free(b);
}
