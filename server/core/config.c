/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * config.c - sluiced's YAML configuration: a table of keys (dotted paths)
 * with their type, default and meaning, a walk over the YAML document that
 * sets them, and the --help text made from the same table.
 *
 * It does not start anything and does not read rules files: it only records
 * their paths (resolved against the configuration file's directory).
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

#include "config.h"
#include "keytab.h"
#include "log.h"
#include "proto_name.h"
#include "regular.h"
#include "store.h"
#include "tls.h"
#include "xalloc.h"

static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};
static const char *const on_full_names[] = {"evict", "deny", NULL};
static const char *const style_names[] = {"ratelimit", "ietf", NULL};
static const char *const access_names[] = {"off", "combined", "json", NULL};
static const char *const format_names[] = {"text", "json", NULL};
static const char *const readyz_names[] = {"decisions", "store", NULL};
static const char *const io_names[] = {"auto", "on", "off", NULL};

#define F(member) SL__KF(struct sl__config, member)

/* Every scalar key of the server core: its default is applied through the
 * same parser as a file's value (sl__config_init), so the default written
 * here is the one in force, the one --help prints and the one
 * docs/configuration.md must show (a test compares them). */
static const struct sl__key keys[] = {
    {"workers", SL__K_UINT, F(workers), "0", "worker threads; 0 = one per core", .max = 1u << 24},
    {"rules.database", SL__K_PATH, F(rules_db), NULL, "SQLite rules database to merge in"},
    {"rules.watch", SL__K_BOOL, F(rules_watch), "true", "reload when a rules file changes"},
    {"rules.shadow_mode", SL__K_BOOL, F(rules_shadow_mode), "false",
     "global shadow mode: every domain counted, nothing enforced (the \"*\" kill switch)"},
    {"rules.debounce", SL__K_DUR_MS, F(rules_debounce_ms), "200ms",
     "wait this long after a change before reloading; a file must hold still this long"},
    {"rules.allow_empty", SL__K_BOOL, F(rules_allow_empty), "false",
     "accept a rules file with no rules or a domain with no descriptors (else refused)"},
    {"store.max_bytes", SL__K_SIZE, F(store_max_bytes), "64MiB",
     "hard memory cap of the state table (k/KiB, M/MiB, G/GiB suffixes)"},
    {"store.shards", SL__K_UINT, F(store_shards), "0",
     "table shards (power of two); 0 = from the cap", .max = 1u << 24},
    {"store.on_full", SL__K_CHOICE, F(store_on_full), "evict", "evict | deny new keys when full",
     .choices = on_full_names},
    {"server.max_connections", SL__K_UINT, F(max_connections), "10000",
     "open connections, all workers", .max = 1u << 24},
    {"server.max_frame_bytes", SL__K_SIZE, F(max_frame_bytes), "1MiB",
     "largest request; a bigger one closes its connection"},
    {"server.idle_timeout", SL__K_DUR_MS, F(idle_timeout_ms), "300s",
     "close a silent connection after this; 0s = never"},
    {"server.read_timeout", SL__K_DUR_MS, F(read_timeout_ms), "10s",
     "close a connection stuck inside one request this long; 0s = never"},
    {"server.write_timeout", SL__K_DUR_MS, F(write_timeout_ms), "10s",
     "close a connection whose replies have not been read this long; 0s = never"},
    {"server.header_timeout", SL__K_DUR_MS, F(header_timeout_ms), "10s",
     "close a new connection that sent nothing this long; 0s = never"},
    {"server.max_buffer_bytes", SL__K_SIZE, F(max_buffer_bytes), "256MiB",
     "every connection's buffers together; past it, frames above 64KiB close their connection "
     "and gRPC calls needing more than 64KiB per connection are refused"},
    {"server.max_connections_per_ip", SL__K_UINT, F(max_conns_per_ip), "0",
     "open connections from one client address; 0 = no limit", .max = 1u << 24},
    {"server.ipv6_client_prefix", SL__K_UINT, F(ipv6_client_prefix), "64",
     "IPv6 prefix bits that make one client for max_connections_per_ip and "
     "admin.max_failures",
     .min = 1, .max = 128},
    {"server.user", SL__K_STR, F(user), NULL,
     "started as root: switch to this user once the listeners are bound"},
    {"server.shutdown_grace", SL__K_DUR_MS, F(shutdown_grace_ms), "5s",
     "on SIGTERM, how long in-flight replies may take"},
    {"server.io_uring", SL__K_CHOICE, F(io_uring), "auto",
     "auto | on | off: connections' reads and writes through io_uring (auto: where the kernel "
     "allows it, else libuv's readiness loop; on: refuse to start without it)",
     .choices = io_names},
    {"log.level", SL__K_CHOICE, F(log_level), "info", "error | warn | info | debug",
     .choices = level_names},
    {"log.format", SL__K_CHOICE, F(log_format), "text",
     "text | json: sluiced's log lines on stderr, each naming its event", .choices = format_names},
    {"log.access", SL__K_CHOICE, F(log_access), "off",
     "off | combined | json: one line per proxied request on stdout", .choices = access_names},
    {"admin.token", SL__K_STR, F(admin_token), NULL,
     "bearer token the admin endpoints require (Authorization: Bearer ...); else admin.token_file"},
    {"admin.token_file", SL__K_PATH, F(admin_token_file), NULL,
     "the token's file (first line), created with a random token (mode 0600) when absent; "
     "default: admin.token beside rules.database, else beside this file, else in the working "
     "directory",
     .shown = "(computed)"},
    {"admin.max_failures", SL__K_UINT, F(admin_max_failures), "10",
     "wrong admin credentials one client address may present a minute (that many at once); past "
     "them its admin requests are refused unread until a try comes back; 0 = no limit",
     .max = 1u << 20},
    {"http.max_delay", SL__K_DUR_MS, F(http_max_delay_ms), "1s",
     "GET /v1/auth holds a delayed answer up to this; longer delays are denials"},
    {"envoy.response_headers", SL__K_BOOL, F(envoy_headers), "false",
     "Envoy's answers carry rate-limit headers (response_headers_to_add)"},
    {"envoy.header_style", SL__K_CHOICE, F(envoy_header_style), "ratelimit",
     "ratelimit: the three names below; ietf: RateLimit-Policy and RateLimit",
     .choices = style_names},
    {"envoy.header_names.limit", SL__K_STR, F(envoy_header_limit), "RateLimit-Limit",
     "header with the limit's requests per unit"},
    {"envoy.header_names.remaining", SL__K_STR, F(envoy_header_remaining), "RateLimit-Remaining",
     "header with the requests left"},
    {"envoy.header_names.reset", SL__K_STR, F(envoy_header_reset), "RateLimit-Reset",
     "header with the seconds until the limit resets"},
    {"http.readyz", SL__K_CHOICE, F(readyz), "decisions",
     "decisions: /readyz 200 while checks are decided (by the store, or a local/allow failure "
     "policy: 'degraded'); store: only while the store decides",
     .choices = readyz_names},
    {"metrics.max_series", SL__K_UINT, F(metrics_max_series), "1000",
     "distinct (domain, limit) label sets per worker; more count as __overflow__", .min = 1,
     .max = 1u << 24},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The mappings a configuration file may nest keys under (besides the
 * stores' own sections, which the store layer names). */
static const char *const sections[] = {
    "rules", "store", "server", "log", "admin", "http", "metrics", "envoy", "envoy.header_names",
    NULL};

static const struct {
    const char *name;
    unsigned bits;
} families[] = {
    {"ietf", SL__HDR_IETF},
    {"x-ratelimit", SL__HDR_X},
    {"retry-after", SL__HDR_RETRY_AFTER},
    {"all", SL__HDR_ALL},
    {"none", 0},
};

int sl__hdr_family_parse(const char *name, size_t len, unsigned *out)
{
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        if (strlen(families[i].name) == len && memcmp(families[i].name, name, len) == 0) {
            *out = families[i].bits;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

void sl__config_init(struct sl__config *c)
{
    memset(c, 0, sizeof(*c));
    if (sl__keytab_defaults(keys, NKEYS, c) != 0 || sl__store_config_new(&c->store) != SL_OK)
        abort(); /* a default that does not parse is a bug in the table; tests run this */
    c->http_headers = SL__HDR_ALL;
    for (size_t i = 0; sl__config_sections[i] != NULL; i++) {
        const struct sl__config_section *sec = sl__config_sections[i];
        assert(i < SL__MAX_ROOM_CONFIGS);
        c->rooms[i] = sl__xzalloc(sec->size ? sec->size : 1);
        if (sl__keytab_defaults(sec->keys, sec->n_keys, c->rooms[i]) != 0)
            abort();
        if (sec->init != NULL)
            sec->init(c->rooms[i]);
    }
}

void sl__config_free(struct sl__config *c)
{
    free(c->path);
    sl__keytab_free(keys, NKEYS, c);
    sl__store_config_free(c->store);
    for (size_t i = 0; sl__config_sections[i] != NULL; i++) {
        if (c->rooms[i] == NULL)
            continue;
        sl__keytab_free(sl__config_sections[i]->keys, sl__config_sections[i]->n_keys, c->rooms[i]);
        if (sl__config_sections[i]->destroy != NULL)
            sl__config_sections[i]->destroy(c->rooms[i]);
        free(c->rooms[i]);
    }
    for (size_t i = 0; i < c->n_listeners; i++)
        sl__tls_free(c->listeners[i].tls);
    for (size_t i = 0; i < c->n_rules_files; i++)
        free(c->rules_files[i]);
    for (size_t i = 0; i < c->n_rules_dirs; i++)
        free(c->rules_dirs[i]);
    for (size_t i = 0; i < c->n_admin_hosts; i++)
        free(c->admin_hosts[i]);
    for (size_t i = 0; i < c->n_admin_cert_names; i++)
        free(c->admin_cert_names[i]);
    memset(c, 0, sizeof(*c));
}

/* A path from the file, resolved against the directory of the config. */
static char *resolve(const struct sl__config *c, const char *p)
{
    const char *slash = c->path ? strrchr(c->path, '/') : NULL;
    size_t dlen, plen = strlen(p);
    char *out;

    if (p[0] == '/' || slash == NULL)
        return sl__xstrndup(p, plen);
    dlen = (size_t)(slash - c->path) + 1;
    out = sl__xrealloc(NULL, dlen + plen + 1);
    memcpy(out, c->path, dlen);
    memcpy(out + dlen, p, plen + 1);
    return out;
}

/* Where a value was written in the file, so that a check made once the
 * whole file is read can point at it. */
struct mark {
    char path[128]; /* dotted, as the key table's */
    size_t line, col;
};
#define MAX_MARKS 256

/* The document being read and its errors: every one is kept (up to
 * SL__CONFIG_MAX_ERRORS, then only counted), so that one run shows them
 * all. */
struct sl__config_ctx {
    struct sl__config *c;
    yaml_document_t *doc;
    char *err;     /* the lines so far, '\n'-separated */
    size_t errlen; /* its capacity */
    size_t used;
    unsigned n_errors; /* all of them, written or not */
    struct mark *marks;
    size_t n_marks;
};

#define fail sl__config_fail

/* Append one "file:line:col: message" line, if it is among the first
 * SL__CONFIG_MAX_ERRORS and fits whole (room is kept for the last line
 * saying how many more there were). */
static void add_error(struct sl__config_ctx *x, size_t line, size_t col, const char *fmt,
                      va_list ap)
{
    const size_t tail = 64;
    size_t room = x->errlen > x->used + tail ? x->errlen - x->used - tail : 0;
    char *p = x->err + x->used;
    int k, m;

    if (x->n_errors++ >= SL__CONFIG_MAX_ERRORS || room < 2)
        return;
    if (x->used > 0) {
        *p++ = '\n';
        room--;
    }
    k = snprintf(p, room, "%s:%zu:%zu: ", x->c->path ? x->c->path : "(config)", line, col);
    m = k >= 0 && (size_t)k < room ? vsnprintf(p + k, room - (size_t)k, fmt, ap) : -1;
    if (m < 0 || (size_t)k + (size_t)m >= room) { /* does not fit whole: left out */
        x->err[x->used] = '\0';
        return;
    }
    x->used = (size_t)(p - x->err) + (size_t)k + (size_t)m;
}

int sl__config_fail(struct sl__config_ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    add_error(x, n->start_mark.line + 1, n->start_mark.column + 1, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

int sl__config_fail_at(struct sl__config_ctx *x, size_t line, size_t col, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    add_error(x, line, col, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

static void mark(struct sl__config_ctx *x, const char *path, const yaml_node_t *v)
{
    struct mark *m;

    if (x->n_marks == MAX_MARKS || strlen(path) >= sizeof(m->path))
        return;
    m = &x->marks[x->n_marks++];
    memcpy(m->path, path, strlen(path) + 1);
    m->line = v->start_mark.line + 1;
    m->col = v->start_mark.column + 1;
}

int sl__config_fail_key(struct sl__config_ctx *x, const char *path, const char *fmt, ...)
{
    const struct mark *best = NULL;
    size_t best_len = 0;
    va_list ap;

    for (size_t i = 0; i < x->n_marks; i++) {
        size_t n = strlen(x->marks[i].path);
        if (n > best_len && strncmp(path, x->marks[i].path, n) == 0 &&
            (path[n] == '\0' || path[n] == '.')) {
            best = &x->marks[i];
            best_len = n;
        }
    }
    va_start(ap, fmt);
    add_error(x, best ? best->line : 1, best ? best->col : 1, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

static const char *scalar(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

const char *sl__config_scalar(const yaml_node_t *n)
{
    return scalar(n);
}

yaml_document_t *sl__config_doc(struct sl__config_ctx *x)
{
    return x->doc;
}

const struct sl__config *sl__config_of(struct sl__config_ctx *x)
{
    return x->c;
}

void *sl__config_room(const struct sl__config *c, const struct sl__config_section *sec)
{
    for (size_t i = 0; sl__config_sections[i] != NULL; i++)
        if (sl__config_sections[i] == sec)
            return c->rooms[i];
    return NULL;
}

/* The directory of the configuration file ("" when none): relative paths
 * in it are resolved against it. */
static void config_dir(const struct sl__config *c, char *dir, size_t cap)
{
    const char *slash = c->path ? strrchr(c->path, '/') : NULL;
    size_t n = slash != NULL ? (size_t)(slash - c->path) : 0;

    if (n >= cap)
        n = 0;
    memcpy(dir, c->path, n);
    dir[n] = '\0';
}

/* One scalar: a key of the core's table or of a store. */
static int set_scalar(struct sl__config_ctx *x, const char *path, yaml_node_t *k, yaml_node_t *v)
{
    const struct sl__key *key = sl__keytab_find(keys, NKEYS, path);
    const char *s = scalar(v);
    char dir[4096], msg[512];
    int rc;

    if (key == NULL && strncmp(path, "store.", 6) != 0)
        return fail(x, k, "unknown key '%s' (sluiced --help lists them)", path);
    if (s == NULL)
        return fail(x, v, "%s must be a scalar", path);
    config_dir(x->c, dir, sizeof(dir));
    if (key != NULL)
        rc = sl__keytab_set(key, x->c, s, dir, msg, sizeof(msg)) == 0 ? SL_OK : SL_EINVAL;
    else
        rc = sl__store_config_set(x->c->store, path, s, dir, msg, sizeof(msg));
    if (rc == SL_ENOENT)
        return fail(x, k, "unknown key '%s' (sluiced --help lists them)", path);
    if (rc != SL_OK)
        return fail(x, v, "%s", msg);
    return 0;
}

static bool is_section(const char *path)
{
    for (size_t i = 0; sections[i] != NULL; i++)
        if (strcmp(sections[i], path) == 0)
            return true;
    return sl__store_config_is_section(path);
}

static int load_protocols(struct sl__config_ctx *x, struct sl__listener *l, yaml_node_t *v)
{
    int r = 0;

    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v, "protocols must be a list, e.g. [resp]");
    l->protos = 0;
    if (v->data.sequence.items.start == v->data.sequence.items.top)
        return fail(x, v, "a listener needs at least one protocol");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(x->doc, *it);
        const char *s = scalar(n);
        unsigned bit = s ? sl__proto_bit_named(s, strlen(s)) : 0;
        if (bit == 0) {
            char names[128];
            sl__proto_names(sl__proto_all(), names, sizeof(names));
            r = fail(x, n, "unknown protocol '%s'; this build speaks %s", s ? s : "?", names);
            continue;
        }
        l->protos |= bit;
    }
    return r;
}

static int load_listener(struct sl__config_ctx *x, yaml_node_t *m)
{
    struct sl__listener *l;
    uint64_t port;
    int r = 0;

    if (m->type != YAML_MAPPING_NODE)
        return fail(x, m, "a listener is a mapping: {address, port, protocols}");
    if (x->c->n_listeners == SL__MAX_LISTENERS)
        return fail(x, m, "at most %d listeners", SL__MAX_LISTENERS);
    l = &x->c->listeners[x->c->n_listeners++];
    memcpy(l->address, "127.0.0.1", 10);
    l->port = 6390;
    l->protos = sl__proto_default();
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *ks = scalar(k), *vs = scalar(v);
        if (ks && strcmp(ks, "address") == 0) {
            if (vs == NULL || strlen(vs) >= sizeof(l->address))
                r = fail(x, v, "address must be a numeric IP address");
            else
                memcpy(l->address, vs, strlen(vs) + 1);
        } else if (ks && strcmp(ks, "port") == 0) {
            if (sl__keytab_parse_u64(vs, 65535, &port) != 0)
                r = fail(x, v, "port must be 0..65535 (0: any free port)");
            else
                l->port = (uint16_t)port;
        } else if (ks && strcmp(ks, "protocols") == 0) {
            if (load_protocols(x, l, v) != 0)
                r = SL_EINVAL;
        } else if (ks && strcmp(ks, "admin") == 0) {
            if (vs == NULL || (strcmp(vs, "true") != 0 && strcmp(vs, "false") != 0))
                r = fail(x, v, "admin must be true or false");
            else
                l->admin = vs[0] == 't';
        } else if (ks && strcmp(ks, "tls") == 0) {
            char dir[4096];
            config_dir(x->c, dir, sizeof(dir));
            sl__tls_free(l->tls);
            if (sl__tls_config_load(x, v, dir, &l->tls) != 0)
                r = SL_EINVAL;
        } else {
            r = fail(x, k, "unknown listener key '%s' (address, port, protocols, admin, tls)",
                     ks ? ks : "?");
        }
    }
    if (r == 0 && l->tls != NULL)
        r = sl__tls_build(x, l->tls, l->protos);
    /* Two listeners on one address and port would both bind it (each
     * worker's socket has SO_REUSEPORT) and the kernel would split the
     * connections between their protocols. */
    for (size_t i = 0; r == 0 && l->port != 0 && i + 1 < x->c->n_listeners; i++) {
        const struct sl__listener *o = &x->c->listeners[i];
        if (o->port == l->port && strcmp(o->address, l->address) == 0)
            r = fail(x, m,
                     "%s:%u is also an earlier listener's: list every protocol of that "
                     "address in one listener",
                     l->address, (unsigned)l->port);
    }
    return r;
}

static int load_seq(struct sl__config_ctx *x, yaml_node_t *v, const char *what,
                    int (*one)(struct sl__config_ctx *, yaml_node_t *))
{
    int r = 0;

    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v, "%s must be a list", what);
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
        if (one(x, yaml_document_get_node(x->doc, *it)) != 0)
            r = SL_EINVAL; /* and on to the next item: every error in one run */
    return r;
}

static int load_rules_file(struct sl__config_ctx *x, yaml_node_t *n)
{
    const char *s = scalar(n);

    if (s == NULL || *s == '\0')
        return fail(x, n, "rules.files holds file paths");
    if (x->c->n_rules_files == SL__MAX_RULE_FILES)
        return fail(x, n, "at most %d rules files", SL__MAX_RULE_FILES);
    x->c->rules_files[x->c->n_rules_files++] = resolve(x->c, s);
    return 0;
}

static int load_rules_dir(struct sl__config_ctx *x, yaml_node_t *n)
{
    const char *s = scalar(n);

    if (s == NULL || *s == '\0')
        return fail(x, n, "rules.directories holds directory paths");
    if (x->c->n_rules_dirs == SL__MAX_RULE_DIRS)
        return fail(x, n, "at most %d rules directories", SL__MAX_RULE_DIRS);
    x->c->rules_dirs[x->c->n_rules_dirs++] = resolve(x->c, s);
    return 0;
}

/* http.headers: a list of family names (ietf, x-ratelimit, retry-after,
 * all, none); [] sends none. */
static int load_headers(struct sl__config_ctx *x, yaml_node_t *v)
{
    unsigned mask = 0, bits;
    int r = 0;

    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v, "http.headers must be a list, e.g. [ietf, x-ratelimit, retry-after]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(x->doc, *it);
        const char *s = scalar(n);
        if (s == NULL || sl__hdr_family_parse(s, strlen(s), &bits) != SL_OK) {
            r = fail(x, n,
                     "http.headers: unknown family '%s' (ietf, x-ratelimit, retry-after, "
                     "all, none)",
                     s ? s : "?");
            continue;
        }
        mask |= bits;
    }
    x->c->http_headers = mask;
    return r;
}

/* admin.hosts: names a Host header may carry for the admin endpoints,
 * besides the listeners' addresses. */
static int load_hosts(struct sl__config_ctx *x, yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v, "admin.hosts must be a list of names, e.g. [sluice.internal]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(x->doc, *it);
        const char *s = scalar(n);
        if (s == NULL || *s == '\0' || strlen(s) > 253 || strpbrk(s, " \t/:@[]") != NULL)
            return fail(x, n,
                        "admin.hosts holds host names without port or scheme, e.g. "
                        "sluice.internal");
        if (x->c->n_admin_hosts == SL__MAX_ADMIN_HOSTS)
            return fail(x, n, "at most %d admin.hosts", SL__MAX_ADMIN_HOSTS);
        x->c->admin_hosts[x->c->n_admin_hosts++] = sl__xstrndup(s, strlen(s));
    }
    return 0;
}

/* admin.client_cert_names: the names of verified client certificates that
 * hold the admin privilege (a SAN URI such as a SPIFFE id, a DNS name, or
 * the subject's CN: the name conn_tls.c takes). */
static int load_cert_names(struct sl__config_ctx *x, yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v,
                    "admin.client_cert_names must be a list of names, e.g. "
                    "[spiffe://example.org/ops, ops.example.org]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(x->doc, *it);
        const char *s = scalar(n);
        bool ok = s != NULL && *s != '\0' && strlen(s) <= SL__CERT_NAME_MAX;
        for (const char *q = s; ok && *q; q++)
            ok = (unsigned char)*q > ' ' && (unsigned char)*q < 0x7f;
        if (!ok)
            return fail(x, n,
                        "admin.client_cert_names holds certificate names (printable, no spaces, "
                        "at most %d bytes)",
                        SL__CERT_NAME_MAX);
        if (x->c->n_admin_cert_names == SL__MAX_ADMIN_HOSTS)
            return fail(x, n, "at most %d admin.client_cert_names", SL__MAX_ADMIN_HOSTS);
        x->c->admin_cert_names[x->c->n_admin_cert_names++] = sl__xstrndup(s, strlen(s));
    }
    return 0;
}

static int load_map(struct sl__config_ctx *x, yaml_node_t *m, const char *prefix);

/* The registered room section that owns `path` (its name or under it), or
 * NULL; *index is its place in sl__config_sections. */
static const struct sl__config_section *room_of(const char *path, size_t *index)
{
    for (size_t i = 0; sl__config_sections[i] != NULL; i++) {
        size_t n = strlen(sl__config_sections[i]->name);
        if (strncmp(path, sl__config_sections[i]->name, n) == 0 &&
            (path[n] == '\0' || path[n] == '.')) {
            *index = i;
            return sl__config_sections[i];
        }
    }
    return NULL;
}

/* A key inside a room's section: the room's own loader first, then its
 * key table for scalars, nested mappings walked. 0 handled, 1 not a room's
 * key, -1 error. */
static int load_room(struct sl__config_ctx *x, const char *path, yaml_node_t *k, yaml_node_t *v)
{
    size_t i;
    const struct sl__config_section *sec = room_of(path, &i);
    const struct sl__key *key;
    char msg[512];
    int r;

    if (sec == NULL)
        return 1;
    if (sec->load != NULL && (r = sec->load(x->c->rooms[i], x, path, v)) <= 0)
        return r;
    if (v->type == YAML_MAPPING_NODE)
        return load_map(x, v, path) == 0 ? 0 : -1;
    key = sl__keytab_find(sec->keys, sec->n_keys, path);
    if (key == NULL)
        return fail(x, k, "unknown key '%s' (sluiced --help lists them)", path);
    if (scalar(v) == NULL)
        return fail(x, v, "%s must be a scalar", path);
    if (sl__keytab_set(key, x->c->rooms[i], scalar(v), NULL, msg, sizeof(msg)) != 0)
        return fail(x, v, "%s", msg);
    return 0;
}

/* Every key of the mapping `m` under `prefix`: a key in error is reported
 * and the walk goes on with the next, so that one run shows every error.
 * 0, or SL_EINVAL when any was reported. */
static int load_map(struct sl__config_ctx *x, yaml_node_t *m, const char *prefix)
{
    int failed = 0;

    if (m->type != YAML_MAPPING_NODE)
        return fail(x, m, "expected a mapping%s%s", *prefix ? " under " : "", prefix);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *ks = scalar(k);
        char path[128];
        int r;

        if (ks == NULL) {
            failed = fail(x, k, "keys are plain words");
            continue;
        }
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", ks);
        mark(x, path, v);
        r = load_room(x, path, k, v);
        if (r <= 0) {
            failed = r < 0 ? SL_EINVAL : failed;
            continue;
        }
        if (strcmp(path, "listeners") == 0)
            r = load_seq(x, v, "listeners", load_listener);
        else if (strcmp(path, "rules.files") == 0)
            r = load_seq(x, v, "rules.files", load_rules_file);
        else if (strcmp(path, "rules.directories") == 0)
            r = load_seq(x, v, "rules.directories", load_rules_dir);
        else if (strcmp(path, "http.headers") == 0)
            r = load_headers(x, v);
        else if (strcmp(path, "admin.hosts") == 0)
            r = load_hosts(x, v);
        else if (strcmp(path, "admin.client_cert_names") == 0)
            r = load_cert_names(x, v);
        else if (v->type == YAML_MAPPING_NODE && is_section(path)) {
            if (strncmp(path, "store.", 6) == 0)
                sl__store_config_section(x->c->store, path);
            r = load_map(x, v, path);
        } else
            r = set_scalar(x, path, k, v);
        if (r != 0)
            failed = SL_EINVAL;
    }
    return failed;
}

static bool is_loopback(const char *a)
{
    return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0;
}

void sl__config_finish(struct sl__config *c)
{
    bool any_admin = false;

    if (c->n_listeners == 0) {
        c->n_listeners = 1;
        memcpy(c->listeners[0].address, "127.0.0.1", 10);
        c->listeners[0].port = 6390;
        c->listeners[0].protos = sl__proto_default();
    }
    for (size_t i = 0; i < c->n_listeners; i++)
        any_admin = any_admin || c->listeners[i].admin;
    for (size_t i = 0; i < c->n_listeners; i++) {
        struct sl__listener *l = &c->listeners[i];
        l->max_frame_bytes = c->max_frame_bytes;
        l->admin_paths = any_admin ? l->admin : is_loopback(l->address);
    }
}

/* The checks of the file as a whole (the store's, each room's, the admin
 * token's keys; the token itself is token.c's), each error at the place in the file it is about. */
static void check_whole(struct sl__config_ctx *x)
{
    struct sl__config *c = x->c;
    char msg[512];

    if (sl__store_config_check(c->store, msg, sizeof(msg)) != SL_OK) {
        /* the store's message starts with the key it is about */
        char key[128];
        size_t n = strcspn(msg, ": ");
        snprintf(key, sizeof(key), "%.*s", (int)(n < sizeof(key) ? n : 0), msg);
        sl__config_fail_key(x, key, "%s", msg);
    }
    for (size_t i = 0; sl__config_sections[i] != NULL; i++)
        if (sl__config_sections[i]->check != NULL)
            sl__config_sections[i]->check(c->rooms[i], c, x);
    if (c->admin_token != NULL && c->admin_token_file != NULL)
        sl__config_fail_key(x, "admin.token_file", "set admin.token or admin.token_file, not both");
    if (c->admin_token != NULL && c->admin_token[0] == '\0')
        sl__config_fail_key(x, "admin.token", "admin.token must not be empty");
    if (c->n_admin_cert_names > 0) {
        bool verifies = false;
        for (size_t i = 0; i < c->n_listeners; i++)
            verifies |= c->listeners[i].admin_paths && c->listeners[i].tls != NULL &&
                        c->listeners[i].tls->verify != SL__TLS_VERIFY_NONE;
        if (!verifies)
            sl__config_fail_key(x, "admin.client_cert_names",
                                "admin.client_cert_names needs a listener serving the admin "
                                "endpoints with tls.verify_client optional or require: no "
                                "certificate would ever be verified");
    }
}

/* Close the list of errors: how many did not fit. */
static void finish_errors(struct sl__config_ctx *x)
{
    unsigned shown = 0;

    for (size_t i = 0; i < x->used; i++)
        shown += x->err[i] == '\n';
    shown += x->used > 0;
    if (x->n_errors > shown && x->errlen > x->used)
        snprintf(x->err + x->used, x->errlen - x->used, "%s%s: ... and %u more errors",
                 x->used > 0 ? "\n" : "", x->c->path, x->n_errors - shown);
}

/* Read the YAML `parser` was given into `c` (c->path names it in errors). */
static int load_parsed(struct sl__config *c, yaml_parser_t *parser, char *err, size_t errlen)
{
    struct sl__config_ctx x = {.c = c, .err = err, .errlen = errlen};
    yaml_document_t doc;
    yaml_node_t *root;

    if (!yaml_parser_load(parser, &doc)) {
        snprintf(err, errlen, "%s:%zu:%zu: %s", c->path, parser->problem_mark.line + 1,
                 parser->problem_mark.column + 1, parser->problem ? parser->problem : "bad YAML");
        return SL_EPARSE;
    }
    x.doc = &doc;
    x.marks = sl__xzalloc(MAX_MARKS * sizeof(*x.marks));
    root = yaml_document_get_root_node(&doc);
    if (root != NULL)
        load_map(&x, root, "");
    yaml_document_delete(&doc);
    x.doc = NULL;
    sl__config_finish(c);
    check_whole(&x);
    finish_errors(&x);
    free(x.marks);
    return x.n_errors > 0 ? SL_EINVAL : SL_OK;
}

int sl__config_load(struct sl__config *c, const char *path, char *err, size_t errlen)
{
    yaml_parser_t parser;
    const char *why;
    FILE *f;
    int fd, rc;

    free(c->path);
    c->path = sl__xstrndup(path, strlen(path));
    if (errlen > 0)
        err[0] = '\0';
    fd = sl__open_regular(path, NULL, &why);
    f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, fd >= 0 ? strerror(errno) : why);
        if (fd >= 0)
            close(fd);
        return SL_EINVAL;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    rc = load_parsed(c, &parser, err, errlen);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

int sl__config_load_buffer(struct sl__config *c, const char *path, const char *data, size_t len,
                           char *err, size_t errlen)
{
    yaml_parser_t parser;
    int rc;

    free(c->path);
    c->path = sl__xstrndup(path, strlen(path));
    if (errlen > 0)
        err[0] = '\0';
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    rc = load_parsed(c, &parser, err, errlen);
    yaml_parser_delete(&parser);
    return rc;
}

void sl__config_help(FILE *f)
{
    fprintf(f,
            "configuration keys (YAML; nested mappings, e.g. server: {max_connections: 100}):\n");
    sl__keytab_help_line(f, "listeners", "(below)",
                         "list of {address, port, protocols, admin, tls}");
    sl__keytab_help_line(f, "", "", "default: [{address: 127.0.0.1, port: 6390}], every protocol");
    sl__keytab_help_line(f, "", "",
                         "a listener with admin: true serves the admin endpoints (rules, keys,");
    sl__keytab_help_line(f, "", "",
                         "config, debug, killswitch), others answer them 404; with none, loopback");
    sl__keytab_help_line(f, "", "", "listeners do");
    sl__tls_help(f);
    sl__keytab_help_line(f, "rules.files", "[]", "rules YAML files (relative to the config)");
    sl__keytab_help_line(f, "rules.directories", "[]",
                         "directories whose every *.yaml / *.yml is a rules file (not recursive; "
                         "dotfiles ignored)");
    sl__keytab_help_line(f, "http.headers", "[all]",
                         "rate-limit header families: ietf, x-ratelimit, retry-after, all, none");
    sl__keytab_help_line(f, "admin.hosts", "[]",
                         "names an admin request's Host may carry besides the listener's address "
                         "(and localhost on loopback)");
    sl__keytab_help_line(f, "admin.client_cert_names", "[]",
                         "verified client certificate names (SAN URI, else DNS, else CN) "
                         "granted the admin privilege without the token");
    sl__keytab_help(keys, NKEYS, f);
    sl__store_config_help(f);
    for (size_t i = 0; sl__config_sections[i] != NULL; i++) {
        sl__keytab_help(sl__config_sections[i]->keys, sl__config_sections[i]->n_keys, f);
        if (sl__config_sections[i]->help != NULL)
            sl__config_sections[i]->help(f);
    }
}
