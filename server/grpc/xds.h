/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * xds.h - the xDS rules source (internal): a client of an aggregated
 * discovery service (ADS, state of the world) on the main thread's loop,
 * subscribed to envoyproxy/ratelimit's RateLimitConfig resources, whose
 * rules it adds to every rules load as a file's (docs/rules.md,
 * "Precedence"). Its configuration is the section `rules.xds`.
 *
 * Ownership: the client belongs to the server it is started for (one per
 * daemon); what it renders for operators is read under its own lock, from
 * any thread.
 */
#ifndef SL_SERVER_XDS_H
#define SL_SERVER_XDS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct sl__buf;
struct sl__server;
struct sl__tls_client;

/* The type of the resources asked for. */
#define SL__XDS_TYPE_URL "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

struct sl__xds_config {
    char *server;               /* "host:port" of the management server; NULL: no xDS */
    char *node_id;              /* the node's id sent in every request */
    char *cluster;              /* the node's cluster, NULL: none */
    struct sl__tls_client *tls; /* TLS to the server, NULL: plaintext (h2c) */
    int64_t backoff_ms;         /* the first wait before reconnecting */
    int64_t max_backoff_ms;     /* the longest */
    /* where server was split (host, port), set by the check */
    char host[256];
    unsigned port;
};

extern const struct sl__config_section sl__xds_config_section;

/* One rendered resource: its name (for messages) and the rules YAML that
 * the library's loader reads, as envoyproxy/ratelimit's files write it. */
struct sl__xds_text {
    char *name;
    char *yaml;
    size_t len;
};

/* Decode the serialized DiscoveryResponse resources `anys` (protobuf-c
 * Any messages, n of them) into texts (*out, *n_out; free with
 * sl__xds_texts_free). SL_OK, or SL_EPARSE with a sentence in err. Pure. */
struct Google__Protobuf__Any;
int sl__xds_render(struct Google__Protobuf__Any *const *anys, size_t n, struct sl__xds_text **out,
                   size_t *n_out, char *err, size_t errlen);
void sl__xds_texts_free(struct sl__xds_text *t, size_t n);

/* The client on the main loop (the grpc protocol's main_start/main_stop). */
int sl__xds_start(struct sl__server *srv);
void sl__xds_stop(struct sl__server *srv);

/* For /metrics and GET /v1/stats (any thread). */
void sl__xds_render_metrics(const struct sl__server *srv, struct sl__buf *out);
void sl__xds_render_stats(const struct sl__server *srv, struct sl__buf *out);

#endif /* SL_SERVER_XDS_H */
