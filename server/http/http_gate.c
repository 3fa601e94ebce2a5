/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_gate.c - the admin endpoints' gate (http_gate.h): the listener, then
 * what keeps a web page in the operator's browser out - the Host header
 * (DNS rebinding), the Origin and Sec-Fetch-Site headers (cross-site
 * requests), the bearer token, and a JSON Content-Type on writes (an HTML
 * form or a "simple" fetch can only send text/plain, form-urlencoded or
 * multipart bodies without a CORS preflight, which sluiced never grants).
 *
 * The token compare takes the same time whatever the first differing byte
 * is, so timing does not reveal a prefix of the token; wrong tokens are
 * counted per client address (guard.h), and an address past
 * admin.max_failures is answered 429 before its token is looked at. It
 * does not route (http_api.c).
 */
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "conn.h"
#include "guard.h"
#include "http_gate.h"
#include "log.h"
#include "privilege.h"
#include "server-t.h"
#include "worker-t.h"

bool sl__gate_listener(const struct sl__conn *c)
{
    return c->ls->admin_paths;
}

bool sl__gate_token_ok(const char *token, const char *authorization, size_t len)
{
    if (token == NULL) /* never: the server starts with a token (token.h) */
        return false;
    if (len < 7 || strncasecmp(authorization, "Bearer ", 7) != 0)
        return false;
    authorization += 7;
    len -= 7;
    while (len > 0 && authorization[0] == ' ') {
        authorization++;
        len--;
    }
    return sl__token_equal(token, authorization, len);
}

/* ------------------------------------------------------------ Host */

static bool same(struct sl_str a, const char *b)
{
    return b != NULL && a.len == strlen(b) && strncasecmp(a.p, b, a.len) == 0;
}

bool sl__gate_split_host(struct sl_str v, struct sl_str *host, struct sl_str *port)
{
    const char *end = v.p + v.len, *h = v.p, *he;
    unsigned number = 0; /* the port's; at most 5 digits, no overflow */

    if (v.len == 0)
        return false;
    if (v.p[0] == '[') {
        he = memchr(v.p, ']', v.len);
        if (he == NULL)
            return false;
        h = v.p + 1;
        *port = (struct sl_str){he + 1, (size_t)(end - he - 1)};
    } else {
        he = memchr(v.p, ':', v.len);
        he = he != NULL ? he : end;
        *port = (struct sl_str){he, (size_t)(end - he)};
    }
    *host = (struct sl_str){h, (size_t)(he - h)};
    if (host->len == 0 || (port->len > 0 && (port->p[0] != ':' || port->len < 2 || port->len > 6)))
        return false;
    for (size_t i = 1; i < port->len; i++) {
        if (port->p[i] < '0' || port->p[i] > '9')
            return false;
        number = number * 10 + (unsigned)(port->p[i] - '0');
    }
    /* no TCP connection arrives on port 0 or above 65535: a Host naming
     * one was not written by a browser that reached this listener */
    return port->len == 0 || (number >= 1 && number <= 65535);
}

static bool is_loopback(const char *a)
{
    return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0 ||
           strncmp(a, "::ffff:127.", 11) == 0;
}

bool sl__gate_host_ok(struct sl_str value, const struct sl__gate_names *n)
{
    struct sl_str host, port;
    const char *local = n->local;

    if (!sl__gate_split_host(value, &host, &port))
        return false;
    if (local != NULL && strncmp(local, "::ffff:", 7) == 0 && strchr(local, '.') != NULL)
        local += 7; /* an IPv4 client of a dual-stack listener */
    if (same(host, n->listener) || same(host, local))
        return true;
    if (same(host, "localhost") && local != NULL && is_loopback(local))
        return true;
    for (size_t i = 0; i < n->n_hosts; i++)
        if (same(host, n->hosts[i]))
            return true;
    return false;
}

/* ------------------------------------------------------------ Origin */

/* v without ":PORT" when PORT is the scheme's default. */
static struct sl_str no_default_port(struct sl_str v, bool https)
{
    const char *d = https ? ":443" : ":80";
    size_t n = strlen(d);

    if (v.len > n && memcmp(v.p + v.len - n, d, n) == 0 && v.p[v.len - n - 1] != ':')
        v.len -= n;
    return v;
}

bool sl__gate_origin_ok(struct sl_str origin, struct sl_str host)
{
    bool https = origin.len >= 8 && strncasecmp(origin.p, "https://", 8) == 0;
    size_t skip = https ? 8 : 7;
    struct sl_str a, h;

    if (!https && (origin.len < 7 || strncasecmp(origin.p, "http://", 7) != 0))
        return false; /* "null" (a sandboxed or file: page) or another scheme */
    a = no_default_port((struct sl_str){origin.p + skip, origin.len - skip}, https);
    h = no_default_port(host, https);
    return a.len > 0 && a.len == h.len && strncasecmp(a.p, h.p, a.len) == 0;
}

/* ------------------------------------------------------------ Content-Type */

bool sl__gate_json_type(struct sl_str v)
{
    size_t n = 0;

    while (n < v.len && v.p[n] != ';')
        n++;
    while (n > 0 && (v.p[n - 1] == ' ' || v.p[n - 1] == '\t'))
        n--;
    return n == 16 && strncasecmp(v.p, "application/json", 16) == 0;
}

/* ------------------------------------------------------------ the gate */

/* The names this connection's Host may carry; `local` is filled in buf. */
static void names_of(struct sl__conn *c, struct sl__gate_names *n, char *buf, size_t cap)
{
    const struct sl__config *cfg = &c->w->srv->cfg;
    struct sockaddr_storage ss;
    int len = sizeof(ss);

    /* a wildcard is no address a client reaches: the local address says which */
    n->listener = strcmp(c->ls->address, "0.0.0.0") == 0 || strcmp(c->ls->address, "::") == 0
                      ? NULL
                      : c->ls->address;
    n->local = NULL;
    n->hosts = (const char *const *)cfg->admin_hosts;
    n->n_hosts = cfg->n_admin_hosts;
    if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET && uv_ip4_name((struct sockaddr_in *)&ss, buf, cap) == 0)
        n->local = buf;
    else if (ss.ss_family == AF_INET6 && uv_ip6_name((struct sockaddr_in6 *)&ss, buf, cap) == 0)
        n->local = buf;
}

static bool refuse_with(struct sl__conn *c, const struct sl__h1_req *r, int status, const char *hdr,
                        const char *body)
{
    sl__dbg("admin.refused", "admin gate: %d for %.*s", status, (int)r->path.len, r->path.p);
    sl__h1_respond(c, -1, r->keep_alive, status, hdr, hdr != NULL ? strlen(hdr) : 0, body,
                   strlen(body));
    return false;
}

static bool refuse(struct sl__conn *c, const struct sl__h1_req *r, int status, const char *body)
{
    return refuse_with(c, r, status,
                       status == 401 ? "WWW-Authenticate: Bearer realm=\"sluiced\"\r\n" : NULL,
                       body);
}

/* A write that carries (or should carry) a body. */
static bool takes_body(const struct sl__h1_req *r)
{
    return r->method == HTTP_POST || r->method == HTTP_PUT || r->method == HTTP_PATCH ||
           (r->method != HTTP_GET && r->body.len > 0);
}

bool sl__gate_admin(struct sl__conn *c, const struct sl__h1_req *r)
{
    struct sl__gate_names names;
    struct sl_str host, origin, site, type;
    char local[64];
    int64_t wait_s;

    if (!sl__gate_listener(c))
        return refuse(c, r, 404, "{\"error\":\"no such endpoint\"}");
    names_of(c, &names, local, sizeof(local));
    if (!sl__h1_header(r, "host", &host) || !sl__gate_host_ok(host, &names))
        return refuse(c, r, 421,
                      "{\"error\":\"the Host header is neither this listener's address nor a "
                      "name in admin.hosts\"}");
    if ((sl__h1_header(r, "origin", &origin) && !sl__gate_origin_ok(origin, host)) ||
        (sl__h1_header(r, "sec-fetch-site", &site) && !same(site, "same-origin") &&
         !same(site, "none")))
        return refuse(c, r, 403,
                      "{\"error\":\"the admin endpoints refuse requests from another origin (a "
                      "web page)\"}");
    if (!sl__conn_cert_admin(c)) { /* a listed client certificate stands for the token */
        if ((wait_s = sl__guard_wait_s(c)) > 0) {
            char body[200], hdr[48];
            snprintf(body, sizeof(body),
                     "{\"error\":\"too many wrong admin credentials from this address "
                     "(admin.max_failures): try again in %lld s\"}",
                     (long long)wait_s);
            snprintf(hdr, sizeof(hdr), "Retry-After: %lld\r\n", (long long)wait_s);
            return refuse_with(c, r, 429, hdr, body);
        }
        if (!sl__gate_token_ok(c->w->srv->cfg.admin_token, r->authorization.p,
                               r->authorization.len)) {
            sl__guard_failed(c);
            return refuse(c, r, 401,
                          "{\"error\":\"this endpoint needs Authorization: Bearer TOKEN (the "
                          "admin.token, or the first line of admin.token_file, or a client "
                          "certificate named in admin.client_cert_names)\"}");
        }
    }
    if (takes_body(r) && (!sl__h1_header(r, "content-type", &type) || !sl__gate_json_type(type)))
        return refuse(c, r, 415,
                      "{\"error\":\"admin writes need Content-Type: application/json\"}");
    return true;
}
