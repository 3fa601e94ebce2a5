/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * xds_config.c - the `rules.xds` configuration section (config.h): the
 * management server to subscribe to, the node's name, TLS to the server
 * (the same `tls:` mapping as the proxy's upstreams), and the reconnect
 * backoff. It does not connect (xds.c does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytab.h"
#include "tls_client.h"
#include "xds.h"

#define F(member) SL__KF(struct sl__xds_config, member)

static const struct sl__key keys[] = {
    {"rules.xds.server", SL__K_STR, F(server), NULL,
     "host:port of an xDS management server (ADS) serving RateLimitConfig resources; unset: "
     "no xDS"},
    {"rules.xds.node_id", SL__K_STR, F(node_id), NULL,
     "the node id sent to the management server (needed with rules.xds.server)"},
    {"rules.xds.cluster", SL__K_STR, F(cluster), NULL, "the node's cluster sent with its id"},
    {"rules.xds.backoff", SL__K_DUR_MS, F(backoff_ms), "500ms",
     "first wait before reconnecting after the stream or connection fails (doubles, jittered)"},
    {"rules.xds.max_backoff", SL__K_DUR_MS, F(max_backoff_ms), "30s",
     "longest wait between reconnection attempts"},
};

static int load(void *cfg, struct sl__config_ctx *x, const char *path, yaml_node_t *v)
{
    struct sl__xds_config *xc = cfg;

    if (strcmp(path, "rules.xds.tls") != 0)
        return 1;
    sl__tls_client_free(xc->tls); /* a key given twice: the last one */
    xc->tls = NULL;
    return sl__tls_client_load(x, v, "rules.xds.tls", &xc->tls) == 0 ? 0 : -1;
}

/* "host:port", "[v6]:port": into xc->host, xc->port. */
static bool split_server(struct sl__xds_config *xc)
{
    const char *s = xc->server, *colon = strrchr(s, ':'), *h = s;
    size_t hl;
    char *end;
    long port;

    if (colon == NULL || colon == s)
        return false;
    hl = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hl < 3 || s[hl - 1] != ']')
            return false;
        h = s + 1;
        hl -= 2;
    }
    if (hl >= sizeof(xc->host))
        return false;
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || colon[1] == '\0' || port < 1 || port > 65535)
        return false;
    memcpy(xc->host, h, hl);
    xc->host[hl] = '\0';
    xc->port = (unsigned)port;
    return true;
}

static int check(void *cfg, const struct sl__config *c, struct sl__config_ctx *x)
{
    struct sl__xds_config *xc = cfg;
    int r = SL_OK;

    (void)c;
    if (xc->server == NULL) {
        if (xc->node_id != NULL || xc->tls != NULL)
            r = sl__config_fail_key(x, "rules.xds", "rules.xds needs server (host:port)");
        return r;
    }
    if (!split_server(xc))
        r = sl__config_fail_key(x, "rules.xds.server",
                                "rules.xds.server is host:port (e.g. xds.internal:18000 or "
                                "[::1]:18000)");
    if (xc->node_id == NULL || xc->node_id[0] == '\0')
        r = sl__config_fail_key(x, "rules.xds.node_id",
                                "rules.xds.node_id is needed with rules.xds.server: the "
                                "management server picks the node's resources by it");
    if (xc->backoff_ms < 1 || xc->max_backoff_ms < xc->backoff_ms)
        r = sl__config_fail_key(x, "rules.xds.max_backoff",
                                "rules.xds.backoff must be at least 1ms and rules.xds.max_backoff "
                                "at least rules.xds.backoff");
    return r;
}

static void destroy(void *cfg)
{
    struct sl__xds_config *xc = cfg;

    sl__tls_client_free(xc->tls);
    xc->tls = NULL;
}

static void help(FILE *out)
{
    sl__keytab_help_line(out, "rules.xds.tls", "(none)",
                         "TLS to the management server: {ca_file, server_name, verify, "
                         "cert_file, key_file}");
}

const struct sl__config_section sl__xds_config_section = {
    .name = "rules.xds",
    .size = sizeof(struct sl__xds_config),
    .keys = keys,
    .n_keys = sizeof(keys) / sizeof(keys[0]),
    .load = load,
    .check = check,
    .destroy = destroy,
    .help = help,
};
