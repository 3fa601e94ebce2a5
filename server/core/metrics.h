/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * metrics.h - sluiced's Prometheus metrics registry (internal).
 *
 * Built for the hot path: every worker thread counts into its own block
 * (single writer, no shared atomic, no lock, no allocation); a scrape sums
 * the blocks. Series keyed by request-derived label values (domain, limit,
 * Envoy detailed_metric names) are capped: at most `series_cap` distinct
 * (domain, limit) pairs per worker and in the scraped output; beyond that
 * they are counted under the label value "__overflow__", so hostile traffic
 * cannot grow the registry or the scrape. Label values are truncated to
 * SL__METRIC_LABEL_MAX bytes, invalid UTF-8 and control bytes become '?'.
 *
 * It does not serve HTTP and does not read the table, the rules or the
 * clock: the caller passes durations and scrape-time gauges in.
 *
 * Ownership: the registry is the caller's (sl__metrics_new/free). Threads:
 * the sl__metrics_* counting calls for worker w may only be made by the one
 * thread that owns w; sl__metrics_render() may run on any thread at any time.
 */
#ifndef SL_SERVER_METRICS_H
#define SL_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

#define SL__METRIC_LABEL_MAX 96
#define SL__METRIC_OVERFLOW  "__overflow__"

struct sl__metrics;

struct sl__metrics_config {
    unsigned workers;    /* counting threads, >= 1 */
    unsigned series_cap; /* distinct (domain, limit) pairs, >= 1 */
    uint8_t secret[16];  /* key of the label hash (random per process) */
};

/* Outcomes counted per (domain, limit). */
enum sl__metric_outcome {
    SL__OUTCOME_ALLOW = 0,
    SL__OUTCOME_DELAY,
    SL__OUTCOME_DENY,
    SL__OUTCOME_SHADOW_DENY, /* a shadow-mode limit would have denied */
    SL__OUTCOME_COUNT
};

/* What happened to connections and their bytes, counted per worker. */
enum sl__conn_event {
    SL__CONN_EV_READ_BYTES,     /* bytes read from clients */
    SL__CONN_EV_SCANNED_BYTES,  /* bytes the protocols' parsers looked at */
    SL__CONN_EV_CLOSED_IDLE,    /* closed by server.idle_timeout */
    SL__CONN_EV_CLOSED_READ,    /* closed by server.read_timeout (a request stuck) */
    SL__CONN_EV_CLOSED_WRITE,   /* closed by server.write_timeout (replies not read) */
    SL__CONN_EV_CLOSED_HEADER,  /* closed by server.header_timeout (nothing sent) */
    SL__CONN_EV_CLOSED_FRAME,   /* closed: a frame above server.max_frame_bytes */
    SL__CONN_EV_CLOSED_BUDGET,  /* closed: a large frame past server.max_buffer_bytes */
    SL__CONN_EV_REFUSED_MAX,    /* refused: server.max_connections */
    SL__CONN_EV_REFUSED_PER_IP, /* refused: server.max_connections_per_ip */
    SL__CONN_EV_SHRINKS,        /* buffers shrunk back after a large frame */
    SL__CONN_EV_TLS_HANDSHAKES, /* TLS handshakes completed */
    SL__CONN_EV_TLS_RESUMED,    /* of them, resuming a session (a ticket) */
    /* TLS failures, by reason (conn_tls.c) */
    SL__CONN_EV_TLS_PLAINTEXT,   /* the first bytes were not a TLS record */
    SL__CONN_EV_TLS_VERSION,     /* the client offered only versions refused */
    SL__CONN_EV_TLS_CIPHER,      /* no cipher in common */
    SL__CONN_EV_TLS_CLIENT_CERT, /* client certificate missing or not verified */
    SL__CONN_EV_TLS_ALERT,       /* the peer sent a fatal alert (it refused us) */
    SL__CONN_EV_TLS_EOF,         /* the peer left during the handshake */
    SL__CONN_EV_TLS_INCOMPLETE,  /* closed by the server mid-handshake (read_timeout) */
    SL__CONN_EV_TLS_OTHER,       /* any other TLS error (a bad record, ...) */
    /* The proxy's TLS connections to its upstreams (proxy_up.c): handshakes
     * completed (and of them, sessions resumed), and failures by reason. */
    SL__CONN_EV_UP_TLS_HANDSHAKES,
    SL__CONN_EV_UP_TLS_RESUMED,
    SL__CONN_EV_UP_TLS_VERIFY,    /* the upstream's certificate not trusted (or expired) */
    SL__CONN_EV_UP_TLS_NAME,      /* ... trusted, but not for the name or address asked */
    SL__CONN_EV_UP_TLS_HANDSHAKE, /* the handshake failed otherwise */
    SL__CONN_EV_UP_TLS_OTHER,     /* the connection dropped during it, ... */
    SL__CONN_EV_COUNT
};

/* A loaded certificate's expiry: up to 16 per listener, 8 listeners. */
#define SL__METRICS_TLS_CERTS 128
struct sl__metrics_tls_cert {
    const char *address; /* the listener's */
    unsigned port;
    const char *cert_file;
    int64_t not_after; /* seconds since the epoch */
};

/* Scrape-time values the caller reads from elsewhere (table, config). */
struct sl__metrics_gauges {
    uint64_t table_entries;           /* keys tracked now */
    uint64_t table_bytes;             /* memory in use by the table */
    uint64_t table_max_bytes;         /* its cap */
    uint64_t table_evictions;         /* counter */
    uint64_t table_evictions_denying; /* of them, entries out of quota, counter */
    uint64_t table_full_denials;      /* counter */
    uint64_t table_summary_folds;     /* evicted entries whose debt it kept, counter */
    uint64_t table_summary_restores;  /* new keys whose state it decided, counter */
    uint64_t table_summary_cells;     /* its size, gauge */
    uint64_t table_summary_used;      /* cells holding a debt not yet whole, gauge */
    uint64_t reloads;                 /* successful rule reloads, counter */
    uint64_t reload_failures;         /* rejected reloads, counter */
    uint64_t reload_requests;         /* reloads asked (SIGHUP, files, nodes), counter */
    uint64_t reloads_coalesced;       /* of them, folded into a pending one, counter */
    int64_t connections;              /* open now; -1: use sl__metrics_connection() counts */
    uint64_t buffer_bytes;            /* memory held by every connection's buffers now */
    bool tls;                         /* some listener serves TLS: its series are shown */
    uint64_t tls_reloads_ok, tls_reloads_failed; /* certificate rotations, counters */
    struct sl__metrics_tls_cert tls_certs[SL__METRICS_TLS_CERTS];
    size_t n_tls_certs;
};

/* SL_OK, SL_EINVAL (0 workers or cap), SL_ENOMEM. */
int sl__metrics_new(const struct sl__metrics_config *c, struct sl__metrics **out);
void sl__metrics_free(struct sl__metrics *m);

/* Count one decision for (domain, limit) on worker w (hot path). */
void sl__metrics_decision(struct sl__metrics *m, unsigned w, struct sl_str domain,
                          struct sl_str limit, enum sl__metric_outcome outcome);
/* Count every status of `res` that has a limit under (domain, its limit's
 * name), plus a shadow denial where one would have denied; `labels[i]`,
 * when labels is non-NULL and labels[i].len > 0, replaces status i's limit
 * label (Envoy detailed_metric). Hot path; every protocol calls it. */
void sl__metrics_result(struct sl__metrics *m, unsigned w, struct sl_str domain,
                        const struct sl_result *res, const struct sl_str *labels);
/* A request named a domain no rule knows (hot path). */
void sl__metrics_unknown_domain(struct sl__metrics *m, unsigned w);
/* A check was answered allowed without deciding: its domain's kill switch
 * is "off" (hot path). */
void sl__metrics_killswitch_off(struct sl__metrics *m, unsigned w);
/* One check took `ns` nanoseconds (hot path). */
void sl__metrics_latency(struct sl__metrics *m, unsigned w, int64_t ns);
/* A batch of n checks decided together through the store's batch path. */
void sl__metrics_batch(struct sl__metrics *m, unsigned w, size_t n);
/* Count `n` of event `e` on worker w (any thread that owns w). */
void sl__metrics_conn_event(struct sl__metrics *m, unsigned w, enum sl__conn_event e, uint64_t n);
/* A connection opened (+1) or closed (-1) on worker w. */
void sl__metrics_connection(struct sl__metrics *m, unsigned w, int delta);

/*
 * Write the whole exposition (text format 0.0.4) into buf[0..cap): the
 * workers' counters summed, then `g`. SL_OK with *len, or SL_ETOOBIG; a
 * buffer of sl__metrics_render_bound() bytes is always enough.
 */
int sl__metrics_render(struct sl__metrics *m, const struct sl__metrics_gauges *g, char *buf,
                       size_t cap, size_t *len);
size_t sl__metrics_render_bound(const struct sl__metrics *m);

#endif /* SL_SERVER_METRICS_H */
