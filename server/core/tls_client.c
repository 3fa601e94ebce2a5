/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_client.c - the `tls:` mapping of a client of this daemon (the
 * proxy's upstreams) read, and its context built once at start by
 * net/tlsc.c, which also holds the per-connection transform and says
 * what the context allows and why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-t.h"
#include "tls_client.h"
#include "xalloc.h"

/* ------------------------------------------------------------ configuration */

static char *path_in(const struct sl__config *c, const char *p)
{
    const char *slash = c->path ? strrchr(c->path, '/') : NULL;
    size_t dl = slash != NULL ? (size_t)(slash - c->path) : 0, pl = strlen(p);
    char *out;

    if (p[0] == '/' || dl == 0)
        return sl__xstrndup(p, pl);
    out = sl__xzalloc(dl + pl + 2);
    memcpy(out, c->path, dl);
    out[dl] = '/';
    memcpy(out + dl + 1, p, pl + 1);
    return out;
}

static int set_str(struct sl__config_ctx *x, yaml_node_t *v, const char *key, const char *name,
                   bool path, char **dst)
{
    const char *s = sl__config_scalar(v);

    if (s == NULL || *s == '\0')
        return sl__config_fail(x, v, "%s.%s must be a %s", key, name,
                               path ? "file path" : "non-empty string");
    free(*dst);
    *dst = path ? path_in(sl__config_of(x), s) : sl__xstrndup(s, strlen(s));
    return 0;
}

static int set_bool(struct sl__config_ctx *x, yaml_node_t *v, const char *key, bool *dst)
{
    const char *s = sl__config_scalar(v);

    if (s != NULL && (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "on") == 0))
        *dst = true;
    else if (s != NULL &&
             (strcmp(s, "false") == 0 || strcmp(s, "no") == 0 || strcmp(s, "off") == 0))
        *dst = false;
    else
        return sl__config_fail(x, v, "%s.verify must be true or false (got '%s')", key,
                               s ? s : "?");
    return 0;
}

/* The message of a context that could not be built, at the node of the
 * setting it is about. */
static int build(struct sl__config_ctx *x, struct sl__tls_client *t, const char *key,
                 yaml_node_t *const nodes[4])
{
    const struct sl__tlsc_conf c = {.ca_file = t->ca_file,
                                    .cert_file = t->cert_file,
                                    .key_file = t->key_file,
                                    .server_name = t->server_name,
                                    .verify = t->verify};
    enum sl__tlsc_field f;
    char why[400];

    t->cc = sl__tlsc_ctx_new(&c, why, sizeof(why), &f);
    if (t->cc == NULL)
        return sl__config_fail(x, nodes[f], "%s%s%s", key, f == SL__TLSC_F_NONE ? ": " : ".", why);
    return 0;
}

int sl__tls_client_load(struct sl__config_ctx *x, yaml_node_t *v, const char *key,
                        struct sl__tls_client **out)
{
    yaml_document_t *doc = sl__config_doc(x);
    struct sl__tls_client *t = sl__xzalloc(sizeof(*t));
    yaml_node_t *nodes[4] = {v, v, v, v}; /* by enum sl__tlsc_field */
    int failed = 0;

    *out = t;
    t->verify = true;
    if (v->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, v,
                               "%s is a mapping: {ca_file, server_name, verify, "
                               "cert_file, key_file}",
                               key);
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *val = yaml_document_get_node(doc, p->value);
        const char *ks = sl__config_scalar(k);
        int r;
        if (ks == NULL) {
            r = sl__config_fail(x, k, "a key is a name, not a list or a mapping");
        } else if (strcmp(ks, "ca_file") == 0) {
            nodes[SL__TLSC_F_CA] = val;
            r = set_str(x, val, key, ks, true, &t->ca_file);
        } else if (strcmp(ks, "cert_file") == 0) {
            nodes[SL__TLSC_F_CERT] = val;
            r = set_str(x, val, key, ks, true, &t->cert_file);
        } else if (strcmp(ks, "key_file") == 0) {
            nodes[SL__TLSC_F_KEY] = val;
            r = set_str(x, val, key, ks, true, &t->key_file);
        } else if (strcmp(ks, "server_name") == 0) {
            r = set_str(x, val, key, ks, false, &t->server_name);
        } else if (strcmp(ks, "verify") == 0) {
            r = set_bool(x, val, key, &t->verify);
        } else {
            r = sl__config_fail(x, k,
                                "unknown key '%s' in %s (ca_file, server_name, verify, "
                                "cert_file, key_file)",
                                ks, key);
        }
        if (r != 0)
            failed = SL_EINVAL; /* and on: every error in one run */
    }
    if (failed != 0)
        return failed;
    return build(x, t, key, nodes);
}

void sl__tls_client_free(struct sl__tls_client *t)
{
    if (t == NULL)
        return;
    sl__tlsc_ctx_free(t->cc);
    free(t->ca_file);
    free(t->server_name);
    free(t->cert_file);
    free(t->key_file);
    free(t);
}
