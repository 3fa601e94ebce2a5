/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * metrics_render.c - the scraping side of the metrics registry: sums every
 * worker's counters and writes the Prometheus text exposition format.
 *
 * A scrape allocates (a merge table of series_cap entries): it is not on
 * the hot path. Series are merged by label values across workers; past
 * series_cap distinct pairs the rest fold into "__overflow__", so the output
 * stays bounded whatever the workers saw. It does not serve HTTP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "metrics_int.h"

struct merged {
    const struct sl__series *labels; /* any worker's copy of the labels */
    uint64_t n[SL__OUTCOME_COUNT];
};

struct merge {
    struct merged *slots; /* open addressing, mask + 1 */
    size_t mask, used, cap;
    struct merged overflow;
    const struct sl__series **order; /* insertion order, for stable output */
};

static uint64_t load(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static void add_counts(struct merged *dst, struct sl__series *src)
{
    for (int o = 0; o < SL__OUTCOME_COUNT; o++)
        dst->n[o] += load(&src->n[o]);
}

static bool same_labels(const struct sl__series *a, const struct sl__series *b)
{
    return a->hash == b->hash && a->domain_len == b->domain_len && a->limit_len == b->limit_len &&
           memcmp(a->domain, b->domain, a->domain_len) == 0 &&
           memcmp(a->limit, b->limit, a->limit_len) == 0;
}

static void merge_one(struct merge *mg, struct sl__series *s)
{
    for (size_t i = s->hash & mg->mask;; i = (i + 1) & mg->mask) {
        struct merged *d = &mg->slots[i];
        if (d->labels == NULL) {
            if (mg->used >= mg->cap) {
                add_counts(&mg->overflow, s);
                return;
            }
            d->labels = s;
            mg->order[mg->used++] = s;
            add_counts(d, s);
            return;
        }
        if (same_labels(d->labels, s)) {
            add_counts(d, s);
            return;
        }
    }
}

static struct merged *lookup(struct merge *mg, const struct sl__series *s)
{
    for (size_t i = s->hash & mg->mask;; i = (i + 1) & mg->mask) {
        if (mg->slots[i].labels == s)
            return &mg->slots[i];
    }
}

static int merge_all(struct sl__metrics *m, struct merge *mg)
{
    size_t slots = 2;

    while (slots < 2 * (size_t)m->series_cap)
        slots *= 2;
    memset(mg, 0, sizeof(*mg));
    mg->slots = calloc(slots, sizeof(*mg->slots));
    mg->order = calloc(m->series_cap, sizeof(*mg->order));
    if (mg->slots == NULL || mg->order == NULL)
        return SL_ENOMEM;
    mg->mask = slots - 1;
    mg->cap = m->series_cap;
    for (unsigned w = 0; w < m->workers; w++) {
        struct sl__wmetrics *wm = &m->w[w];
        for (size_t i = 0; i <= wm->mask; i++) {
            struct sl__series *s = &wm->slots[i];
            if (atomic_load_explicit(&s->ready, memory_order_acquire))
                merge_one(mg, s);
        }
        add_counts(&mg->overflow, &wm->overflow);
    }
    return SL_OK;
}

/* A label value, escaped per the exposition format. */
static void put_label(struct sl__wr *b, const char *s, size_t n)
{
    size_t run = 0;

    for (size_t i = 0; i < n; i++) {
        const char *esc = s[i] == '\\'   ? "\\\\"
                          : s[i] == '"'  ? "\\\""
                          : s[i] == '\n' ? "\\n"
                                         : NULL;
        if (esc == NULL)
            continue;
        sl__wr_put(b, s + run, i - run);
        sl__wr_put(b, esc, 2);
        run = i + 1;
    }
    sl__wr_put(b, s + run, n - run);
}

static void put_head(struct sl__wr *b, const char *name, const char *type, const char *help)
{
    sl__wr_puts(b, "# HELP ");
    sl__wr_puts(b, name);
    sl__wr_put(b, " ", 1);
    sl__wr_puts(b, help);
    sl__wr_puts(b, "\n# TYPE ");
    sl__wr_puts(b, name);
    sl__wr_put(b, " ", 1);
    sl__wr_puts(b, type);
    sl__wr_put(b, "\n", 1);
}

static void put_series(struct sl__wr *b, const char *name, const struct sl__series *l,
                       const char *outcome, uint64_t v)
{
    sl__wr_puts(b, name);
    sl__wr_puts(b, "{domain=\"");
    put_label(b, l->domain, l->domain_len);
    sl__wr_puts(b, "\",limit=\"");
    put_label(b, l->limit, l->limit_len);
    if (outcome != NULL) {
        sl__wr_puts(b, "\",outcome=\"");
        sl__wr_puts(b, outcome);
    }
    sl__wr_puts(b, "\"} ");
    sl__wr_u64(b, v);
    sl__wr_put(b, "\n", 1);
}

static void put_decisions(struct sl__wr *b, struct merge *mg, const struct sl__series *ovl)
{
    static const char *const outcomes[] = {"allow", "delay", "deny"};

    put_head(b, "sluice_decisions_total", "counter", "Decisions by domain, limit and outcome.");
    for (size_t i = 0; i <= mg->used; i++) {
        const struct sl__series *l = i < mg->used ? mg->order[i] : ovl;
        const struct merged *d = i < mg->used ? lookup(mg, l) : &mg->overflow;
        for (int o = 0; o < 3; o++)
            put_series(b, "sluice_decisions_total", l, outcomes[o], d->n[o]);
    }
    put_head(b, "sluice_shadow_denials_total", "counter",
             "Requests a shadow-mode limit would have denied.");
    for (size_t i = 0; i <= mg->used; i++) {
        const struct sl__series *l = i < mg->used ? mg->order[i] : ovl;
        const struct merged *d = i < mg->used ? lookup(mg, l) : &mg->overflow;
        put_series(b, "sluice_shadow_denials_total", l, NULL, d->n[SL__OUTCOME_SHADOW_DENY]);
    }
}

static void put_seconds(struct sl__wr *b, uint64_t ns)
{
    char frac[10];

    sl__wr_u64(b, ns / 1000000000u);
    ns %= 1000000000u;
    for (int i = 8; i >= 0; i--, ns /= 10)
        frac[i] = (char)('0' + ns % 10);
    frac[9] = '\0';
    sl__wr_put(b, ".", 1);
    sl__wr_puts(b, frac);
}

static void put_latency(struct sl__wr *b, struct sl__metrics *m)
{
    uint64_t cum = 0, sum = 0;

    put_head(b, "sluice_check_duration_seconds", "histogram",
             "Time to decide one check, in seconds.");
    for (int i = 0; i <= SL__LAT_BUCKETS; i++) {
        for (unsigned w = 0; w < m->workers; w++)
            cum += load(&m->w[w].lat_buckets[i]);
        sl__wr_puts(b, "sluice_check_duration_seconds_bucket{le=\"");
        sl__wr_puts(b, i < SL__LAT_BUCKETS ? sl__lat_bounds_text[i] : "+Inf");
        sl__wr_puts(b, "\"} ");
        sl__wr_u64(b, cum);
        sl__wr_put(b, "\n", 1);
    }
    for (unsigned w = 0; w < m->workers; w++)
        sum += load(&m->w[w].lat_sum_ns);
    sl__wr_puts(b, "sluice_check_duration_seconds_sum ");
    put_seconds(b, sum);
    sl__wr_puts(b, "\nsluice_check_duration_seconds_count ");
    sl__wr_u64(b, cum);
    sl__wr_put(b, "\n", 1);
}

static void put_scalar(struct sl__wr *b, const char *name, const char *type, const char *help,
                       int64_t v)
{
    put_head(b, name, type, help);
    sl__wr_puts(b, name);
    sl__wr_put(b, " ", 1);
    sl__wr_i64(b, v);
    sl__wr_put(b, "\n", 1);
}

static int64_t clamp(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static void put_workers(struct sl__wr *b, struct sl__metrics *m, int64_t connections)
{
    uint64_t unknown = 0, total = 0, off = 0, batches = 0, batched = 0;
    int64_t open = 0;

    for (unsigned w = 0; w < m->workers; w++) {
        unknown += load(&m->w[w].unknown_domains);
        off += load(&m->w[w].killswitch_off);
        batches += load(&m->w[w].batches);
        batched += load(&m->w[w].batched);
        total += load(&m->w[w].connections_total);
        open += atomic_load_explicit(&m->w[w].connections, memory_order_relaxed);
    }
    put_scalar(b, "sluice_unknown_domain_total", "counter",
               "Requests for a domain no rule knows (answered OK).", clamp(unknown));
    put_scalar(b, "sluice_killswitch_off_total", "counter",
               "Checks answered allowed undecided because a kill switch is off.", clamp(off));
    put_scalar(b, "sluice_decision_batches_total", "counter",
               "Batches of checks from one read decided together.", clamp(batches));
    put_scalar(b, "sluice_decision_batched_total", "counter", "Checks decided in those batches.",
               clamp(batched));
    put_scalar(b, "sluice_connections", "gauge", "Client connections open now.",
               connections >= 0 ? connections : open);
    put_scalar(b, "sluice_connections_total", "counter", "Client connections accepted.",
               clamp(total));
}

static void put_labelled(struct sl__wr *b, const char *name, const char *label, const char *value,
                         uint64_t v)
{
    sl__wr_puts(b, name);
    sl__wr_puts(b, "{");
    sl__wr_puts(b, label);
    sl__wr_puts(b, "=\"");
    sl__wr_puts(b, value);
    sl__wr_puts(b, "\"} ");
    sl__wr_u64(b, v);
    sl__wr_put(b, "\n", 1);
}

/* The connections' events: bytes, and closes and refusals by reason. */
static void put_conn_events(struct sl__wr *b, struct sl__metrics *m)
{
    static const struct {
        enum sl__conn_event e;
        const char *reason;
    } closed[] = {{SL__CONN_EV_CLOSED_IDLE, "idle_timeout"},
                  {SL__CONN_EV_CLOSED_READ, "read_timeout"},
                  {SL__CONN_EV_CLOSED_WRITE, "write_timeout"},
                  {SL__CONN_EV_CLOSED_HEADER, "header_timeout"},
                  {SL__CONN_EV_CLOSED_FRAME, "frame_too_large"},
                  {SL__CONN_EV_CLOSED_BUDGET, "buffer_budget"}},
      refused[] = {{SL__CONN_EV_REFUSED_MAX, "max_connections"},
                   {SL__CONN_EV_REFUSED_PER_IP, "max_connections_per_ip"}},
      tls[] = {{SL__CONN_EV_TLS_PLAINTEXT, "plaintext"},
               {SL__CONN_EV_TLS_VERSION, "protocol_version"},
               {SL__CONN_EV_TLS_CIPHER, "no_shared_cipher"},
               {SL__CONN_EV_TLS_CLIENT_CERT, "client_certificate"},
               {SL__CONN_EV_TLS_ALERT, "peer_alert"},
               {SL__CONN_EV_TLS_EOF, "peer_closed"},
               {SL__CONN_EV_TLS_INCOMPLETE, "handshake_timeout"},
               {SL__CONN_EV_TLS_OTHER, "other"}},
      up_tls[] = {{SL__CONN_EV_UP_TLS_VERIFY, "verify"},
                  {SL__CONN_EV_UP_TLS_NAME, "name"},
                  {SL__CONN_EV_UP_TLS_HANDSHAKE, "handshake"},
                  {SL__CONN_EV_UP_TLS_OTHER, "other"}};
    uint64_t sum[SL__CONN_EV_COUNT] = {0};

    for (unsigned w = 0; w < m->workers; w++)
        for (int e = 0; e < SL__CONN_EV_COUNT; e++)
            sum[e] += load(&m->w[w].conn_events[e]);
    put_scalar(b, "sluice_read_bytes_total", "counter", "Bytes read from clients.",
               clamp(sum[SL__CONN_EV_READ_BYTES]));
    put_scalar(b, "sluice_parse_scanned_bytes_total", "counter",
               "Bytes the protocol parsers looked at (each byte of a request once, whatever "
               "the reads it arrives in).",
               clamp(sum[SL__CONN_EV_SCANNED_BYTES]));
    put_head(b, "sluice_connections_closed_total", "counter",
             "Connections the server closed, by reason.");
    for (size_t i = 0; i < sizeof(closed) / sizeof(closed[0]); i++)
        put_labelled(b, "sluice_connections_closed_total", "reason", closed[i].reason,
                     sum[closed[i].e]);
    put_head(b, "sluice_connections_refused_total", "counter",
             "Connections refused as soon as accepted, by reason.");
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        put_labelled(b, "sluice_connections_refused_total", "reason", refused[i].reason,
                     sum[refused[i].e]);
    put_scalar(b, "sluice_buffer_shrinks_total", "counter",
               "Connection buffers given back after a large frame.",
               clamp(sum[SL__CONN_EV_SHRINKS]));
    put_scalar(b, "sluice_tls_handshakes_total", "counter", "TLS handshakes completed.",
               clamp(sum[SL__CONN_EV_TLS_HANDSHAKES]));
    put_scalar(b, "sluice_tls_resumed_total", "counter",
               "Of the TLS handshakes, those that resumed a session (a session ticket).",
               clamp(sum[SL__CONN_EV_TLS_RESUMED]));
    put_head(b, "sluice_tls_failures_total", "counter",
             "TLS connections that failed, by reason (docs/tls.md).");
    for (size_t i = 0; i < sizeof(tls) / sizeof(tls[0]); i++)
        put_labelled(b, "sluice_tls_failures_total", "reason", tls[i].reason, sum[tls[i].e]);
    put_scalar(b, "sluice_proxy_upstream_tls_handshakes_total", "counter",
               "TLS handshakes the proxy completed with its upstreams.",
               clamp(sum[SL__CONN_EV_UP_TLS_HANDSHAKES]));
    put_scalar(b, "sluice_proxy_upstream_tls_resumed_total", "counter",
               "Of those, handshakes that resumed the server's last session.",
               clamp(sum[SL__CONN_EV_UP_TLS_RESUMED]));
    put_head(b, "sluice_proxy_upstream_tls_failures_total", "counter",
             "The proxy's TLS connections to upstreams that failed, by reason (docs/proxy.md).");
    for (size_t i = 0; i < sizeof(up_tls) / sizeof(up_tls[0]); i++)
        put_labelled(b, "sluice_proxy_upstream_tls_failures_total", "reason", up_tls[i].reason,
                     sum[up_tls[i].e]);
}

static void put_gauges(struct sl__wr *b, const struct sl__metrics_gauges *g)
{
    put_scalar(b, "sluice_table_entries", "gauge", "Keys tracked in the state table.",
               clamp(g->table_entries));
    put_scalar(b, "sluice_table_bytes", "gauge", "Memory used by the state table.",
               clamp(g->table_bytes));
    put_scalar(b, "sluice_table_max_bytes", "gauge", "Memory cap of the state table.",
               clamp(g->table_max_bytes));
    put_scalar(b, "sluice_table_evictions_total", "counter", "Live entries evicted to make room.",
               clamp(g->table_evictions));
    put_scalar(b, "sluice_table_evictions_denying_total", "counter",
               "Of the evictions, entries out of quota (a denied client's state).",
               clamp(g->table_evictions_denying));
    put_scalar(b, "sluice_table_full_denials_total", "counter",
               "New keys denied because the table was full.", clamp(g->table_full_denials));
    put_scalar(b, "sluice_table_summary_folds_total", "counter",
               "Evicted entries whose debt the summary kept (eviction never forgives).",
               clamp(g->table_summary_folds));
    put_scalar(b, "sluice_table_summary_restores_total", "counter",
               "New keys whose first state the summary of evicted debts decided.",
               clamp(g->table_summary_restores));
    put_scalar(b, "sluice_table_summary_cells", "gauge",
               "Cells of the summary of evicted debts (8 bytes each).",
               clamp(g->table_summary_cells));
    put_scalar(b, "sluice_table_summary_cells_used", "gauge",
               "Cells of the summary holding a debt not yet whole (its fill).",
               clamp(g->table_summary_used));
    put_scalar(b, "sluice_connection_buffer_bytes", "gauge",
               "Memory held by every connection's buffers (bounded by server.max_buffer_bytes).",
               clamp(g->buffer_bytes));
    put_scalar(b, "sluice_reloads_total", "counter", "Rule reloads applied.", clamp(g->reloads));
    put_scalar(b, "sluice_reload_failures_total", "counter",
               "Rule reloads rejected (the old rules kept serving).", clamp(g->reload_failures));
    put_scalar(b, "sluice_reload_requests_total", "counter",
               "Rule reloads asked by SIGHUP, a file change or other nodes.",
               clamp(g->reload_requests));
    put_scalar(b, "sluice_reloads_coalesced_total", "counter",
               "Reloads asked while one ran and one waited: served by the waiting one.",
               clamp(g->reloads_coalesced));
}

/* A cert_file label's bytes at most (a longer path is cut). */
#define TLS_LABEL_MAX 1024

/* TLS certificates: each loaded one's expiry, and the rotations. */
static void put_tls(struct sl__wr *b, const struct sl__metrics_gauges *g)
{
    char num[24];

    if (!g->tls)
        return;
    put_head(b, "sluice_tls_certificate_expiry_seconds", "gauge",
             "When each loaded certificate expires (its notAfter), in seconds since the epoch.");
    for (size_t i = 0; i < g->n_tls_certs; i++) {
        const struct sl__metrics_tls_cert *c = &g->tls_certs[i];
        char listener[96];
        int n = snprintf(listener, sizeof(listener), strchr(c->address, ':') ? "[%s]:%u" : "%s:%u",
                         c->address, c->port);
        sl__wr_puts(b, "sluice_tls_certificate_expiry_seconds{listener=\"");
        put_label(b, listener, n > 0 && (size_t)n < sizeof(listener) ? (size_t)n : 0);
        sl__wr_puts(b, "\",cert_file=\"");
        put_label(b, c->cert_file, strnlen(c->cert_file, TLS_LABEL_MAX));
        snprintf(num, sizeof(num), "\"} %lld\n", (long long)c->not_after);
        sl__wr_puts(b, num);
    }
    put_head(b, "sluice_tls_reloads_total", "counter",
             "Certificate rotations (SIGHUP or a file's change), by result.");
    put_labelled(b, "sluice_tls_reloads_total", "result", "ok", g->tls_reloads_ok);
    put_labelled(b, "sluice_tls_reloads_total", "result", "failed", g->tls_reloads_failed);
}

int sl__metrics_render(struct sl__metrics *m, const struct sl__metrics_gauges *g, char *buf,
                       size_t cap, size_t *len)
{
    struct sl__wr b;
    struct merge mg;
    int rc = merge_all(m, &mg);

    if (rc == SL_OK) {
        sl__wr_init(&b, buf, cap);
        put_decisions(&b, &mg, &m->w[0].overflow);
        put_latency(&b, m);
        put_workers(&b, m, g->connections);
        put_conn_events(&b, m);
        put_gauges(&b, g);
        put_tls(&b, g);
        rc = sl__wr_finish(&b, len);
    }
    free(mg.slots);
    free(mg.order);
    return rc;
}

size_t sl__metrics_render_bound(const struct sl__metrics *m)
{
    /* Per series: 4 lines, each label escaped to at most twice its size. */
    size_t per_series = 4 * (64 + 4 * SL__METRIC_LABEL_MAX + 24);
    /* TLS expiry series: their labels escaped to at most twice their size. */
    return ((size_t)m->series_cap + 1) * per_series + 16384 +
           SL__METRICS_TLS_CERTS * (2 * TLS_LABEL_MAX + 256);
}
