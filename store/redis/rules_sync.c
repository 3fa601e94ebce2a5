/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_sync.c - the blocking half of rules across nodes (see
 * rules_sync.h): each command run on a cluster with MOVED and ASK
 * followed (the link's cluster layer, link/rcluster.h: sl__rcluster_run),
 * the push of one rule (a script: next version, HSET,
 * PUBLISH, atomically), and the pull that applies newer rules to the local
 * rules database.
 *
 * Every connection, to the nodes and to the sentinels, is the blocking
 * Redis link (link/rlink.h: sl__rlink_sync), so store.redis.tls covers
 * them all.
 *
 * It does not subscribe (rules_sync_sub.c does) and keeps no connection
 * open between calls: rules change rarely, and a fresh connection never
 * carries a stale redirection or a half-read reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis.h"
#include "rcluster.h"
#include "rules_sync.h"
#include "rulesdb.h"
#include "sluice.h"
#include "store_log.h"

struct sl__rsync_ver {
    char id[SL_RULESDB_ID_MAX + 1];
    uint64_t version;
};

/* Next version, store the value, announce the id; returns the version. */
static const char push_lua[] = "local v = redis.call('HINCRBY', KEYS[1], '#version', 1)\n"
                               "redis.call('HSET', KEYS[1], ARGV[1], v .. '\\n' .. ARGV[2])\n"
                               "redis.call('PUBLISH', ARGV[3], ARGV[1])\n"
                               "return v\n";

/* The links of one top-level call: its credentials and its TLS (the
 * context built for the call: rules change rarely, and a rotated
 * certificate is then always the one read). */
struct links {
    struct sl__rlink_conf redis;    /* the nodes: AUTH */
    struct sl__rlink_conf sentinel; /* the sentinels: no AUTH */
    struct sl__rlink_tls tls;
};

static int links_open(struct links *l, const struct sl__rsync_config *c)
{
    memset(l, 0, sizeof(*l));
    l->redis.user = c->user;
    l->redis.password = c->password;
    l->redis.connect_timeout_ms = c->timeout_ms;
    l->sentinel.connect_timeout_ms = c->timeout_ms;
    if (!c->tls.on)
        return SL_OK;
    if (sl__rlink_tls_init(&l->tls, &c->tls) != SL_OK) {
        sl__rlink_tls_close(&l->tls);
        return SL_ENOENT; /* as unreachable: sluiced -t reports the files */
    }
    l->redis.tls = l->sentinel.tls = &l->tls;
    return SL_OK;
}

static void links_close(struct links *l)
{
    if (l->redis.tls != NULL)
        sl__rlink_tls_close(&l->tls);
}

/* sl__rsync_master over the call's links. */
static int master_of(const struct sl__rsync_config *c, const struct links *l, size_t i, char *host,
                     size_t cap, int *port)
{
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", c->master_name};
    const size_t lens[3] = {8, 23, strlen(c->master_name)};
    char err[256];
    struct sl__rlink_sync *s = sl__rlink_sync_open(&l->sentinel, c->seeds[i].host, c->seeds[i].port,
                                                   c->timeout_ms, err, sizeof(err));
    redisReply *r = NULL;
    int rc = SL_ENOENT;

    if (s != NULL)
        r = sl__rlink_sync_argv(s, 3, argv, lens, err, sizeof(err));
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[0]->len < cap) {
        char *end;
        long p = strtol(r->element[1]->str, &end, 10);
        if (*end == '\0' && p > 0 && p <= 65535) {
            memcpy(host, r->element[0]->str, r->element[0]->len + 1);
            *port = (int)p;
            rc = SL_OK;
        }
    }
    freeReplyObject(r);
    sl__rlink_sync_close(s);
    return rc;
}

int sl__rsync_master(const struct sl__rsync_config *c, size_t i, char *host, size_t cap, int *port)
{
    struct links l;
    int rc = links_open(&l, c);

    if (rc == SL_OK)
        rc = master_of(c, &l, i, host, cap, port);
    links_close(&l);
    return rc;
}

/* The command on the first seed that answers (with Sentinel: on the
 * master the first sentinel that answers names). */
static redisReply *run(const struct sl__rsync_config *c, int argc, const char **argv,
                       const size_t *lens)
{
    const struct sl__rcmd x = {argc, argv, lens};
    redisReply *r = NULL;
    struct links l;

    if (links_open(&l, c) != SL_OK)
        return NULL;
    for (size_t i = 0; i < c->n_seeds && r == NULL; i++) {
        char host[sizeof(c->seeds[i].host)];
        int port = c->seeds[i].port;

        snprintf(host, sizeof(host), "%s", c->seeds[i].host);
        if (c->master_name[0] != '\0' && master_of(c, &l, i, host, sizeof(host), &port) != SL_OK)
            continue;
        r = sl__rcluster_run(&l.redis, host, port, c->timeout_ms, &x);
    }
    links_close(&l);
    return r;
}

static int names(const struct sl__rsync_config *c, char *key, char *channel, size_t cap)
{
    int a = snprintf(key, cap, "%s:v1:{rules}", c->prefix);
    int b = snprintf(channel, cap, "%s:v1:rules", c->prefix);
    return a > 0 && (size_t)a < cap && b > 0 && (size_t)b < cap ? SL_OK : SL_EINVAL;
}

int sl__rsync_push(const struct sl__rsync_config *c, const char *id, const char *yaml, size_t len,
                   uint64_t *version)
{
    char key[SL__RSYNC_PREFIX_MAX + 16], channel[SL__RSYNC_PREFIX_MAX + 16];
    size_t id_len = strlen(id);
    char *val;
    int rc = SL_ENOENT;

    if (id_len == 0 || id_len > SL_RULESDB_ID_MAX || names(c, key, channel, sizeof(key)) != SL_OK)
        return SL_EINVAL;
    if ((val = malloc(len + 1)) == NULL)
        return SL_ENOMEM;
    val[0] = yaml != NULL ? 'Y' : 'D';
    if (yaml != NULL)
        memcpy(val + 1, yaml, len);
    const char *argv[] = {"EVAL", push_lua, "1", key, id, val, channel};
    size_t lens[] = {4,
                     sizeof(push_lua) - 1,
                     1,
                     strlen(key),
                     id_len,
                     yaml != NULL ? len + 1 : 1,
                     strlen(channel)};
    redisReply *r = run(c, 7, argv, lens);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER) {
        if (version != NULL)
            *version = (uint64_t)r->integer;
        rc = SL_OK;
    } else if (r != NULL) {
        rc = SL_EINVAL; /* an error reply: the stored hash is not ours */
    }
    freeReplyObject(r);
    free(val);
    return rc;
}

void sl__rsync_known_free(struct sl__rsync_known *k)
{
    free(k->v);
    k->v = NULL;
    k->n = k->cap = 0;
}

/* The known entry of `id` (added with version 0 if new), or NULL (ENOMEM). */
static struct sl__rsync_ver *known(struct sl__rsync_known *k, const char *id, size_t len)
{
    for (size_t i = 0; i < k->n; i++)
        if (strlen(k->v[i].id) == len && memcmp(k->v[i].id, id, len) == 0)
            return &k->v[i];
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 16;
        struct sl__rsync_ver *v = realloc(k->v, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        k->v = v;
        k->cap = cap;
    }
    memcpy(k->v[k->n].id, id, len);
    k->v[k->n].id[len] = '\0';
    k->v[k->n].version = 0;
    return &k->v[k->n++];
}

/* Apply one stored (id, value) if newer; SL_OK, SL_EINVAL when malformed. */
static int apply_one(sl_rulesdb *db, struct sl__rsync_known *k, const redisReply *f,
                     const redisReply *v, unsigned *changed)
{
    uint64_t ver = 0;
    size_t i = 0;
    char id[SL_RULESDB_ID_MAX + 1];
    struct sl__rsync_ver *kv;
    int rc;

    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
        return SL_EINVAL;
    if (f->len > 0 && f->str[0] == '#')
        return SL_OK; /* the version counter */
    if (f->len == 0 || f->len > SL_RULESDB_ID_MAX)
        return SL_EINVAL;
    for (; i < v->len && v->str[i] >= '0' && v->str[i] <= '9' && i < 19; i++)
        ver = ver * 10 + (uint64_t)(v->str[i] - '0');
    if (i == 0 || i + 2 > v->len || v->str[i] != '\n' ||
        (v->str[i + 1] != 'Y' && v->str[i + 1] != 'D'))
        return SL_EINVAL;
    if ((kv = known(k, f->str, f->len)) == NULL)
        return SL_ENOMEM;
    if (kv->version >= ver)
        return SL_OK;
    memcpy(id, f->str, f->len);
    id[f->len] = '\0';
    if (v->str[i + 1] == 'D') {
        rc = sl_rulesdb_delete(db, id);
        *changed += rc == SL_OK;
        rc = rc == SL_ENOENT ? SL_OK : rc;
    } else {
        rc = sl_rulesdb_put(db, id, v->str + i + 2, v->len - i - 2, true, NULL);
        *changed += rc == SL_OK;
        if (rc == SL_EPARSE) /* will not validate here: do not retry it every pull */
            sl__store_log(SL__SLOG_WARN, "store.rule_invalid",
                          "rules sync: rule %s from Redis does not validate here: kept out", id);
    }
    if (rc == SL_OK || rc == SL_EPARSE)
        kv->version = ver;
    return rc == SL_EPARSE ? SL_OK : rc;
}

int sl__rsync_pull(const struct sl__rsync_config *c, const char *db_path, struct sl__rsync_known *k,
                   unsigned *changed)
{
    char key[SL__RSYNC_PREFIX_MAX + 16], channel[SL__RSYNC_PREFIX_MAX + 16], err[256];
    const char *argv[2] = {"HGETALL", key};
    size_t lens[2] = {7, 0};
    sl_rulesdb *db = NULL;
    redisReply *r;
    int rc = SL_OK;

    *changed = 0;
    if (names(c, key, channel, sizeof(key)) != SL_OK)
        return SL_EINVAL;
    lens[1] = strlen(key);
    r = run(c, 2, argv, lens);
    if (r == NULL)
        return SL_ENOENT;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
        freeReplyObject(r);
        return SL_EINVAL;
    }
    if (r->elements > 0 && (rc = sl_rulesdb_open(db_path, true, &db, err, sizeof(err))) != SL_OK) {
        sl__store_log(SL__SLOG_ERROR, "store.rules_database_failed", "rules sync: %s", err);
        freeReplyObject(r);
        return rc;
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        int one = apply_one(db, k, r->element[i], r->element[i + 1], changed);
        if (one != SL_OK)
            rc = one;
    }
    sl_rulesdb_close(db);
    freeReplyObject(r);
    return rc;
}

/* ------------------------------------------------------------ a fleet's shared figures */

/* KEYS[1] the hash; ARGV: field, value, now_ms, keep_ms. */
static const char share_lua[] = "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])\n"
                                "local all = redis.call('HGETALL', KEYS[1])\n"
                                "local now = tonumber(ARGV[3])\n"
                                "local out = {}\n"
                                "for i = 1, #all, 2 do\n"
                                "  local e = tonumber(string.match(all[i + 1], '^(%d+)'))\n"
                                "  if e == nil or e < now then\n"
                                "    redis.call('HDEL', KEYS[1], all[i])\n"
                                "  else\n"
                                "    out[#out + 1] = all[i]\n"
                                "    out[#out + 1] = all[i + 1]\n"
                                "  end\n"
                                "end\n"
                                "redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
                                "return out\n";

static int share_flatten(const redisReply *r, char **out, size_t *len)
{
    size_t n = 0;
    char *p;

    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return SL_EINVAL;
    for (size_t i = 0; i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING)
            return SL_EINVAL;
        n += r->element[i]->len + 1;
    }
    if ((p = malloc(n + 1)) == NULL)
        return SL_ENOMEM;
    *out = p;
    *len = n;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        memcpy(p, e->str, e->len);
        p[e->len] = '\0'; /* (a NUL inside a value ends it: ours carry none) */
        p += e->len + 1;
    }
    return SL_OK;
}

int sl__rsync_share(const struct sl__rsync_config *c, const struct sl__rsync_share *s, char **out,
                    size_t *len)
{
    char key[SL__RSYNC_PREFIX_MAX + 160], now[24], keep[24];
    int kl = snprintf(key, sizeof(key), "%s:rlqs:{%s}", c->prefix, s->name);

    *out = NULL;
    *len = 0;
    if (kl <= 0 || (size_t)kl >= sizeof(key))
        return SL_EINVAL;
    snprintf(now, sizeof(now), "%lld", (long long)s->now_ms);
    snprintf(keep, sizeof(keep), "%lld", (long long)(s->keep_ms > 0 ? s->keep_ms : 1));
    const char *argv[] = {"EVAL", share_lua, "1", key, s->field, s->value, now, keep};
    size_t lens[] = {4,           sizeof(share_lua) - 1, 1,
                     (size_t)kl,  strlen(s->field),      strlen(s->value),
                     strlen(now), strlen(keep)};
    redisReply *r = run(c, 8, argv, lens);
    int rc = r == NULL ? SL_ENOENT : share_flatten(r, out, len);

    freeReplyObject(r);
    return rc;
}
