/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * config-t.h - the types of sluiced's configuration (internal).
 *
 * One struct holds everything `sluiced -c FILE` can set but the stores' own
 * keys (an opaque sl__store_config, owned by the store layer); defaults come
 * from the key table in config.c through sl__config_init(), and every field
 * says its unit. Strings are owned by the struct and freed by
 * sl__config_free().
 */
#ifndef SL_SERVER_CONFIG_T_H
#define SL_SERVER_CONFIG_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct sl__store_config;
struct sl__tls;

#define SL__MAX_LISTENERS    8
#define SL__MAX_RULE_FILES   64
#define SL__MAX_RULE_DIRS    16
#define SL__MAX_ROOM_CONFIGS 8 /* registered room sections (config.h) */
#define SL__MAX_ADMIN_HOSTS  16
/* A client certificate name kept for a connection (client_cert_name). */
#define SL__CERT_NAME_MAX 255

/* Rate-limit header families, OR-ed into http_headers (http.headers). */
enum sl__hdr_family {
    SL__HDR_IETF = 1u << 0,        /* RateLimit-Policy and RateLimit */
    SL__HDR_X = 1u << 1,           /* X-RateLimit-Limit/Remaining/Reset */
    SL__HDR_RETRY_AFTER = 1u << 2, /* Retry-After on a denial */
    SL__HDR_ALL = SL__HDR_IETF | SL__HDR_X | SL__HDR_RETRY_AFTER,
};

/* How Envoy's answers carry rate-limit headers (envoy.header_style). */
enum sl__envoy_style {
    SL__ENVOY_STYLE_RATELIMIT = 0, /* RateLimit-Limit/-Remaining/-Reset, as envoyproxy/ratelimit */
    SL__ENVOY_STYLE_IETF = 1,      /* the IETF draft's RateLimit-Policy and RateLimit */
};

enum sl__log_level {
    SL__LOG_ERROR = 0,
    SL__LOG_WARN = 1,
    SL__LOG_INFO = 2,
    SL__LOG_DEBUG = 3,
};

/* log.format: how sluiced's own log lines (stderr) are written (log.h). */
enum sl__log_format {
    SL__LOG_TEXT = 0, /* "TIME LEVEL EVENT message" */
    SL__LOG_JSON = 1, /* one JSON object per line, for log shippers */
};

/* log.access: one line per proxied request on stdout, in this format. */
enum sl__log_access {
    SL__ACCESS_OFF = 0,
    SL__ACCESS_COMBINED = 1, /* Apache/nginx combined, then the proxy's fields */
    SL__ACCESS_JSON = 2,     /* one JSON object per line */
};

/* How connections do their I/O (server.io_uring). */
enum sl__io_mode {
    SL__IO_AUTO = 0, /* io_uring where the kernel allows it, else libuv's readiness loop */
    SL__IO_ON = 1,   /* io_uring, or refuse to start */
    SL__IO_OFF = 2,  /* libuv's readiness loop */
};

/* What GET /readyz answers 200 for (http.readyz). */
enum sl__readyz_mode {
    SL__READYZ_DECISIONS = 0, /* checks are decided: by the store, or a local/allow policy */
    SL__READYZ_STORE = 1,     /* only while the store decides with its own state */
};

struct sl__listener {
    char address[64]; /* numeric IPv4 or IPv6 address */
    uint16_t port;    /* 0: the kernel picks one (printed at start) */
    unsigned protos;  /* enum sl__proto_bit set */
    bool admin;       /* `admin: true`: the listener for the admin endpoints */
    /* Computed by sl__config_finish(): this listener serves the admin
     * endpoints (it is the admin listener, or none is configured and this
     * one is on a loopback address). */
    bool admin_paths;
    /* copied from the server limits so a connection needs only its listener */
    size_t max_frame_bytes;
    /* `tls:` (tls-t.h): the listener serves only TLS; NULL: clear text.
     * Owned, freed by sl__config_free(). */
    struct sl__tls *tls;
};

struct sl__config {
    char *path; /* the file it was read from, NULL for defaults */

    struct sl__listener listeners[SL__MAX_LISTENERS];
    size_t n_listeners;
    unsigned workers; /* 0: one per core */

    char *rules_files[SL__MAX_RULE_FILES]; /* resolved against the config dir */
    size_t n_rules_files;
    /* rules.directories: every *.yaml / *.yml of each, resolved against the config dir */
    char *rules_dirs[SL__MAX_RULE_DIRS];
    size_t n_rules_dirs;
    char *rules_db;         /* SQLite rules database, NULL: none */
    bool rules_shadow_mode; /* global shadow mode: the "*" kill switch in shadow at start */
    bool rules_watch;
    bool rules_allow_empty; /* a rules file may hold no rules, a domain no descriptors */
    int64_t rules_debounce_ms;

    size_t store_max_bytes; /* hard cap of the state table */
    unsigned store_shards;  /* 0: the table's default */
    enum sl_on_full store_on_full;
    /* store.type and every store's own keys: opaque (store/include/store.h) */
    struct sl__store_config *store;

    unsigned max_connections;    /* over all workers */
    size_t max_frame_bytes;      /* largest request/frame accepted */
    int64_t idle_timeout_ms;     /* close a connection silent this long; 0 never */
    int64_t read_timeout_ms;     /* close one stuck mid-frame this long; 0 never */
    int64_t write_timeout_ms;    /* close one whose replies are not read this long; 0 never */
    int64_t header_timeout_ms;   /* close a new one that sent nothing this long; 0 never */
    size_t max_buffer_bytes;     /* every connection's buffers together */
    unsigned max_conns_per_ip;   /* open connections from one address; 0: no limit */
    unsigned ipv6_client_prefix; /* bits of an IPv6 address that name one client */
    char *user;                  /* switch to this user after binding, when started as root */
    int64_t shutdown_grace_ms;   /* how long in-flight replies may take at exit */
    enum sl__io_mode io_uring;   /* server.io_uring */

    enum sl__log_level log_level;
    enum sl__log_format log_format;
    enum sl__log_access log_access;

    /* The bearer token every admin request needs: admin.token, or read from
     * (or created in) its file at start (token.h); NULL only before that. */
    char *admin_token;
    char *admin_token_file;                 /* admin.token_file (resolved), NULL: the default */
    unsigned admin_max_failures;            /* admin.max_failures: per minute per address, 0 none */
    char *admin_hosts[SL__MAX_ADMIN_HOSTS]; /* names a Host header may carry (admin.hosts) */
    size_t n_admin_hosts;
    /* Verified client certificate names granted the admin privilege as the
     * token is (admin.client_cert_names; conn_tls.c says which name). */
    char *admin_cert_names[SL__MAX_ADMIN_HOSTS];
    size_t n_admin_cert_names;
    unsigned http_headers;       /* enum sl__hdr_family set sent on check answers */
    int64_t http_max_delay_ms;   /* /v1/auth holds a delayed reply up to this */
    enum sl__readyz_mode readyz; /* what /readyz means (http.readyz) */
    unsigned metrics_max_series; /* distinct request-derived label sets per worker */

    /* Envoy's API (POST /json, gRPC): response_headers_to_add */
    bool envoy_headers;          /* fill it */
    unsigned envoy_header_style; /* enum sl__envoy_style */
    char *envoy_header_limit;    /* names in the "ratelimit" style */
    char *envoy_header_remaining;
    char *envoy_header_reset;

    /* Each registered room section's own configuration (config.h), in the
     * order of sl__config_sections; owned, freed by sl__config_free(). */
    void *rooms[SL__MAX_ROOM_CONFIGS];

    /* From the command line, not the file. */
    bool test_clock;
    int64_t test_clock_start_ms;
};

#endif /* SL_SERVER_CONFIG_T_H */
