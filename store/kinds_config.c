/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * kinds_config.c - the store layer's configuration: the table of kinds'
 * configurations, and store.h's sl__store_config_* functions over it (so
 * `store.type` may come after a kind's keys in the file).
 *
 * It makes no store and names no runtime function: `sluice check -c`
 * links it (the target sluice_store_conf) without an event loop or a Redis
 * client. The stores themselves are kinds.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds_int.h"

/* The memory store has no key of its own: the core's store.* keys size
 * the shared table it decides in. */
const struct sl__store_kind_config sl__store_kind_memory_config = {
    .name = "memory",
};

/* The first is the default of store.type. */
const struct sl__store_kind_config *const sl__store_kind_configs[SL__STORE_NKINDS] = {
    &sl__store_kind_memory_config,
    &sl__store_kind_redis_config,
    &sl__store_kind_hybrid_config,
};
#define NKINDS SL__STORE_NKINDS
static const struct sl__store_kind_config *const *const kinds = sl__store_kind_configs;

static const struct sl__key *table(const struct sl__store_kind_config *k, size_t *n)
{
    *n = 0;
    return k->keys != NULL ? k->keys(n) : NULL;
}

void sl__store_config_free(struct sl__store_config *c)
{
    if (c == NULL)
        return;
    if (c->drop_shared != NULL)
        c->drop_shared(c);
    for (size_t i = 0; i < NKINDS; i++) {
        if (c->cfg[i] == NULL)
            continue;
        size_t n;
        const struct sl__key *keys = table(kinds[i], &n);
        sl__keytab_free(keys, n, c->cfg[i]);
        if (kinds[i]->free_cfg != NULL)
            kinds[i]->free_cfg(c->cfg[i]);
        free(c->cfg[i]);
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
        const struct sl__store_kind_config *k = kinds[i];
        size_t n;
        const struct sl__key *keys = table(k, &n);
        c->cfg[i] = calloc(1, k->cfg_size ? k->cfg_size : 1);
        if (c->cfg[i] == NULL || sl__keytab_defaults(keys, n, c->cfg[i]) != 0) {
            sl__store_config_free(c);
            return SL_ENOMEM;
        }
        if (k->init != NULL)
            k->init(c->cfg[i]);
    }
    for (size_t i = 0; i < NKINDS; i++)
        for (size_t j = 0; kinds[i]->reads != NULL && j < NKINDS; j++)
            if (kinds[j] == kinds[i]->reads)
                kinds[i]->link(c->cfg[i], c->cfg[j]);
    *out = c;
    return SL_OK;
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
        const struct sl__store_kind_config *k = kinds[i];
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

int sl__store_config_section(struct sl__store_config *c, const char *key)
{
    for (size_t i = 0; i < NKINDS; i++) {
        const struct sl__store_kind_config *k = kinds[i];
        if (k->set != NULL) {
            char err[8];
            int rc = k->set(c->cfg[i], key, NULL, err, sizeof(err));
            if (rc != SL_ENOENT)
                return rc;
        }
    }
    return SL_OK;
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
    const struct sl__store_kind_config *k = kinds[c->type];

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
