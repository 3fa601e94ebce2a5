/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_config.c - the configuration keys of the Redis store (`store.redis.*`
 * and `store.clock`): one table (key, type, default, meaning) from which the
 * defaults, the parser and the --help lines all come, plus the per-domain
 * failure policies (`store.redis.policies.DOMAIN`), which are a pattern.
 *
 * It does not read YAML or files (the server walks the document and hands
 * each scalar to store.h's sl__store_config_set) and does not validate the
 * whole (sl__store_redis_new does that).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytab.h"
#include "redis.h"
#include "rcluster_map.h"

#define POLICIES "store.redis.policies."

static const char *const policy_names[] = {"allow", "deny", "local", NULL};
static const char *const clock_names[] = {"caller", "redis", NULL};
/* In the order of enum sl__redis_engine. */
static const char *const engine_names[] = {"auto", "module", "function", "script", NULL};

static int parse_prefix(const char *v, void *field, const char **why)
{
    for (const char *p = v; *p != '\0'; p++) {
        if (*p <= ' ' || *p > '~' || *p == ':' || *p == '{' || *p == '}' || *p == '%') {
            *why = "must be printable, without spaces, ':', '{', '}' or '%'";
            return -1;
        }
    }
    if (*v == '\0' || strlen(v) >= sizeof(((struct sl__redis_opts *)0)->prefix)) {
        *why = "must not be empty or longer than 63 bytes";
        return -1;
    }
    memcpy(field, v, strlen(v) + 1);
    return 0;
}

/* "host:port,host:port" (IPv6 as "[::1]:7000") with every port 1..65535,
 * no empty host, at most `max` addresses. */
static int parse_addrs(const char *v, void *field, size_t max, const char **why)
{
    struct sl__cnode a[SL__CLUSTER_MAX_NODES];

    if (sl__redis_parse_addrs(v, a, max) < 0 ||
        strlen(v) >= sizeof(((struct sl__redis_config *)0)->nodes)) {
        *why = "takes host:port pairs separated by commas, e.g. "
               "\"10.0.0.5:7000,10.0.0.6:7000\" (IPv6: \"[fd00::5]:7000\")";
        return -1;
    }
    memcpy(field, v, strlen(v) + 1);
    return 0;
}

static int parse_nodes(const char *v, void *field, const char **why)
{
    return parse_addrs(v, field, SL__CLUSTER_MAX_NODES, why);
}

static int parse_sentinels(const char *v, void *field, const char **why)
{
    int rc = parse_addrs(v, field, SL__SENTINEL_MAX, why);

    if (rc != 0)
        *why = "takes at most 8 sentinels, host:port separated by commas, e.g. "
               "\"10.0.0.5:26379,10.0.0.6:26379\" (IPv6: \"[fd00::5]:26379\")";
    return rc;
}

/* An address in store.redis.host: a bracketed IPv6 address is kept bare. */
static int parse_host(const char *v, void *field, const char **why)
{
    size_t len = strlen(v);
    size_t cap = sizeof(((struct sl__redis_config *)0)->host);

    if (len >= 2 && v[0] == '[' && v[len - 1] == ']') {
        v++;
        len -= 2;
    }
    if (len == 0 || len >= cap || len >= SL__CLUSTER_HOST_MAX || memchr(v, '[', len) != NULL ||
        memchr(v, ']', len) != NULL) {
        *why = "must be a host name or an address (IPv6 as ::1 or [::1]), under 64 bytes";
        return -1;
    }
    memcpy(field, v, len);
    ((char *)field)[len] = '\0';
    return 0;
}

#define RF(member) SL__KF(struct sl__redis_config, member)

static const struct sl__key rkeys[] = {
    {"store.redis.host", SL__K_CUSTOM, RF(host), "127.0.0.1",
     "Redis host (name or address; IPv6 as ::1 or [::1])", .parse = parse_host},
    {"store.redis.port", SL__K_UINT, RF(port), "6379", "Redis port", .min = 1, .max = 65535},
    {"store.redis.user", SL__K_BUF, RF(user), NULL, "ACL user for AUTH (with password)"},
    {"store.redis.password", SL__K_BUF, RF(password), NULL, "AUTH password; none: no AUTH"},
    {"store.redis.prefix", SL__K_CUSTOM, RF(opts.prefix), "sluice",
     "key prefix; keys are PREFIX:v1:{tag}:key:limit", .parse = parse_prefix},
    {"store.redis.timeout", SL__K_DUR_MS, RF(timeout_ms), "5ms",
     "per call; then the domain's failure policy answers"},
    {"store.redis.connections", SL__K_UINT, RF(connections), "2",
     "pipelined connections per worker", .min = 1, .max = 64},
    {"store.redis.max_in_flight", SL__K_UINT, RF(max_in_flight), "256",
     "calls outstanding per worker; past it the failure policy answers", .min = 1, .max = 1u << 20},
    {"store.redis.failure_policy", SL__K_CHOICE, RF(policy), "local",
     "allow | deny | local (decide in memory) when Redis cannot answer", .choices = policy_names},
    {"store.redis.breaker_failures", SL__K_UINT, RF(breaker_failures), "5",
     "consecutive failures that open the circuit breaker", .min = 1, .max = 1u << 20},
    {"store.redis.breaker_open", SL__K_DUR_MS, RF(breaker_open_ms), "500ms",
     "how long the breaker stays open before probing"},
    {"store.redis.backoff_max", SL__K_DUR_MS, RF(backoff_max_ms), "2s",
     "longest wait between reconnection attempts"},
    {"store.redis.over_limit_cache", SL__K_UINT, RF(olc_entries), "4096",
     "denied keys remembered per worker (0: off)", .max = 1u << 20},
    {"store.redis.expiry_slack", SL__K_DUR_MS, RF(opts.slack_ms), "1s",
     "kept past the time a key is whole (clock skew between nodes)"},
    {"store.clock", SL__K_CHOICE, RF(opts.redis_clock), "caller",
     "caller: sluiced's clock; redis: Redis TIME (unsynchronised fleets)", .choices = clock_names},
    {"store.redis.engine", SL__K_CHOICE, RF(engine), "auto",
     "auto | module | function | script: where checks run (auto: the sluice-redis module if "
     "loaded, else Redis Functions on Redis 7+, else EVALSHA)",
     .choices = engine_names},
    {"store.redis.cluster", SL__K_BOOL, RF(cluster), "false",
     "Redis Cluster: route by slot from CLUSTER SLOTS, follow MOVED/ASK"},
    {"store.redis.nodes", SL__K_CUSTOM, RF(nodes), NULL,
     "more cluster seeds besides host:port, \"host:port,host:port\"", .parse = parse_nodes},
    {"store.redis.rules_sync", SL__K_BOOL, RF(rules_sync), "false",
     "rules from the admin API stored in Redis and applied by every node"},
    {"store.redis.sentinels", SL__K_CUSTOM, RF(sentinels), NULL,
     "Redis Sentinel addresses \"host:port,host:port\": the master comes from them (not "
     "host:port)",
     .parse = parse_sentinels},
    {"store.redis.master_name", SL__K_BUF, RF(master_name), NULL,
     "the master's name in Sentinel (with store.redis.sentinels)"},
    {"store.redis.tls.ca_file", SL__K_PATHBUF, RF(tls.ca_file), NULL,
     "TLS to Redis and Sentinel: the CAs its certificate is checked against",
     .shown = "system CAs"},
    {"store.redis.tls.cert_file", SL__K_PATHBUF, RF(tls.cert_file), NULL,
     "TLS to Redis: client certificate (PEM chain), with key_file"},
    {"store.redis.tls.key_file", SL__K_PATHBUF, RF(tls.key_file), NULL,
     "TLS to Redis: the client certificate's private key (PEM)"},
    {"store.redis.tls.server_name", SL__K_BUF, RF(tls.server_name), NULL,
     "TLS to Redis: the name sent (SNI) and checked in its certificate", .shown = "the host"},
    {"store.redis.tls.verify", SL__K_BOOL, RF(tls.verify), "true",
     "TLS to Redis: check its certificate and name (false: encrypt only)"},
};
#define NRKEYS (sizeof(rkeys) / sizeof(rkeys[0]))

const struct sl__key *sl__redis_config_keys(size_t *n)
{
    *n = NRKEYS;
    return rkeys;
}

void sl__redis_config_constants(struct sl__redis_config *c)
{
    c->backoff_min_ms = 50;
    c->olc_max_ms = 60000;
}

void sl__redis_config_init(struct sl__redis_config *c)
{
    memset(c, 0, sizeof(*c));
    if (sl__keytab_defaults(rkeys, NRKEYS, c) != 0)
        abort(); /* a default that does not parse: the table is wrong */
    sl__redis_config_constants(c);
}

int sl__redis_policy_parse(const char *s, enum sl__redis_policy *out)
{
    for (int i = 0; policy_names[i] != NULL; i++) {
        if (strcmp(policy_names[i], s) == 0) {
            *out = (enum sl__redis_policy)i;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

/* store.redis.policies.<domain>: allow | deny | local */
static int set_domain_policy(struct sl__redis_config *c, const char *domain, const char *v,
                             const char **why)
{
    struct sl__redis_domain_policy *d;

    if (*domain == '\0' || strlen(domain) >= sizeof(d->domain)) {
        *why = "store.redis.policies: a domain name (at most 127 bytes) per key";
        return SL_EINVAL;
    }
    if (c->n_domains == SL__REDIS_MAX_DOMAIN_POLICIES) {
        *why = "store.redis.policies: at most 32 domains";
        return SL_EINVAL;
    }
    d = &c->domains[c->n_domains];
    if (sl__redis_policy_parse(v, &d->policy) != SL_OK) {
        *why = "failure policy must be allow, deny or local";
        return SL_EINVAL;
    }
    memcpy(d->domain, domain, strlen(domain) + 1);
    c->n_domains++;
    return SL_OK;
}

/* The keys outside the table: store.redis.policies.DOMAIN. */
int sl__redis_config_set_pattern(struct sl__redis_config *c, const char *key, const char *value,
                                 const char **why)
{
    if (strncmp(key, POLICIES, strlen(POLICIES)) != 0)
        return SL_ENOENT;
    return set_domain_policy(c, key + strlen(POLICIES), value, why);
}

int sl__redis_config_set(struct sl__redis_config *c, const char *key, const char *value,
                         const char **why)
{
    static _Thread_local char msg[256];
    const struct sl__key *row;
    const char *dummy;

    if (why == NULL)
        why = &dummy;
    *why = NULL;
    if (key == NULL || value == NULL)
        return SL_EINVAL;
    row = sl__keytab_find(rkeys, NRKEYS, key);
    if (row == NULL)
        return sl__redis_config_set_pattern(c, key, value, why);
    if (sl__keytab_set(row, c, value, NULL, msg, sizeof(msg)) != 0) {
        *why = msg;
        return SL_EINVAL;
    }
    return SL_OK;
}

void sl__redis_config_help(FILE *out)
{
    sl__keytab_help(rkeys, NRKEYS, out);
    sl__keytab_help_line(out, POLICIES "DOMAIN", "(failure_policy)",
                         "failure policy for one domain: allow | deny | local");
}
