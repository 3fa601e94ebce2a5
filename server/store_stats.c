/*
 * store_stats.c - the Redis store's state in /metrics: its counters
 * (script calls, timeouts, policy answers, over-limit cache hits, ...)
 * summed over the workers, and its readiness and circuit breaker as gauges.
 *
 * It reads only snapshots the store publishes for any thread
 * (sl__store_redis_stats); it never touches a worker's connections. The
 * memory store has no metrics of its own beyond the table's, which
 * metrics.c already renders.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../store/redis.h"
#include "../store/store.h"
#include "store_stats.h"
#include "server-t.h"
#include "worker-t.h"

/* One counter of struct sl__redis_stats, as a table row. */
static const struct counter {
    const char *name;
    const char *help;
    size_t offset;
} counters[] = {
#define C(field, help)                                                                             \
    {                                                                                              \
        "sluice_store_redis_" #field "_total", help, offsetof(struct sl__redis_stats, field)       \
    }
    C(checks, "Operations started on the Redis store (check, peek, reset, release)."),
    C(script_calls, "Script calls (EVALSHA/EVAL) sent to Redis."),
    C(replies, "Script replies used."),
    C(timeouts, "Calls answered by the failure policy after the timeout."),
    C(errors, "Error replies and lost connections."),
    C(noscript, "NOSCRIPT replies answered by reloading the script."),
    C(overflow, "Calls refused because max_in_flight was reached."),
    C(unavailable, "Calls refused with no ready connection or the breaker open."),
    C(policy_allow, "Answers given by the allow failure policy."),
    C(policy_deny, "Answers given by the deny failure policy."),
    C(policy_local, "Answers given by the local failure policy (memory store)."),
    C(olc_hits, "Denials answered from the over-limit cache with no round trip."),
    C(olc_inserts, "Keys put into the over-limit cache."),
    C(reconnects, "Connection attempts after the first."),
    C(moved, "Redis Cluster MOVED redirections followed."),
    C(ask, "Redis Cluster ASK redirections followed."),
    C(tryagain, "Redis Cluster TRYAGAIN replies resent (a slot migrating)."),
    C(map_refreshes, "Redis Cluster slot maps loaded (CLUSTER SLOTS)."),
    C(cross_slot, "Checks split over several Redis Cluster slots."),
    C(refunds, "Refund calls sent after a cross-slot denial."),
    C(refund_failures, "Refunds that could not be sent or were not confirmed."),
#undef C
};

static bool put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *len)
        return false;
    *len += (size_t)n;
    return true;
}

size_t sl__metrics_render_store(const struct sl__server *srv, char *buf, size_t cap, size_t *len)
{
    struct sl__redis_stats sum = {0}, st;
    uint64_t *acc = (uint64_t *)(void *)&sum;
    unsigned ready = 0, open = 0, redis = 0;
    size_t start = *len;
    bool ok = true;

    for (unsigned i = 0; i < srv->n_workers; i++) {
        const struct sl__store *s = srv->workers[i].store;
        if (!sl__store_is_redis(s))
            continue;
        redis++;
        sl__store_redis_stats(s, &st);
        for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++)
            acc[counters[c].offset / sizeof(uint64_t)] +=
                *(const uint64_t *)(const void *)((const char *)&st + counters[c].offset);
        sum.in_flight += st.in_flight;
        ready += sl__store_redis_ready(s);
        open += st.breaker != SL__BREAKER_CLOSED;
    }
    if (redis == 0)
        return 0;
    for (size_t c = 0; ok && c < sizeof(counters) / sizeof(counters[0]); c++)
        ok = put(buf, cap, len, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", counters[c].name,
                 counters[c].help, counters[c].name, counters[c].name,
                 (unsigned long long)acc[counters[c].offset / sizeof(uint64_t)]);
    ok = ok && put(buf, cap, len,
                   "# HELP sluice_store_redis_in_flight Calls to Redis awaiting a reply.\n"
                   "# TYPE sluice_store_redis_in_flight gauge\n"
                   "sluice_store_redis_in_flight %llu\n"
                   "# HELP sluice_store_redis_workers_ready Workers whose Redis store is ready.\n"
                   "# TYPE sluice_store_redis_workers_ready gauge\n"
                   "sluice_store_redis_workers_ready %u\n"
                   "# HELP sluice_store_redis_breakers_open Workers whose circuit breaker is "
                   "open or probing.\n"
                   "# TYPE sluice_store_redis_breakers_open gauge\n"
                   "sluice_store_redis_breakers_open %u\n",
                   (unsigned long long)sum.in_flight, ready, open);
    if (!ok) {
        *len = start;
        return 0;
    }
    return *len - start;
}
