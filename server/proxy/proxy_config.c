/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_config.c - the `proxy:` configuration section: the defaults every
 * route inherits (a key table, printed by --help), the list of routes with
 * their upstream servers (parsed here, errors at file:line:col), and the
 * checks made once the whole file is read (a proxy listener needs routes,
 * and may not share its port with `http1`, whose sniffer claims the same
 * bytes).
 *
 * It resolves server names once, at start (getaddrinfo), and opens no
 * connection.
 */
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "proto_name.h"
#include "proxy-t.h"
#include "proxy.h"
#include "proxy_int.h"
#include "tls_client.h"
#include "xalloc.h"

#define F(member) SL__KF(struct sl__proxy_config, member)

static const struct sl__key keys[] = {
    {"proxy.connect_timeout", SL__K_DUR_MS, F(connect_timeout_ms), "5s",
     "routes' default: time to open a connection to an upstream server"},
    {"proxy.read_timeout", SL__K_DUR_MS, F(read_timeout_ms), "60s",
     "routes' default: longest wait between two reads of a response (504)"},
    {"proxy.send_timeout", SL__K_DUR_MS, F(send_timeout_ms), "60s",
     "routes' default: longest wait for a write to make progress"},
    {"proxy.max_body_bytes", SL__K_SIZE, F(max_body_bytes), "1MiB",
     "routes' default: largest request body (413); 0 = unlimited"},
    {"proxy.max_fails", SL__K_UINT, F(max_fails), "1",
     "upstreams' default: failures within fail_timeout that take a server out", .max = 1000000},
    {"proxy.fail_timeout", SL__K_DUR_MS, F(fail_timeout_ms), "10s",
     "upstreams' default: that window, and how long a failed server is skipped"},
    {"proxy.keepalive", SL__K_UINT, F(keepalive), "32",
     "upstreams' default: idle connections kept per server and worker", .max = 1000000},
    {"proxy.keepalive_timeout", SL__K_DUR_MS, F(keepalive_timeout_ms), "60s",
     "an idle upstream connection is closed after this"},
    {"proxy.via", SL__K_STR, F(via), "sluice", "the name this proxy gives itself in Via headers"},
    {"proxy.max_delay", SL__K_DUR_MS, F(max_delay_ms), "1s",
     "routes' default: longest delay a request is held for; longer is denied"},
    {"proxy.max_queue", SL__K_UINT, F(max_queue), "1024",
     "routes' default: requests held for their delay per worker; more are denied", .max = 1000000},
    {"proxy.deny_status", SL__K_UINT, F(deny_status), "429",
     "routes' default: the status of a denial", .min = 400, .max = 599},
    {"proxy.deny_body", SL__K_CHOICE, F(deny_body), "problem",
     "routes' default: problem (RFC 9457) | envelope | text", .choices = sl__proxy_deny_body_names},
    {"proxy.deny_text", SL__K_STR, F(deny_text), NULL,
     "routes' default: the body of a denial with deny_body: text"},
    {"proxy.client_header", SL__K_CHOICE, F(client_header), "x-forwarded-for",
     "x-forwarded-for | forwarded: read from trusted_proxies' requests",
     .choices = sl__proxy_client_header_names},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

#define R(member) SL__KF(struct sl__proxy_route, member)
static const struct sl__key route_keys[] = {
    {"name", SL__K_STR, R(name), NULL, ""},
    {"host", SL__K_STR, R(host), NULL, ""},
    {"path_prefix", SL__K_STR, R(path_prefix), NULL, ""},
    {"connect_timeout", SL__K_DUR_MS, R(connect_timeout_ms), NULL, ""},
    {"read_timeout", SL__K_DUR_MS, R(read_timeout_ms), NULL, ""},
    {"send_timeout", SL__K_DUR_MS, R(send_timeout_ms), NULL, ""},
    {"max_body_bytes", SL__K_SIZE, R(max_body_bytes), NULL, ""},
};
#define NROUTE_KEYS (sizeof(route_keys) / sizeof(route_keys[0]))

#define U(member) SL__KF(struct sl__proxy_upstream, member)
static const struct sl__key up_keys[] = {
    {"max_fails", SL__K_UINT, U(max_fails), NULL, "", .max = 1000000},
    {"fail_timeout", SL__K_DUR_MS, U(fail_timeout_ms), NULL, ""},
    {"keepalive", SL__K_UINT, U(keepalive), NULL, "", .max = 1000000},
};
#define NUP_KEYS (sizeof(up_keys) / sizeof(up_keys[0]))

/* ------------------------------------------------------------ servers */

/* "host:port" or "[v6]:port" into srv; a message on failure. */
static const char *parse_server(const char *s, struct sl__proxy_server *srv)
{
    char host[256];
    const char *port, *end;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
    size_t n;
    uint64_t portnum;

    if (strlen(s) >= sizeof(srv->name))
        return "a server is host:port (too long)";
    if (s[0] == '[') {
        end = strchr(s, ']');
        if (end == NULL || end[1] != ':')
            return "an IPv6 server is [address]:port";
        port = end + 2;
        n = (size_t)(end - s - 1);
        s++;
    } else {
        end = strrchr(s, ':');
        if (end == NULL || memchr(s, ':', (size_t)(end - s)) != NULL)
            return "a server is host:port, or [IPv6 address]:port";
        port = end + 1;
        n = (size_t)(end - s);
    }
    if (n == 0 || n >= sizeof(host) || sl__keytab_parse_u64(port, 65535, &portnum) != 0 ||
        portnum == 0)
        return "a server is host:port with a port from 1 to 65535";
    memcpy(host, s, n);
    host[n] = '\0';
    memcpy(srv->host, host, n + 1); /* n < strlen(s) < sizeof(srv->host), checked above */
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL)
        return "cannot resolve this server's host";
    memcpy(&srv->addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return NULL;
}

static int load_servers(struct sl__config_ctx *x, struct sl__proxy_upstream *up, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);
    const char *why;
    int r = 0;

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "servers must be a list, e.g. [127.0.0.1:8080]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        const char *s = sl__config_scalar(n);
        if (s == NULL) {
            r = sl__config_fail(x, n, "a server is host:port");
            continue;
        }
        if (up->n_servers == SL__PROXY_MAX_SERVERS)
            return sl__config_fail(x, n, "at most %d servers per upstream", SL__PROXY_MAX_SERVERS);
        struct sl__proxy_server *srv = &up->servers[up->n_servers];
        if ((why = parse_server(s, srv)) != NULL) {
            r = sl__config_fail(x, n, "%s (got '%s')", why, s);
            continue;
        }
        snprintf(srv->name, sizeof(srv->name), "%s", s);
        up->n_servers++;
    }
    if (r == 0 && up->n_servers == 0)
        return sl__config_fail(x, v, "an upstream needs at least one server");
    return r;
}

/* ------------------------------------------------------------ routes */

/* A key of `table` into `base`: 0, -1 (said why), or 1 when the key is not
 * one of the table's (a key that is no scalar is said wrong here: YAML
 * allows a list or a mapping as a key). */
static int set_key(struct sl__config_ctx *x, const struct sl__key *table, size_t n, void *base,
                   yaml_node_t *k, yaml_node_t *v)
{
    const char *ks = sl__config_scalar(k);
    const struct sl__key *key;
    char msg[256];

    if (ks == NULL)
        return sl__config_fail(x, k, "a key is a name, not a list or a mapping");
    key = sl__keytab_find(table, n, ks);
    if (key == NULL)
        return 1;
    if (sl__config_scalar(v) == NULL)
        return sl__config_fail(x, v, "%s must be a scalar", key->path);
    if (sl__keytab_set(key, base, sl__config_scalar(v), NULL, msg, sizeof(msg)) != 0)
        return sl__config_fail(x, v, "%s", msg);
    return 0;
}

static int load_upstream(struct sl__config_ctx *x, struct sl__proxy_upstream *up, yaml_node_t *m)
{
    yaml_document_t *doc = sl__config_doc(x);
    bool has_servers = false;
    int failed = 0;

    if (m->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, m, "upstream is a mapping: {servers: [host:port, ...]}");
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *ks = sl__config_scalar(k);
        int r;
        if (ks != NULL && strcmp(ks, "servers") == 0) {
            r = load_servers(x, up, v);
            has_servers = true;
        } else if (ks != NULL && strcmp(ks, "tls") == 0) {
            sl__tls_client_free(up->tls); /* a key given twice: the last one */
            r = sl__tls_client_load(x, v, "upstream.tls", &up->tls);
        } else if ((r = set_key(x, up_keys, NUP_KEYS, up, k, v)) == 1) {
            r = sl__config_fail(x, k,
                                "unknown upstream key '%s' (servers, max_fails, fail_timeout, "
                                "keepalive, tls)",
                                ks ? ks : "?");
        }
        if (r != 0)
            failed = -1; /* and on: every error in one run */
    }
    if (!has_servers)
        return sl__config_fail(x, m, "an upstream needs servers: [host:port, ...]");
    return failed;
}

static int load_methods(struct sl__config_ctx *x, struct sl__proxy_route *r, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);
    int rc = 0;

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "methods must be a list, e.g. [GET, POST]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        const char *s = sl__config_scalar(n);
        if (s == NULL || *s == '\0' || strlen(s) > 15 ||
            strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-") != strlen(s)) {
            rc = sl__config_fail(x, n, "a method is an upper-case word like GET");
            continue;
        }
        if (r->n_methods == SL__PROXY_MAX_METHODS)
            return sl__config_fail(x, n, "at most %d methods", SL__PROXY_MAX_METHODS);
        r->methods[r->n_methods++] = sl__xstrndup(s, strlen(s));
    }
    return rc;
}

/* upgrades: [websocket, ...] - protocol names (tokens), stored lower case. */
static int load_upgrades(struct sl__config_ctx *x, struct sl__proxy_route *r, yaml_node_t *v)
{
    static const char tchar[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "!#$%&'*+-.^_`|~";
    yaml_document_t *doc = sl__config_doc(x);
    int rc = 0;

    r->upgrades_set = true;
    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v,
                               "upgrades must be a list of protocols, e.g. [websocket], "
                               "or [] for none");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        const char *s = sl__config_scalar(n);
        size_t len = s != NULL ? strlen(s) : 0;
        if (len == 0 || len > 31 || strspn(s, tchar) != len) {
            rc = sl__config_fail(x, n,
                                 "an upgrade is a protocol name like websocket (a token "
                                 "of at most 31 characters, without a version)");
            continue;
        }
        if (strcasecmp(s, "h2c") == 0) {
            rc = sl__config_fail(x, n,
                                 "h2c cannot be tunnelled: its HTTP/2 requests would pass "
                                 "the proxy's routes and limits");
            continue;
        }
        if (r->n_upgrades == SL__PROXY_MAX_UPGRADES)
            return sl__config_fail(x, n, "at most %d upgrades", SL__PROXY_MAX_UPGRADES);
        char *low = sl__xstrndup(s, len);
        for (char *c = low; *c != '\0'; c++)
            *c = (char)tolower((unsigned char)*c);
        r->upgrades[r->n_upgrades++] = low;
    }
    return rc;
}

static void route_init(struct sl__proxy_route *r, const yaml_node_t *m)
{
    memset(r, 0, sizeof(*r));
    r->connect_timeout_ms = r->read_timeout_ms = r->send_timeout_ms = SL__PROXY_UNSET_MS;
    r->max_body_bytes = SL__PROXY_UNSET_SIZE;
    r->up.max_fails = r->up.keepalive = SL__PROXY_UNSET_U;
    r->up.fail_timeout_ms = SL__PROXY_UNSET_MS;
    sl__proxy_limit_init(&r->lim);
    r->line = m->start_mark.line + 1;
    r->col = m->start_mark.column + 1;
}

static int load_route(struct sl__config_ctx *x, struct sl__proxy_route *r, yaml_node_t *m)
{
    yaml_document_t *doc = sl__config_doc(x);
    bool has_up = false;
    int failed = 0;

    if (m->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, m, "a route is a mapping: {path_prefix, upstream: {servers}}");
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *ks = sl__config_scalar(k);
        int rc;
        if (ks != NULL && strcmp(ks, "upstream") == 0) {
            rc = load_upstream(x, &r->up, v);
            has_up = true;
        } else if (ks != NULL && strcmp(ks, "methods") == 0) {
            rc = load_methods(x, r, v);
        } else if (ks != NULL && strcmp(ks, "upgrades") == 0) {
            rc = load_upgrades(x, r, v);
        } else if (ks != NULL && strcmp(ks, "adaptive_concurrency") == 0) {
            rc = sl__proxy_adaptive_load(x, r, v);
        } else if ((rc = set_key(x, route_keys, NROUTE_KEYS, r, k, v)) == 1 &&
                   (ks == NULL || (rc = sl__proxy_limit_key(x, &r->lim, ks, v)) == 1)) {
            rc = sl__config_fail(x, k,
                                 "unknown route key '%s' (name, host, path_prefix, methods, "
                                 "upgrades, upstream, connect_timeout, read_timeout, send_timeout, "
                                 "max_body_bytes, domain, rate_limits, max_delay, max_queue, "
                                 "deny_status, deny_body, deny_text, headers, "
                                 "adaptive_concurrency)",
                                 ks ? ks : "?");
        }
        if (rc != 0)
            failed = -1; /* and on: every error in one run */
    }
    if (!has_up)
        failed = sl__config_fail(x, m, "a route needs an upstream: {servers: [host:port]}");
    if (r->path_prefix != NULL && r->path_prefix[0] != '/')
        failed = sl__config_fail(x, m, "path_prefix must start with '/'");
    return failed;
}

static void route_free(struct sl__proxy_route *r)
{
    sl__keytab_free(route_keys, NROUTE_KEYS, r);
    for (size_t i = 0; i < r->n_methods; i++)
        free(r->methods[i]);
    for (size_t i = 0; i < r->n_upgrades; i++)
        free(r->upgrades[i]);
    sl__proxy_limit_free(&r->lim);
    sl__proxy_adaptive_free(r->ad);
    r->ad = NULL;
    sl__tls_client_free(r->up.tls);
    r->up.tls = NULL;
}

static int load_routes(struct sl__proxy_config *pc, struct sl__config_ctx *x, yaml_node_t *v)
{
    yaml_document_t *doc = sl__config_doc(x);
    int failed = 0;

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "proxy.routes must be a list of routes");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *m = yaml_document_get_node(doc, *it);
        if (pc->n_routes == SL__PROXY_MAX_ROUTES)
            return sl__config_fail(x, m, "at most %d routes", SL__PROXY_MAX_ROUTES);
        pc->routes = sl__xrealloc(pc->routes, (pc->n_routes + 1) * sizeof(*pc->routes));
        struct sl__proxy_route *r = &pc->routes[pc->n_routes++];
        route_init(r, m);
        if (load_route(x, r, m) != 0)
            failed = -1; /* and on to the next route */
    }
    return failed;
}

static int load(void *cfg, struct sl__config_ctx *x, const char *path, yaml_node_t *v)
{
    if (strcmp(path, "proxy.routes") == 0)
        return load_routes(cfg, x, v) == 0 ? 0 : -1;
    if (strcmp(path, "proxy.trusted_proxies") == 0)
        return sl__proxy_trusted_load(x, cfg, v) == 0 ? 0 : -1;
    return 1;
}

/* ------------------------------------------------------------ the whole file */

/* Unset route values from the section's defaults; names by position. */
static void complete_route(const struct sl__proxy_config *pc, struct sl__proxy_route *r, size_t i)
{
    char name[24];

    if (r->connect_timeout_ms == SL__PROXY_UNSET_MS)
        r->connect_timeout_ms = pc->connect_timeout_ms;
    if (r->read_timeout_ms == SL__PROXY_UNSET_MS)
        r->read_timeout_ms = pc->read_timeout_ms;
    if (r->send_timeout_ms == SL__PROXY_UNSET_MS)
        r->send_timeout_ms = pc->send_timeout_ms;
    if (r->max_body_bytes == SL__PROXY_UNSET_SIZE)
        r->max_body_bytes = pc->max_body_bytes;
    if (r->up.max_fails == SL__PROXY_UNSET_U)
        r->up.max_fails = pc->max_fails;
    if (r->up.fail_timeout_ms == SL__PROXY_UNSET_MS)
        r->up.fail_timeout_ms = pc->fail_timeout_ms;
    if (r->up.keepalive == SL__PROXY_UNSET_U)
        r->up.keepalive = pc->keepalive;
    if (r->name == NULL) {
        snprintf(name, sizeof(name), "#%zu", i + 1);
        r->name = sl__xstrndup(name, strlen(name));
    }
    if (r->path_prefix == NULL)
        r->path_prefix = sl__xstrndup("/", 1);
    if (!r->upgrades_set && r->n_upgrades == 0) /* WebSocket passes unless told otherwise */
        r->upgrades[r->n_upgrades++] = sl__xstrndup("websocket", 9);
}

static int check(void *cfg, const struct sl__config *c, struct sl__config_ctx *x)
{
    struct sl__proxy_config *pc = cfg;
    /* by name: the room's registration is its top file (proxy.c), which
     * this one must not call back (tests/layers/calls.py) */
    unsigned proxy = sl__proto_bit_named("proxy", 5);
    unsigned http1 = sl__proto_bit_named("http1", 5);
    const char *why;
    int r = SL_OK;

    for (size_t i = 0; i < pc->n_routes; i++) {
        struct sl__proxy_route *rt = &pc->routes[i];
        complete_route(pc, rt, i);
        if (sl__proxy_limit_complete(pc, c->http_headers, &rt->lim, &why) != SL_OK)
            r = sl__config_fail_at(x, rt->line, rt->col, "route '%s': %s", rt->name, why);
    }
    sl__proxy_adaptive_complete(pc);
    for (size_t i = 0; i < c->n_listeners; i++) {
        const struct sl__listener *l = &c->listeners[i];
        if (!(l->protos & proxy))
            continue;
        if (l->protos & http1)
            r = sl__config_fail_key(
                x, "listeners",
                "listener %s:%u: protocols [proxy] and [http1] cannot share a listener "
                "(both would claim every HTTP request); give each its own port",
                l->address, l->port);
        if (pc->n_routes == 0)
            r = sl__config_fail_key(x, "proxy.routes",
                                    "listener %s:%u speaks proxy but proxy.routes is empty: add a "
                                    "route with an upstream",
                                    l->address, l->port);
    }
    return r;
}

static void destroy(void *cfg)
{
    struct sl__proxy_config *pc = cfg;

    for (size_t i = 0; i < pc->n_routes; i++)
        route_free(&pc->routes[i]);
    free(pc->routes);
    pc->routes = NULL;
    pc->n_routes = 0;
    free(pc->trusted);
    pc->trusted = NULL;
    pc->n_trusted = 0;
}

static void help(FILE *out)
{
    sl__keytab_help_line(out, "proxy.routes", "[]",
                         "list of {name, host, path_prefix, methods, upstream,");
    sl__keytab_help_line(out, "", "",
                         "connect_timeout, read_timeout, send_timeout, max_body_bytes,");
    sl__keytab_help_line(out, "", "", "domain, rate_limits, max_delay, max_queue, deny_status,");
    sl__keytab_help_line(out, "", "", "deny_body, deny_text, headers, adaptive_concurrency},");
    sl__keytab_help_line(out, "", "", "matched in order; upstream: {servers: [host:port],");
    sl__keytab_help_line(out, "", "", "max_fails, fail_timeout, keepalive, tls: {ca_file,");
    sl__keytab_help_line(out, "", "", "server_name, verify, cert_file, key_file}};");
    sl__keytab_help_line(out, "", "", "rate_limits: [{actions: [...]}] (docs/proxy.md);");
    sl__keytab_help_line(out, "", "",
                         "adaptive_concurrency: {algorithm: gradient|gradient2|vegas|aimd,");
    sl__keytab_help_line(out, "", "", "its parameters, classes: {NAME: SHARE%, ...}, class_from:");
    sl__keytab_help_line(out, "", "",
                         "{header: NAME} | route, class, status, retry_after} (per worker)");
    sl__proxy_limit_help(out);
}

const struct sl__config_section sl__proxy_config_section = {
    .name = "proxy",
    .size = sizeof(struct sl__proxy_config),
    .keys = keys,
    .n_keys = NKEYS,
    .load = load,
    .check = check,
    .destroy = destroy,
    .help = help,
};
