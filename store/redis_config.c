/*
 * redis_config.c - the `store.*` configuration keys of the Redis store, as
 * a table (key, type, default, meaning) and one setter that sluiced's
 * configuration loader calls for each scalar under `store.` it does not
 * know itself; the same table prints the --help lines.
 *
 * It does not read YAML or files (server/config.c walks the document) and
 * does not validate the whole (sl__store_redis_new does that).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"

enum rtype { R_STR, R_PORT, R_UINT, R_DUR_MS, R_POLICY, R_CLOCK, R_PREFIX, R_BOOL, R_NODES };

struct rkey {
    const char *key;
    enum rtype type;
    size_t off, size; /* field in struct sl__redis_config */
    const char *def;
    const char *help;
};

#define RF(field)                                                                                  \
    offsetof(struct sl__redis_config, field), sizeof(((struct sl__redis_config *)0)->field)

static const struct rkey rkeys[] = {
    {"store.redis.host", R_STR, RF(host), "127.0.0.1", "Redis host (name or address)"},
    {"store.redis.port", R_PORT, RF(port), "6379", "Redis port"},
    {"store.redis.user", R_STR, RF(user), "(none)", "ACL user for AUTH (with password)"},
    {"store.redis.password", R_STR, RF(password), "(none)", "AUTH password; none: no AUTH"},
    {"store.redis.prefix", R_PREFIX, RF(opts.prefix), "sluice",
     "key prefix; keys are PREFIX:v1:{tag}:key:limit"},
    {"store.redis.timeout", R_DUR_MS, RF(timeout_ms), "5ms",
     "per call; then the domain's failure policy answers"},
    {"store.redis.connections", R_UINT, RF(connections), "2", "pipelined connections per worker"},
    {"store.redis.max_in_flight", R_UINT, RF(max_in_flight), "256",
     "calls outstanding per worker; past it the failure policy answers"},
    {"store.redis.failure_policy", R_POLICY, RF(policy), "local",
     "allow | deny | local (decide in memory) when Redis cannot answer"},
    {"store.redis.breaker_failures", R_UINT, RF(breaker_failures), "5",
     "consecutive failures that open the circuit breaker"},
    {"store.redis.breaker_open", R_DUR_MS, RF(breaker_open_ms), "500ms",
     "how long the breaker stays open before probing"},
    {"store.redis.backoff_max", R_DUR_MS, RF(backoff_max_ms), "2s",
     "longest wait between reconnection attempts"},
    {"store.redis.over_limit_cache", R_UINT, RF(olc_entries), "4096",
     "denied keys remembered per worker (0: off)"},
    {"store.redis.expiry_slack", R_DUR_MS, RF(opts.slack_ms), "1s",
     "kept past the time a key is whole (clock skew between nodes)"},
    {"store.clock", R_CLOCK, RF(opts.redis_clock), "caller",
     "caller: sluiced's clock; redis: Redis TIME (unsynchronised fleets)"},
    {"store.redis.cluster", R_BOOL, RF(cluster), "false",
     "Redis Cluster: route by slot from CLUSTER SLOTS, follow MOVED/ASK"},
    {"store.redis.nodes", R_NODES, RF(nodes), "(none)",
     "more cluster seeds besides host:port, \"host:port,host:port\""},
    {"store.redis.rules_sync", R_BOOL, RF(rules_sync), "false",
     "rules from the admin API stored in Redis and applied by every node"},
};
#define NRKEYS   (sizeof(rkeys) / sizeof(rkeys[0]))
#define POLICIES "store.redis.policies."

static int set_uint(const char *v, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long n;

    if (*v < '0' || *v > '9')
        return SL_EINVAL;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n > max)
        return SL_EINVAL;
    *out = n;
    return SL_OK;
}

/* "host:port,host:port" with every port 1..65535 and no empty host. */
static bool nodes_ok(const char *v)
{
    while (*v != '\0') {
        const char *end = strchr(v, ','), *colon;
        size_t len = end != NULL ? (size_t)(end - v) : strlen(v);
        uint64_t port = 0;
        for (colon = v + len; colon > v && colon[-1] != ':'; colon--)
            ;
        if (colon <= v + 1 || colon == v + len)
            return false;
        for (const char *p = colon; p < v + len; p++) {
            if (*p < '0' || *p > '9' || (port = port * 10 + (uint64_t)(*p - '0')) > 65535)
                return false;
        }
        if (port == 0 || (end != NULL && end[1] == '\0'))
            return false; /* no port, or a trailing comma */
        v += len + (end != NULL);
    }
    return true;
}

static int set_one(struct sl__redis_config *c, const struct rkey *k, const char *v,
                   const char **why)
{
    char *f = (char *)c + k->off;
    uint64_t n;
    int64_t ns;

    switch (k->type) {
    case R_PREFIX:
        for (const char *p = v; *p != '\0'; p++) {
            if (*p <= ' ' || *p > '~' || *p == ':' || *p == '{' || *p == '}' || *p == '%') {
                *why = "store.redis.prefix: printable, without spaces, ':', '{', '}' or '%'";
                return SL_EINVAL;
            }
        }
        /* fall through */
    case R_STR:
        if (strlen(v) >= k->size || (k->type == R_PREFIX && *v == '\0')) {
            *why = "value too long (or empty prefix)";
            return SL_EINVAL;
        }
        memcpy(f, v, strlen(v) + 1);
        return SL_OK;
    case R_PORT:
        if (set_uint(v, 65535, &n) != SL_OK || n == 0) {
            *why = "store.redis.port must be 1..65535";
            return SL_EINVAL;
        }
        *(int *)(void *)f = (int)n;
        return SL_OK;
    case R_UINT:
        if (set_uint(v, 1u << 20, &n) != SL_OK) {
            *why = "must be a whole number (at most 1048576)";
            return SL_EINVAL;
        }
        *(unsigned *)(void *)f = (unsigned)n;
        return SL_OK;
    case R_DUR_MS:
        if (sl_duration_parse(v, strlen(v), &ns) != SL_OK || ns < 0) {
            *why = "must be a duration with its unit, e.g. 5ms, 2s";
            return SL_EINVAL;
        }
        *(int64_t *)(void *)f = (ns + SL_NS_PER_MS - 1) / SL_NS_PER_MS;
        return SL_OK;
    case R_POLICY:
        if (sl__redis_policy_parse(v, (enum sl__redis_policy *)(void *)f) != SL_OK) {
            *why = "failure policy must be allow, deny or local";
            return SL_EINVAL;
        }
        return SL_OK;
    case R_NODES:
        if (!nodes_ok(v) || strlen(v) >= k->size) {
            *why = "store.redis.nodes: host:port pairs separated by commas, e.g. "
                   "\"10.0.0.5:7000,10.0.0.6:7000\"";
            return SL_EINVAL;
        }
        memcpy(f, v, strlen(v) + 1);
        return SL_OK;
    case R_BOOL:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
            *why = "must be true or false";
            return SL_EINVAL;
        }
        *(bool *)(void *)f = strcmp(v, "true") == 0;
        return SL_OK;
    case R_CLOCK:
        if (strcmp(v, "caller") != 0 && strcmp(v, "redis") != 0) {
            *why = "store.clock must be caller or redis";
            return SL_EINVAL;
        }
        *(bool *)(void *)f = strcmp(v, "redis") == 0;
        return SL_OK;
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

int sl__redis_config_set(struct sl__redis_config *c, const char *key, const char *value,
                         const char **why)
{
    const char *dummy;

    if (why == NULL)
        why = &dummy;
    *why = NULL;
    if (key == NULL || value == NULL)
        return SL_EINVAL;
    if (strncmp(key, POLICIES, strlen(POLICIES)) == 0)
        return set_domain_policy(c, key + strlen(POLICIES), value, why);
    for (size_t i = 0; i < NRKEYS; i++)
        if (strcmp(rkeys[i].key, key) == 0)
            return set_one(c, &rkeys[i], value, why);
    return SL_ENOENT;
}

void sl__redis_config_help(FILE *out)
{
    for (size_t i = 0; i < NRKEYS; i++)
        fprintf(out, "  %-30s %-10s %s\n", rkeys[i].key, rkeys[i].def, rkeys[i].help);
    fprintf(out, "  %-30s %-10s %s\n", POLICIES "DOMAIN", "(default)",
            "failure policy for one domain");
}
