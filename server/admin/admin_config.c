/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * admin_config.c - what the server runs with: GET /v1/config, the
 * configuration in force as JSON (secrets left out: only whether a token
 * is required), and GET /rlconfig, the loaded limits one per line as
 * envoyproxy/ratelimit's debug endpoint prints them. Read-only, on the
 * loop: they read memory only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "admin.h"
#include "envoy.h"
#include "conn.h"
#include "proto.h"
#include "server.h"
#include "server-t.h"
#include "sluice_adaptive.h"
#include "stores.h"
#include "worker-t.h"
#include "worker.h"
#include "xalloc.h"

static void add_listeners(cJSON *root, const struct sl__server *srv)
{
    cJSON *a = cJSON_AddArrayToObject(root, "listeners");

    for (size_t i = 0; i < srv->cfg.n_listeners; i++) {
        const struct sl__listener *l = &srv->cfg.listeners[i];
        cJSON *o = cJSON_CreateObject(), *p = cJSON_AddArrayToObject(o, "protocols");
        cJSON_AddStringToObject(o, "address", l->address);
        cJSON_AddNumberToObject(o, "port", srv->ports[i] ? srv->ports[i] : l->port);
        cJSON_AddBoolToObject(o, "admin", l->admin);
        cJSON_AddBoolToObject(o, "serves_admin", l->admin_paths);
        for (size_t k = 0; sl__protos[k] != NULL; k++) {
            if (l->protos & sl__proto_bit(sl__protos[k]))
                cJSON_AddItemToArray(p, cJSON_CreateString(sl__protos[k]->name));
        }
        cJSON_AddItemToArray(a, o);
    }
}

/* The rules directories, each with the files the serving rules were read
 * from: [{"path", "files": [{"name", "path", "target"}]}] ("target" is
 * where the file's symbolic links lead: in a Kubernetes ConfigMap, the
 * timestamped directory of the generation read). */
static void add_dirs(void *arg, const struct sl__rules_dir *dirs, size_t n)
{
    cJSON *a = arg;

    for (size_t i = 0; i < n; i++) {
        cJSON *d = cJSON_GetArrayItem(a, (int)i), *files = cJSON_AddArrayToObject(d, "files");
        for (size_t k = 0; k < dirs[i].n; k++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "name", dirs[i].files[k].name);
            cJSON_AddStringToObject(f, "path", dirs[i].files[k].path);
            cJSON_AddStringToObject(f, "target", dirs[i].files[k].target);
            cJSON_AddItemToArray(files, f);
        }
    }
}

static void add_rules(cJSON *root, const struct sl__server *srv)
{
    const struct sl__config *cfg = &srv->cfg;
    cJSON *o = cJSON_AddObjectToObject(root, "rules"), *f = cJSON_AddArrayToObject(o, "files");
    cJSON *d = cJSON_AddArrayToObject(o, "directories");

    for (size_t i = 0; i < cfg->n_rules_files; i++)
        cJSON_AddItemToArray(f, cJSON_CreateString(cfg->rules_files[i]));
    for (size_t i = 0; i < cfg->n_rules_dirs; i++) {
        cJSON *one = cJSON_CreateObject();
        cJSON_AddStringToObject(one, "path", cfg->rules_dirs[i]);
        cJSON_AddItemToArray(d, one);
    }
    sl__server_rules_dirs(srv, add_dirs, d);
    if (cfg->rules_db != NULL)
        cJSON_AddStringToObject(o, "database", cfg->rules_db);
    else
        cJSON_AddNullToObject(o, "database");
    cJSON_AddBoolToObject(o, "watch", cfg->rules_watch);
    cJSON_AddNumberToObject(o, "debounce_ms", (double)cfg->rules_debounce_ms);
}

static void add_header_families(cJSON *o, unsigned mask)
{
    static const struct {
        unsigned bit;
        const char *name;
    } fam[] = {
        {SL__HDR_IETF, "ietf"}, {SL__HDR_X, "x-ratelimit"}, {SL__HDR_RETRY_AFTER, "retry-after"}};
    cJSON *a = cJSON_AddArrayToObject(o, "headers");

    for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
        if (mask & fam[i].bit)
            cJSON_AddItemToArray(a, cJSON_CreateString(fam[i].name));
}

void sl__admin_config(struct sl__conn *c, const struct sl__h1_req *r)
{
    const struct sl__server *srv = c->w->srv;
    const struct sl__config *cfg = &srv->cfg;
    cJSON *root = cJSON_CreateObject(), *o;

    if (root == NULL) {
        sl__admin_send_json(c, -1, r->keep_alive, 500, NULL);
        return;
    }
    cJSON_AddStringToObject(root, "version", SLUICE_VERSION);
    if (cfg->path != NULL)
        cJSON_AddStringToObject(root, "config_file", cfg->path);
    add_listeners(root, srv);
    cJSON_AddNumberToObject(root, "workers", srv->n_workers);
    add_rules(root, srv);
    o = cJSON_AddObjectToObject(root, "store");
    cJSON_AddStringToObject(o, "type", sl__server_store_type(srv));
    cJSON_AddNumberToObject(o, "max_bytes", (double)cfg->store_max_bytes);
    cJSON_AddNumberToObject(o, "shards", cfg->store_shards);
    cJSON_AddStringToObject(o, "on_full", cfg->store_on_full == SL_ON_FULL_DENY ? "deny" : "evict");
    o = cJSON_AddObjectToObject(root, "server");
    cJSON_AddNumberToObject(o, "max_connections", cfg->max_connections);
    cJSON_AddNumberToObject(o, "max_frame_bytes", (double)cfg->max_frame_bytes);
    cJSON_AddNumberToObject(o, "idle_timeout_ms", (double)cfg->idle_timeout_ms);
    cJSON_AddNumberToObject(o, "read_timeout_ms", (double)cfg->read_timeout_ms);
    cJSON_AddNumberToObject(o, "shutdown_grace_ms", (double)cfg->shutdown_grace_ms);
    o = cJSON_AddObjectToObject(root, "http");
    add_header_families(o, cfg->http_headers);
    cJSON_AddNumberToObject(o, "max_delay_ms", (double)cfg->http_max_delay_ms);
    cJSON_AddStringToObject(o, "readyz", cfg->readyz == SL__READYZ_STORE ? "store" : "decisions");
    o = cJSON_AddObjectToObject(root, "admin");
    cJSON_AddBoolToObject(o, "token_required", cfg->admin_token != NULL);
    cJSON_AddItemToObject(
        o, "hosts",
        cJSON_CreateStringArray((const char *const *)cfg->admin_hosts, (int)cfg->n_admin_hosts));
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(root, "metrics"), "max_series",
                            cfg->metrics_max_series);
    cJSON_AddBoolToObject(root, "test_clock", cfg->test_clock);
    sl__admin_send_json(c, -1, r->keep_alive, 200, root);
}

/* ------------------------------------------------------------ /rlconfig */

struct dump {
    char *buf;
    size_t len, cap;
};

static void dump_put(struct dump *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void dump_put(struct dump *d, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(d->buf + d->len, d->cap - d->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < d->cap - d->len) {
            d->len += (size_t)n;
            return;
        }
        d->cap = d->cap * 2 + (size_t)n;
        d->buf = sl__xrealloc(d->buf, d->cap);
    }
}

/* One line per limit, as envoyproxy/ratelimit's /rlconfig prints its
 * rules ("path: unit=U requests_per_unit=N, shadow_mode: B, quota_mode:
 * B"), with what Sluice's own limits add after it. */
static void dump_limit(void *arg, const char *path, const struct sl_limit *l, bool quota_mode,
                       bool unlimited)
{
    struct dump *d = arg;
    unsigned unit;
    uint32_t per;

    if (unlimited) {
        dump_put(d, "%s: unlimited, quota_mode: %s\n", path, quota_mode ? "true" : "false");
        return;
    }
    sl__envoy_unit_of(l, &unit, &per);
    dump_put(d, "%s: unit=%s requests_per_unit=%u, shadow_mode: %s, quota_mode: %s", path,
             sl__envoy_units[unit].name, per, l->shadow ? "true" : "false",
             quota_mode ? "true" : "false");
    if (l->named)
        dump_put(d, ", name: %s", l->name);
    if (l->algo != SL_ALGO_FIXED_WINDOW || l->period_ns != sl__envoy_units[unit].ns)
        dump_put(d, ", algorithm: %s, requests: %llu, period_ms: %lld", sl_algo_name(l->algo),
                 (unsigned long long)l->requests, (long long)(l->period_ns / SL_NS_PER_MS));
    if (l->burst >= 0)
        dump_put(d, ", burst: %lld", (long long)l->burst);
    if (l->buckets > 1)
        dump_put(d, ", buckets: %u", (unsigned)l->buckets);
    if (l->algo == SL_ALGO_ADAPTIVE_CONCURRENCY && l->adaptive) /* a rule's: cfg follows */
        dump_put(
            d, ", controller: %s",
            sl_adaptive_algo_name(((const struct sl_adaptive_limit *)(const void *)l)->cfg.algo));
    dump_put(d, "\n");
}

void sl__admin_rlconfig(struct sl__conn *c, const struct sl__h1_req *r)
{
    struct dump d = {sl__xrealloc(NULL, 4096), 0, 4096};

    d.buf[0] = '\0';
    sl_rules_foreach_limit(sl__worker_rules(c->w), dump_limit, &d);
    sl__h1_respond(c, -1, r->keep_alive, 200, NULL, 0, d.len ? d.buf : "\n", d.len ? d.len : 1);
    free(d.buf);
}
