/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * kinds.c - the table of store kinds and store.h's functions over it: the
 * configuration of every kind (so `store.type` may come after a kind's
 * keys in the file), the choice of kind, and the dispatch to it.
 *
 * It decides nothing and does no I/O; each kind does its own. What is the
 * same for every kind is here: sluice_store_up in /metrics, and the
 * health view's type, state and why.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"
#include "store_log.h"

static const struct sl__store_kind *const kinds[] = {
    &sl__store_kind_memory,
    &sl__store_kind_redis,
    &sl__store_kind_hybrid,
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

struct sl__store_config {
    unsigned type;        /* index in kinds[] */
    void *cfg[NKINDS];    /* each kind's configuration */
    void *shared[NKINDS]; /* what each kind's stores share in the process */
    sl__store_log_fn log; /* the server's log, or NULL */
    void *log_arg;
};

static const struct sl__key *table(const struct sl__store_kind *k, size_t *n)
{
    *n = 0;
    return k->keys != NULL ? k->keys(n) : NULL;
}

struct sl__store_rules_sub {
    const struct sl__store_kind *kind;
    void *impl;
};

void sl__store_config_free(struct sl__store_config *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < NKINDS; i++) {
        if (c->cfg[i] == NULL)
            continue;
        size_t n;
        const struct sl__key *keys = table(kinds[i], &n);
        sl__keytab_free(keys, n, c->cfg[i]);
        if (kinds[i]->free_cfg != NULL)
            kinds[i]->free_cfg(c->cfg[i]);
        free(c->cfg[i]);
        if (c->shared[i] != NULL)
            kinds[i]->shared_free(c->shared[i]);
    }
    free(c);
}

int sl__store_config_new(struct sl__store_config **out)
{
    struct sl__store_config *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (c == NULL)
        return SL_ENOMEM;
    for (size_t i = 0; i < NKINDS; i++) {
        const struct sl__store_kind *k = kinds[i];
        size_t n;
        const struct sl__key *keys = table(k, &n);
        c->cfg[i] = calloc(1, k->cfg_size ? k->cfg_size : 1);
        if (c->cfg[i] == NULL || sl__keytab_defaults(keys, n, c->cfg[i]) != 0) {
            sl__store_config_free(c);
            return SL_ENOMEM;
        }
        if (k->init != NULL)
            k->init(c->cfg[i]);
        if (k->shared_new != NULL && (c->shared[i] = k->shared_new()) == NULL) {
            sl__store_config_free(c);
            return SL_ENOMEM;
        }
    }
    for (size_t i = 0; i < NKINDS; i++)
        for (size_t j = 0; kinds[i]->reads != NULL && j < NKINDS; j++)
            if (kinds[j] == kinds[i]->reads)
                kinds[i]->link(c->cfg[i], c->cfg[j]);
    *out = c;
    return SL_OK;
}

void sl__store_config_set_log(struct sl__store_config *c, sl__store_log_fn fn, void *arg)
{
    c->log = fn;
    c->log_arg = arg;
    sl__store_log_sink(fn, arg); /* for the rules subscriber (store_log.h) */
}

static int set_type(struct sl__store_config *c, const char *value, char *err, size_t errlen)
{
    size_t used = 0;

    for (unsigned i = 0; i < NKINDS; i++) {
        if (strcmp(kinds[i]->name, value) == 0) {
            c->type = i;
            return SL_OK;
        }
    }
    used = (size_t)snprintf(err, errlen, "store.type must be one of");
    for (unsigned i = 0; i < NKINDS && used < errlen; i++)
        used += (size_t)snprintf(err + used, errlen - used, "%s %s", i ? "," : "", kinds[i]->name);
    if (used < errlen)
        snprintf(err + used, errlen - used, " (got '%s')", value);
    return SL_EINVAL;
}

int sl__store_config_set(struct sl__store_config *c, const char *key, const char *value,
                         const char *dir, char *err, size_t errlen)
{
    if (strcmp(key, "store.type") == 0)
        return set_type(c, value, err, errlen);
    for (size_t i = 0; i < NKINDS; i++) {
        const struct sl__store_kind *k = kinds[i];
        size_t n;
        const struct sl__key *keys = table(k, &n);
        const struct sl__key *row = sl__keytab_find(keys, n, key);
        if (row != NULL)
            return sl__keytab_set(row, c->cfg[i], value, dir, err, errlen) == 0 ? SL_OK : SL_EINVAL;
        if (k->set != NULL) {
            int rc = k->set(c->cfg[i], key, value, err, errlen);
            if (rc != SL_ENOENT)
                return rc;
        }
    }
    return SL_ENOENT;
}

bool sl__store_config_is_section(const char *key)
{
    for (size_t i = 0; i < NKINDS; i++)
        for (const char *const *s = kinds[i]->sections; s != NULL && *s != NULL; s++)
            if (strcmp(*s, key) == 0)
                return true;
    return false;
}

const char *sl__store_config_type(const struct sl__store_config *c)
{
    return kinds[c->type]->name;
}

int sl__store_config_check(const struct sl__store_config *c, char *err, size_t errlen)
{
    const struct sl__store_kind *k = kinds[c->type];

    return k->check != NULL ? k->check(c->cfg[c->type], err, errlen) : SL_OK;
}

void sl__store_config_help(FILE *out)
{
    char names[128];
    size_t used = 0;

    for (size_t i = 0; i < NKINDS && used < sizeof(names); i++)
        used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? " | " : "",
                                 kinds[i]->name);
    sl__keytab_help_line(out, "store.type", kinds[0]->name, names);
    for (size_t i = 0; i < NKINDS; i++) {
        size_t n;
        const struct sl__key *keys = table(kinds[i], &n);
        sl__keytab_help(keys, n, out);
        if (kinds[i]->help != NULL)
            kinds[i]->help(out);
    }
}

int sl__store_new(const struct sl__store_config *c, uv_loop_t *loop, sl_limiter *lim,
                  struct sl__store **out)
{
    const struct sl__store_kind *k = kinds[c->type];
    struct sl__store_env env = {loop, lim, c->log, c->log_arg, c->shared[c->type]};
    int rc = k->create(c->cfg[c->type], &env, out);

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
    ok = ok && sl__store_put_json_str(buf, cap, len, k != NULL ? k->name : "none");
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
