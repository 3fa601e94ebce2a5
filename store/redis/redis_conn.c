/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_conn.c - the Redis store's connections: Redis links
 * (link/rlink.h: TCP or TLS, AUTH) on the worker's libuv loop, the
 * detection of the engines the server offers (which doubles as the probe
 * of the circuit breaker), reconnection with the link's backoff, the log
 * lines of a refused AUTH or TLS handshake, and the breaker itself (consecutive failures
 * open it; it stays open breaker_open_ms, during which every connection is
 * dropped; the first connection whose detection succeeds closes it).
 *
 * Detection, one round trip on every (re)connection, each asked only when
 * store.redis.engine allows it: SLUICE.VERSION (the module, redis-module/,
 * speaking this store's protocol) and FUNCTION LIST LIBRARYNAME of this
 * build's library (Redis 7+; its name carries a hash of its code, so a
 * library of that name is this code). Only when it is not listed (Redis
 * restarted or its functions flushed, or FUNCTION LIST refused by an ACL)
 * is the library itself, tens of KB, sent with FUNCTION LOAD: a second
 * round trip for that connection ("already exists" is fine: another
 * connection loaded it first). EVALSHA needs nothing first: every Redis
 * runs scripts, and the script is loaded on its first NOSCRIPT (or by
 * SCRIPT LOAD at connect when the script is forced), so a connection costs
 * Redis one compilation at most. The store then builds its calls for the
 * best engine every ready connection offers (module, then Functions, then
 * EVALSHA; on a cluster all masters must offer it), or the forced one.
 *
 * With Redis Cluster every master (a node of the store's map, node 0 the
 * seed) has its own cfg.connections connections, started when the node
 * first appears in the map, and its own breaker: consecutive failures of
 * one master drop its connections for breaker_open_ms, the others go on
 * (without cluster, the one breaker below).
 *
 * With Sentinel node 0 is the master the sentinels name: nothing connects
 * before one is named, a connection first checks that its Redis says it
 * is a master (ROLE), a lost one makes the store ask the sentinels again,
 * and a new master moves every connection to it (sl__rconn_retarget).
 *
 * Every change of a connection's state is published (redis_health.c),
 * which is also how the log hears of a node lost or back.
 *
 * With the detection goes CONFIG GET maxmemory-policy, not waited for: a
 * policy that may evict state keys is a warning in the log, once per
 * address (redis_policy.c reads it; docs/distributed.md says why).
 *
 * It does not send checks (redis.c does, on a connection picked here) and
 * never blocks: every wait is a libuv timer. Its handles are unreferenced
 * so that they never keep a stopping worker's loop alive.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

static void schedule(struct sl__rconn *c, int64_t wait_ms);
static void drop(struct sl__rconn *c, const char *why);

/* The wait before the next attempt: the breaker's hold when it opened,
 * else the backoff (link/rlink.h: the one policy). */
static int64_t next_wait(struct sl__rconn *c)
{
    int64_t hold = c->hold_ms;

    c->hold_ms = 0;
    return hold > 0 ? hold : sl__rbackoff_next(&c->bo);
}

static int64_t now_ms(const struct sl__rstore *st)
{
    return (int64_t)uv_now(st->loop);
}

/* How long a connection may take to connect and load the script. */
static int64_t probe_timeout_ms(const struct sl__rstore *st)
{
    int64_t t = st->cfg.timeout_ms * 20;
    return t < 200 ? 200 : t;
}

/* Connections started so far (every node's, node-major). */
static unsigned n_conns(const struct sl__rstore *st)
{
    return st->n_nodes_started * st->cfg.connections;
}

/* The engine calls are built for: the forced one, else the best that
 * every ready connection offers (else the first one's best: the servers
 * disagree and some calls will fail until the operator aligns them). */
static enum sl__redis_engine common_engine(const struct sl__rstore *st)
{
    static const enum sl__redis_engine best[] = {SL__ENGINE_MODULE, SL__ENGINE_FUNCTION,
                                                 SL__ENGINE_SCRIPT};
    unsigned all = 0xff, first = 0;

    if (st->cfg.engine != SL__ENGINE_AUTO)
        return st->cfg.engine;
    for (unsigned i = 0; i < n_conns(st); i++) {
        if (st->conns[i].state != SL__RC_READY)
            continue;
        all &= st->conns[i].engines;
        first = first != 0 ? first : st->conns[i].engines;
    }
    if (first == 0)
        return st->cfg.opts.engine; /* none ready: keep the last one */
    for (size_t k = 0; k < sizeof(best) / sizeof(best[0]); k++)
        if (all & (1u << best[k]))
            return best[k];
    for (size_t k = 0; k < sizeof(best) / sizeof(best[0]); k++)
        if (first & (1u << best[k]))
            return best[k];
    return SL__ENGINE_SCRIPT;
}

static void count_ready(struct sl__rstore *st)
{
    unsigned n = 0;

    for (unsigned i = 0; i < n_conns(st); i++)
        n += st->conns[i].state == SL__RC_READY;
    st->conns_ready = n;
    st->cfg.opts.engine = common_engine(st);
    atomic_store_explicit(&st->ctr.engine, (int)st->cfg.opts.engine, memory_order_relaxed);
    atomic_store_explicit(&st->ctr.conns_ready, n, memory_order_relaxed);
    atomic_store_explicit(&st->ctr.olc_active, st->olc != NULL && st->sub.state == SL__RC_READY,
                          memory_order_relaxed);
    sl__rhealth_publish(st);
}

/* Remember why `c` failed (for the log), from hiredis or ours. */
static void note_failure(struct sl__rconn *c, const char *why)
{
    c->failed = true;
    snprintf(c->why, sizeof(c->why), "%s", why != NULL && why[0] != '\0' ? why : "connection lost");
}

static const char *const engine_names[] = {"auto", "module", "function", "script"};

/* Every detection reply is in: ready, or (the forced engine is not
 * offered) dropped and tried again after the backoff, said once. */
static void probed(struct sl__rconn *c, const char *why)
{
    struct sl__rstore *st = c->st;
    enum sl__redis_engine want = st->cfg.engine;
    bool ok = want == SL__ENGINE_AUTO ? c->engines != 0 : (c->engines & (1u << want)) != 0;

    if (!ok) {
        char addr[SL__CLUSTER_HOST_MAX + 8];

        sl__rnode_addr(st, c->node, addr, sizeof(addr));
        if (!st->engine_warned)
            sl__rlog(st, SL__SLOG_ERROR, "store.no_engine",
                     "redis %s offers no %s engine (store.redis.engine: %s): %s", addr,
                     want == SL__ENGINE_AUTO ? "usable" : engine_names[want], engine_names[want],
                     why != NULL ? why : "no reply");
        st->engine_warned = true;
        drop(c, "no engine");
        return;
    }
    uv_timer_stop(&c->timer);
    c->state = SL__RC_READY;
    c->failed = false;
    c->why[0] = '\0';
    sl__rbackoff_reset(&c->bo);
    sl__rconn_success(st, c->node);
    count_ready(st);
    if (st->cfg.cluster)
        st->up.conn_ready(st);
}

/* One detection reply: engine `e` is offered when `ok`. */
static void probe_reply(redisReply *r, struct sl__rconn *c, enum sl__redis_engine e, bool ok)
{
    if (c->st->closing || r == NULL || c->probes == 0)
        return;
    if (ok)
        c->engines |= (uint8_t)(1u << e);
    if (--c->probes == 0)
        probed(c, r->type == REDIS_REPLY_ERROR ? r->str : NULL);
}

/* SLUICE.VERSION: ["sluice-redis", version, protocol]. */
static void on_module(struct sl__rlink *l, redisReply *reply, void *priv)
{
    redisReply *r = reply;
    bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
              r->element[2]->type == REDIS_REPLY_INTEGER &&
              r->element[2]->integer == SL__REDIS_MODULE_PROTOCOL;

    probe_reply(r, priv, SL__ENGINE_MODULE, ok);
}

/* FUNCTION LOAD: the library's name, or "already exists" (the same code:
 * its name is a hash of it). */
static void on_function(struct sl__rlink *l, redisReply *reply, void *priv)
{
    redisReply *r = reply;
    bool ok =
        r != NULL && ((r->type == REDIS_REPLY_STRING && strcmp(r->str, sl__redis_fn_name) == 0) ||
                      (r->type == REDIS_REPLY_ERROR && strstr(r->str, "already exists") != NULL &&
                       strstr(r->str, sl__redis_fn_name) != NULL));

    probe_reply(r, priv, SL__ENGINE_FUNCTION, ok);
}

/* FUNCTION LIST LIBRARYNAME <name>: an array of libraries, each a flat
 * array of field/value pairs. LIBRARYNAME is a pattern: the name must be
 * this one exactly. */
static bool library_listed(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return false;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *lib = r->element[i];
        for (size_t k = 0; lib->type == REDIS_REPLY_ARRAY && k + 1 < lib->elements; k += 2) {
            const redisReply *f = lib->element[k], *v = lib->element[k + 1];
            if (f->type == REDIS_REPLY_STRING && strcmp(f->str, "library_name") == 0 &&
                v->type == REDIS_REPLY_STRING && strcmp(v->str, sl__redis_fn_name) == 0)
                return true;
        }
    }
    return false;
}

/* The library listed: Functions offered, nothing to send. Not listed, or
 * the question refused (an ACL that grants FUNCTION LOAD only): load it,
 * on_function answers for the engine. A Redis without FUNCTION (before 7)
 * offers none: the library is not sent to it. */
static void on_function_list(struct sl__rlink *l, redisReply *reply, void *priv)
{
    struct sl__rconn *c = priv;
    redisReply *r = reply;

    if (c->st->closing || r == NULL || c->probes == 0)
        return;
    if (library_listed(r) ||
        (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ERR unknown command", 19) == 0)) {
        probe_reply(r, c, SL__ENGINE_FUNCTION, r->type != REDIS_REPLY_ERROR);
        return;
    }
    if (sl__rlink_command(l, on_function, c, "FUNCTION LOAD %b", sl__redis_fn, sl__redis_fn_len) !=
        SL_OK)
        probe_reply(r, c, SL__ENGINE_FUNCTION, false);
}

/* SCRIPT LOAD: the script's SHA-1, which calls name. */
static void on_script(struct sl__rlink *l, redisReply *reply, void *priv)
{
    redisReply *r = reply;
    bool ok = r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, sl__redis_lua_sha) == 0;

    probe_reply(r, priv, SL__ENGINE_SCRIPT, ok);
}

/* CONFIG GET maxmemory-policy. Any policy but noeviction may evict state
 * keys (they all carry an expiry) and forgive a limited client. Said once
 * per address for the process (reconnections and workers share the line);
 * noeviction seen again clears it, so that a later change is said again.
 * A refused or renamed CONFIG is no failure: said once, at info. */
static void on_policy(struct sl__rlink *l, redisReply *reply, void *priv)
{
    struct sl__rconn *c = priv;
    redisReply *r = reply;
    char addr[SL__CLUSTER_HOST_MAX + 8], key[SL__CLUSTER_HOST_MAX + 32], name[72];
    enum sl__redis_evict e;

    if (c->st->closing || r == NULL)
        return;
    e = sl__redis_policy_read(r, name, sizeof(name));
    sl__rnode_addr(c->st, c->node, addr, sizeof(addr));
    snprintf(key, sizeof(key), "evicts %s", addr);
    if (e == SL__EVICT_NONE) {
        sl__revent_clear(c->st, key);
    } else if (e == SL__EVICT_MAY) {
        if (sl__revent_once(c->st, key))
            sl__rlog(c->st, SL__SLOG_WARN, "store.eviction_policy",
                     "redis %s has maxmemory-policy %s: at maxmemory it may evict rate-limit "
                     "states and forgive the clients they limit; set maxmemory-policy noeviction",
                     addr, name);
    } else {
        snprintf(key, sizeof(key), "policy unknown %s", addr);
        if (sl__revent_once(c->st, key))
            sl__rlog(c->st, SL__SLOG_INFO, "store.eviction_unchecked",
                     "redis %s: maxmemory-policy could not be checked (%.100s); make sure it is "
                     "noeviction, or grant +config|get",
                     addr, r->type == REDIS_REPLY_ERROR ? r->str : "no such setting");
    }
}

/* Ask, pipelined, for every engine store.redis.engine allows. */
static void probe(struct sl__rconn *c)
{
    enum sl__redis_engine want = c->st->cfg.engine;
    struct sl__rlink *l = c->link;

    /* auto: EVALSHA is always there, loaded on its first NOSCRIPT */
    c->engines = want == SL__ENGINE_AUTO ? 1u << SL__ENGINE_SCRIPT : 0;
    c->probes = 0;
    if ((want == SL__ENGINE_AUTO || want == SL__ENGINE_MODULE) &&
        sl__rlink_command(l, on_module, c, "SLUICE.VERSION") == SL_OK)
        c->probes++;
    if ((want == SL__ENGINE_AUTO || want == SL__ENGINE_FUNCTION) &&
        sl__rlink_command(l, on_function_list, c, "FUNCTION LIST LIBRARYNAME %s",
                          sl__redis_fn_name) == SL_OK)
        c->probes++;
    if (want == SL__ENGINE_SCRIPT && sl__rlink_command(l, on_script, c, "SCRIPT LOAD %b",
                                                       sl__redis_lua, sl__redis_lua_len) == SL_OK)
        c->probes++;
    /* not a probe: readiness never waits for it, and it costs no check a
     * round trip (it rides with the detection, once per connection) */
    sl__rlink_command(l, on_policy, c, "CONFIG GET maxmemory-policy");
}

/* With Sentinel: the Redis it named must say it is the master (a demoted
 * one comes back as a replica); if not, ask the sentinels again. */
static void role_check(struct sl__rconn *c, const redisReply *r)
{
    char key[SL__CLUSTER_HOST_MAX + 32], addr[SL__CLUSTER_HOST_MAX + 8];

    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0)
        return;
    sl__rnode_addr(c->st, c->node, addr, sizeof(addr));
    snprintf(key, sizeof(key), "not master %s", addr);
    if (sl__revent_once(c->st, key))
        sl__rlog(c->st, SL__SLOG_WARN, "store.master_not_master",
                 "redis %s, named master '%s' by Sentinel, is not a master (yet): asking again",
                 addr, c->st->cfg.master_name);
    drop(c, "not a master");
}

static void on_role(struct sl__rlink *l, redisReply *r, void *priv)
{
    struct sl__rconn *c = priv;

    (void)l;
    if (!c->st->closing && r != NULL)
        role_check(c, r);
}

void sl__rconn_reload(struct sl__rconn *c, bool function)
{
    if (function)
        sl__rlink_command(c->link, NULL, NULL, "FUNCTION LOAD %b", sl__redis_fn, sl__redis_fn_len);
    else
        sl__rlink_command(c->link, NULL, NULL, "SCRIPT LOAD %b", sl__redis_lua, sl__redis_lua_len);
}

void sl__rconn_redetect(struct sl__rconn *c)
{
    drop(c, "the module is gone: detecting the engine again");
}

/* A connection went down: with a cluster, its node may have failed over
 * (the map is refreshed), and the subscriber moves to the next node; with
 * Sentinel, the master may have changed (the sentinels are asked). */
static void lost(struct sl__rconn *c)
{
    struct sl__rstore *st = c->st;

    if (st->sentinel != NULL && !st->quiet)
        sl__rsentinel_lost(st);
    if (!st->cfg.cluster)
        return;
    st->up.conn_lost(st);
    if (c->sub && st->map->n_nodes > 0)
        c->node = (uint8_t)((c->node + 1u) % st->map->n_nodes);
}

/* A refusal is said once per address and reason: it repeats at every
 * reconnection. */
static void say_refused(struct sl__rconn *c, const struct sl__rlink_why *why)
{
    char addr[SL__CLUSTER_HOST_MAX + 8], key[SL__CLUSTER_HOST_MAX + 48];

    if (why->kind == SL__RLINK_AUTH) {
        if (sl__revent_once(c->st, "auth refused"))
            sl__rlog(c->st, SL__SLOG_ERROR, "store.auth_refused",
                     "redis %s (check store.redis.user/password)", why->text);
        return;
    }
    sl__rnode_addr(c->st, c->node, addr, sizeof(addr));
    snprintf(key, sizeof(key), "tls %d %s", (int)why->tls, addr);
    if (sl__revent_once(c->st, key))
        sl__rlog(c->st, SL__SLOG_ERROR, "store.tls_failed", "redis %s: %s (check store.redis.tls)",
                 addr, why->text);
}

/* The link is down (never made, refused, or lost): its waiting calls have
 * had their NULL replies; reconnect after the backoff. */
static void on_down(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why)
{
    struct sl__rconn *c = arg;

    (void)l;
    if (c->st->closing)
        return;
    if (why->kind == SL__RLINK_AUTH || why->kind == SL__RLINK_TLS)
        say_refused(c, why);
    c->state = SL__RC_DOWN;
    note_failure(c, why->kind == SL__RLINK_AUTH ? "AUTH refused" : why->text);
    count_ready(c->st);
    lost(c);
    schedule(c, next_wait(c));
}

/* The subscriber: the confirmation makes it ready (and empties the
 * over-limit cache: announcements may have been missed while it was
 * down); each message names reset state keys, one per line. */
static void on_message(struct sl__rlink *l, redisReply *reply, void *priv)
{
    struct sl__rconn *c = priv;
    redisReply *r = reply;
    const char *p, *end;

    (void)l;
    if (c->st->closing || r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    if (strcmp(r->element[0]->str, "subscribe") != 0 &&
        strcmp(r->element[0]->str, "message") != 0) {
        role_check(c, r); /* with Sentinel, its ROLE comes here too */
        return;
    }
    if (r->elements != 3)
        return;
    if (strcmp(r->element[0]->str, "subscribe") == 0) {
        uv_timer_stop(&c->timer);
        c->state = SL__RC_READY;
        sl__rbackoff_reset(&c->bo);
        sl__olc_clear(c->st);
        count_ready(c->st); /* publishes olc_active */
        return;
    }
    if (strcmp(r->element[0]->str, "message") != 0 || r->element[2]->type != REDIS_REPLY_STRING)
        return;
    p = r->element[2]->str;
    end = p + r->element[2]->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl != NULL ? nl : end;
        sl__olc_forget(c->st, sl__olc_hash(c->st, p, (size_t)(stop - p)));
        p = stop + 1;
    }
}

static void start(struct sl__rconn *c)
{
    struct sl__rstore *st = c->st;
    int rc;

    if (!sl__rsentinel_known(st))
        return; /* sl__rconn_retarget starts it once Sentinel names a master */
    if (c->started)
        SL__CNT(st, reconnects, 1);
    c->started = true;
    rc = c->link == NULL ? SL_ENOMEM
                         : sl__rlink_connect(c->link, st->map->nodes[c->node].host,
                                             st->map->nodes[c->node].port);
    if (rc != SL_OK) {
        note_failure(c, rc == SL_ENOMEM ? "out of memory" : "cannot connect");
        schedule(c, next_wait(c));
        count_ready(st);
        return;
    }
    c->state = SL__RC_CONNECTING;
    /* queued behind the link's AUTH: they leave once it is connected */
    if (st->sentinel != NULL)
        sl__rlink_command(c->link, on_role, c, "ROLE");
    if (c->sub)
        sl__rlink_command(c->link, NULL, NULL, "SUBSCRIBE %s", st->channel);
    else
        probe(c);
    schedule(c, -probe_timeout_ms(st)); /* negative: a timeout, not a backoff */
}

/* The timer: a backoff that ends (connect now) or a probe that expired. */
static void on_timer(uv_timer_t *t)
{
    struct sl__rconn *c = t->data;

    if (c->st->closing)
        return;
    if (c->state == SL__RC_CONNECTING) {
        char why[64];
        snprintf(why, sizeof(why), "no answer within %lld ms", (long long)probe_timeout_ms(c->st));
        drop(c, why); /* never connected or never detected its engine in time */
        return;
    }
    if (c->state == SL__RC_DOWN && now_ms(c->st) >= c->st->open_until_ms) {
        if (c->st->breaker == SL__BREAKER_OPEN)
            sl__rconn_set_breaker(c->st, SL__BREAKER_PROBING);
        start(c);
    } else if (c->state == SL__RC_DOWN)
        schedule(c, c->st->open_until_ms - now_ms(c->st));
}

/* wait_ms >= 0: reconnect after it; < 0: the probe timeout of a
 * connection in progress. */
static void schedule(struct sl__rconn *c, int64_t wait_ms)
{
    uv_timer_start(&c->timer, on_timer, (uint64_t)(wait_ms < 0 ? -wait_ms : wait_ms), 0);
}

/* Close the connection now and schedule the next one. Freed, not
 * disconnected: a disconnect waits for the pending replies, which a frozen
 * Redis never sends; freeing answers every pending call with NULL at once
 * (deferred by hiredis until the current callback returns, when called
 * from one), so their slots come back. `why` says what failed; NULL: not
 * a failure (moving to a new master). */
static void drop(struct sl__rconn *c, const char *why)
{
    if (!sl__rlink_is_busy(c->link))
        return;
    c->state = SL__RC_DOWN;
    if (why != NULL)
        note_failure(c, why);
    count_ready(c->st);
    lost(c);
    schedule(c, next_wait(c));
    sl__rlink_drop(c->link);
}

static void conn_init(struct sl__rstore *st, struct sl__rconn *c, bool sub, unsigned node)
{
    c->st = st;
    static const struct sl__rlink_events data_ev = {.down = on_down};
    static const struct sl__rlink_events sub_ev = {.down = on_down, .push = on_message};

    c->sub = sub;
    c->node = (uint8_t)node;
    sl__rbackoff_init(&c->bo, st->cfg.backoff_min_ms, st->cfg.backoff_max_ms);
    c->link =
        sl__rlink_new(st->group, &st->link, sub ? &sub_ev : &data_ev, c); /* NULL: start says */
    uv_timer_init(st->loop, &c->timer);
    uv_unref((uv_handle_t *)&c->timer);
    c->timer.data = c;
    start(c);
}

int sl__rconn_init_all(struct sl__rstore *st)
{
    size_t nodes = st->cfg.cluster ? SL__CLUSTER_MAX_NODES : 1;

    st->conns = calloc(nodes * st->cfg.connections, sizeof(*st->conns));
    if (st->conns == NULL)
        return SL_ENOMEM;
    snprintf(st->channel, sizeof(st->channel), "%s:v1:reset", st->cfg.opts.prefix);
    sl__rconn_start_nodes(st); /* the seeds */
    if (st->olc != NULL)
        conn_init(st, &st->sub, true, 0);
    return SL_OK;
}

void sl__rconn_start_nodes(struct sl__rstore *st)
{
    size_t max = st->cfg.cluster ? SL__CLUSTER_MAX_NODES : 1;

    while (st->n_nodes_started < st->map->n_nodes && st->n_nodes_started < max && !st->closing) {
        unsigned node = st->n_nodes_started++;
        for (unsigned i = 0; i < st->cfg.connections; i++)
            conn_init(st, &st->conns[node * st->cfg.connections + i], false, node);
    }
    atomic_store_explicit(&st->ctr.nodes_known, (unsigned)st->map->n_nodes, memory_order_relaxed);
}

static struct sl__rconn *pick_in(struct sl__rstore *st, unsigned first, unsigned n)
{
    for (unsigned k = 0; k < n; k++) {
        struct sl__rconn *c = &st->conns[first + (st->next_conn + k) % n];
        if (c->state == SL__RC_READY && sl__rlink_is_up(c->link)) {
            st->next_conn = (st->next_conn + k + 1) % n;
            return c;
        }
    }
    return NULL;
}

struct sl__rconn *sl__rconn_pick(struct sl__rstore *st)
{
    return pick_in(st, 0, n_conns(st));
}

struct sl__rconn *sl__rconn_pick_node(struct sl__rstore *st, unsigned node)
{
    if (node >= st->n_nodes_started)
        sl__rconn_start_nodes(st);
    if (node >= st->n_nodes_started)
        return NULL;
    return pick_in(st, node * st->cfg.connections, st->cfg.connections);
}

void sl__rconn_set_breaker(struct sl__rstore *st, enum sl__breaker b)
{
    st->breaker = b;
    atomic_store_explicit(&st->ctr.breaker, (int)b, memory_order_relaxed);
    if (b != SL__BREAKER_PROBING)
        sl__revent_breaker(st, 0, b == SL__BREAKER_OPEN);
}

bool sl__rconn_available(struct sl__rstore *st)
{
    return st->breaker == SL__BREAKER_CLOSED && st->conns_ready > 0;
}

void sl__rconn_success(struct sl__rstore *st, unsigned node)
{
    if (st->cfg.cluster) {
        st->node_failures[node] = 0;
        sl__revent_breaker(st, node, false);
        return;
    }
    st->failures = 0;
    if (st->breaker != SL__BREAKER_CLOSED)
        sl__rconn_set_breaker(st, SL__BREAKER_CLOSED);
}

/* Cluster: the breaker of one master. Its connections are dropped (which
 * frees the calls stuck on it) and come back after breaker_open_ms; its
 * slots meanwhile get the policy at once, the other masters' go on. */
static void node_failure(struct sl__rstore *st, unsigned node)
{
    if (++st->node_failures[node] < st->cfg.breaker_failures)
        return;
    st->node_failures[node] = 0;
    sl__revent_breaker(st, node, true);
    for (unsigned i = 0; i < st->cfg.connections; i++) {
        struct sl__rconn *c = &st->conns[node * st->cfg.connections + i];
        c->hold_ms = st->cfg.breaker_open_ms;
        drop(c, "calls failing, circuit breaker open");
    }
    st->up.conn_lost(st); /* a failover may be under way */
}

void sl__rconn_failure(struct sl__rstore *st, unsigned node)
{
    if (st->quiet)
        return; /* a call lost with the old master's connections (retarget) */
    if (st->cfg.cluster) {
        if (node < st->n_nodes_started)
            node_failure(st, node);
        return;
    }
    if (st->breaker != SL__BREAKER_CLOSED || ++st->failures < st->cfg.breaker_failures)
        return;
    /* Open: stop calling a dead Redis; drop every connection (which frees
     * the calls stuck on it) and probe again after breaker_open_ms. */
    sl__rconn_set_breaker(st, SL__BREAKER_OPEN);
    st->open_until_ms = now_ms(st) + st->cfg.breaker_open_ms;
    for (unsigned i = 0; i < n_conns(st); i++) {
        st->conns[i].hold_ms = st->cfg.breaker_open_ms;
        drop(&st->conns[i], "calls failing, circuit breaker open");
    }
}

/* Move every connection (and the subscriber) to node 0's new address:
 * dropped without counting as failures, reconnected at once, and the
 * breaker's wait cut short (the new master has not failed). */
void sl__rconn_retarget(struct sl__rstore *st)
{
    st->quiet = true; /* nothing published until every connection has moved */
    st->failures = 0;
    st->open_until_ms = now_ms(st);
    for (unsigned i = 0; i <= n_conns(st); i++) {
        struct sl__rconn *c = i < n_conns(st) ? &st->conns[i] : &st->sub;
        if (c->st == NULL)
            continue;      /* no subscriber (over-limit cache off) */
        c->failed = false; /* the old master's failures are not the new one's */
        c->why[0] = '\0';
        drop(c, NULL);
        sl__rbackoff_reset(&c->bo);
        uv_timer_start(&c->timer, on_timer, 0, 0);
    }
    st->quiet = false;
    count_ready(st);
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

static void close_one(struct sl__rconn *c)
{
    sl__rlink_free(c->link); /* its waiting calls come back NULL (st->closing is set) */
    c->link = NULL;
    if (c->st != NULL) /* initialised */
        uv_close((uv_handle_t *)&c->timer, on_closed);
}

void sl__rconn_close_all(struct sl__rstore *st)
{
    for (unsigned i = 0; st->conns != NULL && i < n_conns(st); i++)
        close_one(&st->conns[i]);
    close_one(&st->sub);
}
