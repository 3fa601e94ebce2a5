/*
 * config.c - sluiced's YAML configuration: a table of keys (dotted paths)
 * with their type, default and meaning, a walk over the YAML document that
 * sets them, and the --help text made from the same table.
 *
 * It does not start anything and does not read rules files: it only records
 * their paths (resolved against the configuration file's directory).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "config.h"
#include "http_headers.h"
#include "log.h"
#include "proto.h"
#include "xalloc.h"

enum ktype { K_UINT, K_SIZE, K_DUR_MS, K_BOOL, K_PATH, K_LEVEL, K_ONFULL, K_STORE, K_STR };

struct key {
    const char *path;
    enum ktype type;
    size_t off;
    const char *def; /* the default, as printed by --help */
    const char *help;
};

#define F(field) offsetof(struct sl__config, field)

static const struct key keys[] = {
    {"workers", K_UINT, F(workers), "0", "worker threads; 0 = one per core"},
    {"rules.database", K_PATH, F(rules_db), "(none)", "SQLite rules database to merge in"},
    {"rules.watch", K_BOOL, F(rules_watch), "true", "reload when a rules file changes"},
    {"rules.debounce", K_DUR_MS, F(rules_debounce_ms), "200ms",
     "wait this long after a change before reloading"},
    {"store.type", K_STORE, F(store), "memory", "where state lives: memory"},
    {"store.max_bytes", K_SIZE, F(store_max_bytes), "64MiB",
     "hard memory cap of the state table (k/KiB, M/MiB, G/GiB suffixes)"},
    {"store.shards", K_UINT, F(store_shards), "0", "table shards (power of two); 0 = default"},
    {"store.on_full", K_ONFULL, F(store_on_full), "evict", "evict | deny new keys when full"},
    {"server.max_connections", K_UINT, F(max_connections), "10000",
     "open connections, all workers"},
    {"server.max_frame_bytes", K_SIZE, F(max_frame_bytes), "1MiB",
     "largest request; a bigger one closes its connection"},
    {"server.idle_timeout", K_DUR_MS, F(idle_timeout_ms), "300s",
     "close a silent connection after this; 0s = never"},
    {"server.read_timeout", K_DUR_MS, F(read_timeout_ms), "10s",
     "close a connection stuck inside one request this long; 0s = never"},
    {"server.shutdown_grace", K_DUR_MS, F(shutdown_grace_ms), "5s",
     "on SIGTERM, how long in-flight replies may take"},
    {"log.level", K_LEVEL, F(log_level), "info", "error | warn | info | debug"},
    {"admin.token", K_STR, F(admin_token), "(none)",
     "bearer token the admin endpoints require (Authorization: Bearer ...)"},
    {"admin.token_file", K_PATH, F(admin_token_file), "(none)",
     "read admin.token from this file (first line)"},
    {"http.max_delay", K_DUR_MS, F(http_max_delay_ms), "1s",
     "GET /v1/auth holds a delayed answer up to this; longer delays are denials"},
    {"metrics.max_series", K_UINT, F(metrics_max_series), "1000",
     "distinct (domain, limit) label sets per worker; more count as __overflow__"},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void sl__config_init(struct sl__config *c)
{
    memset(c, 0, sizeof(*c));
    c->rules_watch = true;
    c->rules_debounce_ms = 200;
    memcpy(c->store, "memory", 7);
    c->store_max_bytes = 64u << 20;
    c->store_on_full = SL_ON_FULL_EVICT;
    sl__redis_config_init(&c->redis);
    c->max_connections = 10000;
    c->max_frame_bytes = 1u << 20;
    c->idle_timeout_ms = 300000;
    c->read_timeout_ms = 10000;
    c->shutdown_grace_ms = 5000;
    c->log_level = SL__LOG_INFO;
    c->http_headers = SL__HDR_ALL;
    c->http_max_delay_ms = 1000;
    c->metrics_max_series = 1000;
}

void sl__config_free(struct sl__config *c)
{
    free(c->path);
    free(c->rules_db);
    free(c->admin_token);
    free(c->admin_token_file);
    for (size_t i = 0; i < c->n_rules_files; i++)
        free(c->rules_files[i]);
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

struct ctx {
    struct sl__config *c;
    yaml_document_t *doc;
    char *err;
    size_t errlen;
};

static int fail(struct ctx *x, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(x->err, x->errlen, "%s:%zu:%zu: ", x->c->path ? x->c->path : "(config)",
                     n->start_mark.line + 1, n->start_mark.column + 1);
    if (k < 0 || (size_t)k >= x->errlen)
        return SL_EINVAL;
    va_start(ap, fmt);
    vsnprintf(x->err + k, x->errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

static const char *scalar(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_size(const char *s, size_t *out)
{
    static const struct {
        const char *sfx;
        unsigned shift;
    } units[] = {{"", 0},     {"k", 10}, {"K", 10},   {"KiB", 10}, {"M", 20},
                 {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"kB", 10},  {"MB", 20}};
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].sfx) == 0) {
            if (v > (SIZE_MAX >> units[i].shift))
                return -1;
            *out = (size_t)(v << units[i].shift);
            return 0;
        }
    }
    return -1;
}

static int set_key(struct ctx *x, const struct key *k, const yaml_node_t *v)
{
    const char *s = scalar(v);
    char *field = (char *)x->c + k->off;
    unsigned long long u;
    int64_t ns;

    if (s == NULL)
        return fail(x, v, "%s must be a scalar", k->path);
    switch (k->type) {
    case K_UINT:
        if (parse_uint(s, 1u << 24, &u) != 0)
            return fail(x, v, "%s must be a whole number (got '%s')", k->path, s);
        *(unsigned *)(void *)field = (unsigned)u;
        return 0;
    case K_SIZE:
        if (parse_size(s, (size_t *)(void *)field) != 0)
            return fail(x, v, "%s must be a size like 65536, 64KiB or 1MiB (got '%s')", k->path, s);
        return 0;
    case K_DUR_MS:
        if (sl_duration_parse(s, strlen(s), &ns) != SL_OK || ns < 0)
            return fail(x, v, "%s must be a duration with its unit, e.g. 10s (got '%s')", k->path,
                        s);
        *(int64_t *)(void *)field = ns / SL_NS_PER_MS;
        return 0;
    case K_BOOL:
        if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0)
            return fail(x, v, "%s must be true or false (got '%s')", k->path, s);
        *(bool *)(void *)field = s[0] == 't';
        return 0;
    case K_PATH:
        free(*(char **)(void *)field);
        *(char **)(void *)field = resolve(x->c, s);
        return 0;
    case K_STR:
        free(*(char **)(void *)field);
        *(char **)(void *)field = sl__xstrndup(s, strlen(s));
        return 0;
    case K_LEVEL: {
        int l = sl__log_parse_level(s, strlen(s));
        if (l < 0)
            return fail(x, v, "log.level must be error, warn, info or debug (got '%s')", s);
        *(enum sl__log_level *)(void *)field = (enum sl__log_level)l;
        return 0;
    }
    case K_ONFULL:
        if (strcmp(s, "evict") != 0 && strcmp(s, "deny") != 0)
            return fail(x, v, "store.on_full must be evict or deny (got '%s')", s);
        *(enum sl_on_full *)(void *)field = s[0] == 'e' ? SL_ON_FULL_EVICT : SL_ON_FULL_DENY;
        return 0;
    case K_STORE:
        if (strcmp(s, "memory") != 0 && strcmp(s, "redis") != 0)
            return fail(x, v, "store.type must be memory or redis (got '%s')", s);
        memcpy(field, s, strlen(s) + 1);
        return 0;
    }
    return fail(x, v, "unhandled key type");
}

static int load_protocols(struct ctx *x, struct sl__listener *l, yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v, "protocols must be a list, e.g. [resp]");
    l->protos = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(x->doc, *it);
        const char *s = scalar(n);
        const struct sl__proto *p = s ? sl__proto_find(s, strlen(s)) : NULL;
        if (p == NULL)
            return fail(x, n, "unknown protocol '%s'; this build speaks:%s", s ? s : "?",
                        sl__protos[1] ? " resp, http1, ..." : " resp");
        l->protos |= p->bit;
    }
    if (l->protos == 0)
        return fail(x, v, "a listener needs at least one protocol");
    return 0;
}

static unsigned all_protos(void)
{
    unsigned b = 0;
    for (size_t i = 0; sl__protos[i] != NULL; i++)
        b |= sl__protos[i]->bit;
    return b;
}

static int load_listener(struct ctx *x, yaml_node_t *m)
{
    struct sl__listener *l;
    unsigned long long port;

    if (m->type != YAML_MAPPING_NODE)
        return fail(x, m, "a listener is a mapping: {address, port, protocols}");
    if (x->c->n_listeners == SL__MAX_LISTENERS)
        return fail(x, m, "at most %d listeners", SL__MAX_LISTENERS);
    l = &x->c->listeners[x->c->n_listeners++];
    memcpy(l->address, "127.0.0.1", 10);
    l->port = 6390;
    l->protos = all_protos();
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *ks = scalar(k), *vs = scalar(v);
        if (ks && strcmp(ks, "address") == 0) {
            if (vs == NULL || strlen(vs) >= sizeof(l->address))
                return fail(x, v, "address must be a numeric IP address");
            memcpy(l->address, vs, strlen(vs) + 1);
        } else if (ks && strcmp(ks, "port") == 0) {
            if (parse_uint(vs, 65535, &port) != 0)
                return fail(x, v, "port must be 0..65535 (0: any free port)");
            l->port = (uint16_t)port;
        } else if (ks && strcmp(ks, "protocols") == 0) {
            if (load_protocols(x, l, v) != 0)
                return SL_EINVAL;
        } else if (ks && strcmp(ks, "admin") == 0) {
            if (vs == NULL || (strcmp(vs, "true") != 0 && strcmp(vs, "false") != 0))
                return fail(x, v, "admin must be true or false");
            l->admin = vs[0] == 't';
        } else {
            return fail(x, k, "unknown listener key '%s' (address, port, protocols, admin)",
                        ks ? ks : "?");
        }
    }
    return 0;
}

static int load_seq(struct ctx *x, yaml_node_t *v, const char *what,
                    int (*one)(struct ctx *, yaml_node_t *))
{
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v, "%s must be a list", what);
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
        if (one(x, yaml_document_get_node(x->doc, *it)) != 0)
            return SL_EINVAL;
    return 0;
}

static int load_rules_file(struct ctx *x, yaml_node_t *n)
{
    const char *s = scalar(n);

    if (s == NULL || *s == '\0')
        return fail(x, n, "rules.files holds file paths");
    if (x->c->n_rules_files == SL__MAX_RULE_FILES)
        return fail(x, n, "at most %d rules files", SL__MAX_RULE_FILES);
    x->c->rules_files[x->c->n_rules_files++] = resolve(x->c, s);
    return 0;
}

/* http.headers: a list of family names (ietf, x-ratelimit, retry-after,
 * all, none); [] sends none. */
static int load_headers(struct ctx *x, yaml_node_t *v)
{
    unsigned mask = 0, bits;

    if (v->type != YAML_SEQUENCE_NODE)
        return fail(x, v, "http.headers must be a list, e.g. [ietf, x-ratelimit, retry-after]");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(x->doc, *it);
        const char *s = scalar(n);
        if (s == NULL || sl__hdr_family_parse(s, strlen(s), &bits) != SL_OK)
            return fail(x, n,
                        "http.headers: unknown family '%s' (ietf, x-ratelimit, retry-after, "
                        "all, none)",
                        s ? s : "?");
        mask |= bits;
    }
    x->c->http_headers = mask;
    return 0;
}

static int load_map(struct ctx *x, yaml_node_t *m, const char *prefix)
{
    if (m->type != YAML_MAPPING_NODE)
        return fail(x, m, "expected a mapping%s%s", *prefix ? " under " : "", prefix);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *ks = scalar(k);
        char path[128];
        int r;

        if (ks == NULL)
            return fail(x, k, "keys are plain words");
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", ks);
        if (strcmp(path, "listeners") == 0)
            r = load_seq(x, v, "listeners", load_listener);
        else if (strcmp(path, "rules.files") == 0)
            r = load_seq(x, v, "rules.files", load_rules_file);
        else if (strcmp(path, "http.headers") == 0)
            r = load_headers(x, v);
        else if (v->type == YAML_MAPPING_NODE &&
                 (!strcmp(path, "rules") || !strcmp(path, "store") || !strcmp(path, "server") ||
                  !strcmp(path, "log") || !strcmp(path, "admin") || !strcmp(path, "http") ||
                  !strcmp(path, "metrics") || !strcmp(path, "store.redis") ||
                  !strcmp(path, "store.redis.policies")))
            r = load_map(x, v, path);
        else {
            const struct key *key = NULL;
            for (size_t i = 0; i < NKEYS; i++)
                if (strcmp(keys[i].path, path) == 0)
                    key = &keys[i];
            /* store.redis.* and store.clock belong to the Redis store's own
             * key table (store/redis_config.c). */
            if (key == NULL && !strncmp(path, "store.", 6) && scalar(v) != NULL) {
                const char *why = NULL;
                int rc = sl__redis_config_set(&x->c->redis, path, scalar(v), &why);
                if (rc == SL_EINVAL)
                    return fail(x, v, "%s: %s", path, why);
                if (rc == SL_OK)
                    continue;
            }
            if (key == NULL)
                return fail(x, k, "unknown key '%s' (sluiced --help lists them)", path);
            r = set_key(x, key, v);
        }
        if (r != 0)
            return r;
    }
    return 0;
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
        c->listeners[0].protos = all_protos();
    }
    for (size_t i = 0; i < c->n_listeners; i++)
        any_admin = any_admin || c->listeners[i].admin;
    for (size_t i = 0; i < c->n_listeners; i++) {
        struct sl__listener *l = &c->listeners[i];
        l->max_frame_bytes = c->max_frame_bytes;
        l->admin_paths = any_admin ? l->admin : is_loopback(l->address);
    }
}

/* admin.token_file: its first line is the token. */
static int read_token_file(struct sl__config *c, char *err, size_t errlen)
{
    char line[512];
    FILE *f = fopen(c->admin_token_file, "rb");
    size_t n;

    if (f == NULL) {
        snprintf(err, errlen, "%s: admin.token_file: cannot open: %s", c->admin_token_file,
                 strerror(errno));
        return SL_EINVAL;
    }
    n = fgets(line, sizeof(line), f) != NULL ? strcspn(line, "\r\n") : 0;
    fclose(f);
    if (n == 0) {
        snprintf(err, errlen, "%s: admin.token_file: the first line is empty", c->admin_token_file);
        return SL_EINVAL;
    }
    free(c->admin_token);
    c->admin_token = sl__xstrndup(line, n);
    return SL_OK;
}

int sl__config_load(struct sl__config *c, const char *path, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    FILE *f;
    int r = SL_OK;

    free(c->path);
    c->path = sl__xstrndup(path, strlen(path));
    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return SL_EINVAL;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%zu:%zu: %s", path, parser.problem_mark.line + 1,
                 parser.problem_mark.column + 1, parser.problem ? parser.problem : "bad YAML");
        yaml_parser_delete(&parser);
        fclose(f);
        return SL_EPARSE;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root != NULL) {
        struct ctx x = {c, &doc, err, errlen};
        r = load_map(&x, root, "");
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    sl__config_finish(c);
    if (r == SL_OK && c->admin_token_file != NULL)
        r = read_token_file(c, err, errlen);
    if (r == SL_OK && c->admin_token != NULL && c->admin_token[0] == '\0') {
        snprintf(err, errlen, "%s: admin.token must not be empty", path);
        r = SL_EINVAL;
    }
    return r;
}

void sl__config_help(FILE *f)
{
    fprintf(f,
            "configuration keys (YAML; nested mappings, e.g. server: {max_connections: 100}):\n");
    fprintf(f, "  %-24s %-8s %s\n", "listeners", "", "list of {address, port, protocols}");
    fprintf(f, "  %-24s %-8s %s\n", "", "",
            "default: [{address: 127.0.0.1, port: 6390}], "
            "every protocol");
    fprintf(f, "  %-24s %-8s %s\n", "", "",
            "a listener with admin: true serves the admin endpoints (rules, keys, config,");
    fprintf(f, "  %-24s %-8s %s\n", "", "",
            "debug, killswitch), others answer them 404; with none, loopback listeners do");
    fprintf(f, "  %-24s %-8s %s\n", "rules.files", "[]",
            "rules YAML files (relative to the config)");
    fprintf(f, "  %-24s %-8s %s\n", "http.headers", "[all]",
            "rate-limit header families: ietf, x-ratelimit, retry-after, all, none");
    for (size_t i = 0; i < NKEYS; i++)
        fprintf(f, "  %-24s %-8s %s\n", keys[i].path, keys[i].def, keys[i].help);
    sl__redis_config_help(f);
}
