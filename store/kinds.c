/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * kinds.c - the table of store kinds and store.h's runtime functions over
 * it: the stores made from a configuration (kinds_config.c reads it), and
 * the dispatch to the configured kind.
 *
 * It decides nothing and does no I/O; each kind does its own. What is the
 * same for every kind is here: sluice_store_up in /metrics, and the
 * health view's type, state and why.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kinds_int.h"
#include "store_log.h"

static const struct sl__store_kind *const kinds[] = {
    &sl__store_kind_memory,
    &sl__store_kind_redis,
    &sl__store_kind_hybrid,
};
#define NKINDS SL__STORE_NKINDS
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == NKINDS, "one entry per kind in both tables");

struct sl__store_rules_sub {
    const struct sl__store_kind *kind;
    void *impl;
};

void sl__store_config_set_log(struct sl__store_config *c, sl__store_log_fn fn, void *arg)
{
    c->log = fn;
    c->log_arg = arg;
    sl__store_log_sink(fn, arg); /* for the rules subscriber (store_log.h) */
}

static void drop_shared(struct sl__store_config *c)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (c->shared[i] != NULL)
            kinds[i]->shared_free(c->shared[i]);
}

/* Make what each kind's stores share, once per configuration; the tables
 * of kinds checked to agree first (a kind listed in one order here and in
 * another in kinds_config.c would be made with another kind's
 * configuration). */
static int share(struct sl__store_config *c)
{
    if (c->shared_made)
        return SL_OK;
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i]->config != sl__store_kind_configs[i])
            return SL_EINVAL;
    c->drop_shared = drop_shared;
    for (size_t i = 0; i < NKINDS; i++) {
        if (kinds[i]->shared_new != NULL && (c->shared[i] = kinds[i]->shared_new()) == NULL) {
            drop_shared(c);
            memset(c->shared, 0, sizeof(c->shared));
            return SL_ENOMEM;
        }
    }
    c->shared_made = true;
    return SL_OK;
}

int sl__store_new(struct sl__store_config *c, uv_loop_t *loop, sl_limiter *lim,
                  struct sl__store **out)
{
    const struct sl__store_kind *k = kinds[c->type];
    int rc = share(c);

    *out = NULL;
    if (rc != SL_OK)
        return rc;
    struct sl__store_env env = {loop, lim, c->log, c->log_arg, c->shared[c->type]};
    rc = k->create(c->cfg[c->type], &env, out);

    if (rc == SL_OK)
        (*out)->kind = k;
    return rc;
}

/* ------------------------------------------------------------ health, metrics */

void sl__store_add_counters(const struct sl__store_counter *t, size_t n, void *to, const void *from)
{
    for (size_t c = 0; c < n; c++) {
        uint64_t v;
        memcpy(&v, (const char *)from + t[c].offset, sizeof(v));
        *(uint64_t *)(void *)((char *)to + t[c].offset) += v;
    }
}

bool sl__store_put_counters(char *buf, size_t cap, size_t *len, const struct sl__store_counter *t,
                            size_t n, const void *stats)
{
    bool ok = true;

    for (size_t c = 0; ok && c < n; c++) {
        uint64_t v;
        memcpy(&v, (const char *)stats + t[c].offset, sizeof(v));
        ok = sl__store_put(buf, cap, len, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", t[c].name,
                           t[c].help, t[c].name, t[c].name, (unsigned long long)v);
    }
    return ok;
}

bool sl__store_put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*len >= cap)
        return false;
    va_start(ap, fmt);
    n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *len)
        return false;
    *len += (size_t)n;
    return true;
}

bool sl__store_put_json_str(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t start = *len;
    bool ok = sl__store_put(buf, cap, len, "\"");

    for (; ok && *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            ok = sl__store_put(buf, cap, len, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            ok = sl__store_put(buf, cap, len, "\\u%04x", ch);
        else
            ok = sl__store_put(buf, cap, len, "%c", ch);
    }
    ok = ok && sl__store_put(buf, cap, len, "\"");
    if (!ok)
        *len = start;
    return ok;
}

void sl__store_health_sum(struct sl__store *const *stores, unsigned n, struct sl__store_health *out)
{
    struct sl__store_health h;

    out->state = SL__STORE_UP;
    out->why[0] = '\0';
    for (unsigned i = 0; i < n; i++) {
        if (stores[i] == NULL) {
            out->state = SL__STORE_DOWN;
            snprintf(out->why, sizeof(out->why), "a worker has no store");
            return;
        }
        sl__store_health(stores[i], &h);
        if (h.state > out->state)
            *out = h;
    }
}

static const char *const state_names[] = {"up", "degraded", "starting", "down"};

size_t sl__store_health_render(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                               size_t *len)
{
    const struct sl__store_kind *k = n > 0 && stores[0] != NULL ? stores[0]->kind : NULL;
    struct sl__store_health h;
    size_t start = *len;
    bool ok;

    sl__store_health_sum(stores, n, &h);
    ok = sl__store_put(buf, cap, len, "{\"type\":");
    ok = ok && sl__store_put_json_str(buf, cap, len, k != NULL ? k->config->name : "none");
    ok = ok && sl__store_put(buf, cap, len, ",\"state\":\"%s\",\"why\":", state_names[h.state]);
    ok = ok && sl__store_put_json_str(buf, cap, len, h.why);
    if (ok && k != NULL && k->health_members != NULL)
        ok = k->health_members(stores, n, buf, cap, len);
    ok = ok && sl__store_put(buf, cap, len, "}");
    if (!ok) {
        *len = start;
        return 0;
    }
    return *len - start;
}

size_t sl__store_metrics_render(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                                size_t *len)
{
    const struct sl__store_kind *k = n > 0 && stores[0] != NULL ? stores[0]->kind : NULL;
    struct sl__store_health h;
    size_t start = *len;
    bool ok;

    sl__store_health_sum(stores, n, &h);
    ok = sl__store_put(buf, cap, len,
                       "# HELP sluice_store_up 1 while every worker's store decides with its own "
                       "state; 0 while failure policies answer (see /readyz).\n"
                       "# TYPE sluice_store_up gauge\n"
                       "sluice_store_up %d\n",
                       h.state == SL__STORE_UP);
    if (ok && k != NULL && k->metrics != NULL)
        ok = k->metrics(stores, n, buf, cap, len);
    if (!ok) {
        *len = start;
        return 0;
    }
    return *len - start;
}

size_t sl__store_status_render(struct sl__store *const *stores, unsigned n, char *buf, size_t cap,
                               size_t *len)
{
    if (n == 0 || stores[0]->kind->status == NULL)
        return 0;
    return stores[0]->kind->status(stores, n, buf, cap, len);
}

bool sl__store_rules_shared(const struct sl__store_config *c)
{
    const struct sl__store_kind *k = kinds[c->type];

    return k->rules_shared != NULL && k->rules_shared(c->cfg[c->type]);
}

int sl__store_rules_publish(const struct sl__store_config *c, const char *id, const char *yaml,
                            size_t len, uint64_t *version)
{
    if (!sl__store_rules_shared(c))
        return SL_EINVAL;
    return kinds[c->type]->rules_publish(c->cfg[c->type], id, yaml, len, version);
}

int sl__store_rules_subscribe(const struct sl__store_config *c, uv_loop_t *loop,
                              const char *db_path, void (*on_change)(void *arg), void *arg,
                              struct sl__store_rules_sub **out)
{
    const struct sl__store_kind *k = kinds[c->type];
    struct sl__store_rules_sub *s;
    int rc;

    *out = NULL;
    if (!sl__store_rules_shared(c))
        return SL_OK;
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return SL_ENOMEM;
    s->kind = k;
    rc = k->rules_subscribe(c->cfg[c->type], loop, db_path, on_change, arg, &s->impl);
    if (rc != SL_OK) {
        free(s);
        return rc;
    }
    *out = s;
    return SL_OK;
}

void sl__store_rules_unsubscribe(struct sl__store_rules_sub *s)
{
    if (s == NULL)
        return;
    s->kind->rules_unsubscribe(s->impl);
    free(s);
}

/* ------------------------------------------------------------ a fleet's shared figures */

struct sl__store_fleet {
    const struct sl__store_kind *kind;
    void *impl;
};

int sl__store_fleet_open(const struct sl__store_config *c, struct sl__store_fleet **out)
{
    const struct sl__store_kind *k = kinds[c->type];
    struct sl__store_fleet *f;

    *out = NULL;
    if (k->fleet_open == NULL)
        return SL_OK;
    f = calloc(1, sizeof(*f));
    if (f == NULL)
        return SL_ENOMEM;
    f->kind = k;
    f->impl = k->fleet_open(c->cfg[c->type]);
    if (f->impl == NULL) {
        free(f);
        return SL_EINVAL;
    }
    *out = f;
    return SL_OK;
}

int sl__store_fleet_share(struct sl__store_fleet *f, const struct sl__store_fleet_put *p,
                          char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (f == NULL)
        return SL_EINVAL;
    return f->kind->fleet_share(f->impl, p, out, len);
}

void sl__store_fleet_close(struct sl__store_fleet *f)
{
    if (f == NULL)
        return;
    f->kind->fleet_close(f->impl);
    free(f);
}
