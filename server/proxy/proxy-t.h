/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy-t.h - the types of the proxy room (internal): its configuration
 * (routes and their upstreams), the per-worker state (upstream servers'
 * health and keep-alive pools), an upstream connection, and the exchange
 * (one client connection's request in flight and its response).
 *
 * Ownership: the configuration belongs to the server's configuration and
 * is read-only once workers run. Everything else belongs to one worker
 * and is touched only on its loop thread: an exchange is the client
 * connection's proto_state (freed with it); an upstream connection is
 * owned by its pool while idle and by the exchange using it otherwise.
 */
#ifndef SL_PROXY_T_H
#define SL_PROXY_T_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

#include "conn-t.h"
#include "proxy_chunk.h"
#include "proxy_limit-t.h"
#include "proxy_parse.h"
#include "sluice_adaptive.h"
#include "tls_client.h"

#define SL__PROXY_MAX_SERVERS 32 /* per upstream: a bitmask of those tried */
#define SL__PROXY_MAX_ROUTES  256
#define SL__PROXY_MAX_METHODS 16
/* Protocols one route may tunnel after a 101 (its `upgrades:`). */
#define SL__PROXY_MAX_UPGRADES 8

/* ------------------------------------------------------------ configuration */

struct sl__proxy_server {
    char name[72];                /* "host:port" as configured ([v6]:port) */
    char host[72];                /* its host (a v6 address without brackets) */
    struct sockaddr_storage addr; /* numeric address and port */
};

struct sl__tls_client; /* tls_client.h */
struct sl__tlsc;

struct sl__proxy_upstream {
    struct sl__proxy_server servers[SL__PROXY_MAX_SERVERS];
    unsigned n_servers;
    unsigned max_fails;         /* failures within fail_timeout that take a server out */
    int64_t fail_timeout_ms;    /* that window, and how long it stays out */
    unsigned keepalive;         /* idle connections kept per server and worker */
    struct sl__tls_client *tls; /* `tls:`: its connections are TLS; NULL clear */
};

/* Workers the server may run (server.c caps `workers` there): the slots
 * of an adaptive route's board. */
#define SL__PROXY_MAX_WORKERS 256

/* Where a request's class comes from (adaptive_concurrency.class_from). */
enum sl__proxy_class_from {
    SL__PCF_NONE = 0, /* one class, or every request the least critical */
    SL__PCF_HEADER,   /* a header, believed from trusted_proxies only */
    SL__PCF_ROUTE,    /* the route's `class` */
};

/* What one worker shows of one adaptive route, for scrapes from other
 * threads: written by that worker alone (relaxed load and store), read by
 * /metrics and /v1/stats. RTTs are ns, 0 unknown. */
struct sl__proxy_apub {
    _Atomic uint32_t limit, inflight;
    _Atomic int64_t min_rtt_ns, sample_rtt_ns, sample_at_ns;
    _Atomic uint64_t admitted[SL_PARTITION_MAX], shed[SL_PARTITION_MAX];
    _Atomic uint32_t cls_inflight[SL_PARTITION_MAX];
};

/* The workers' blocks of one adaptive route: a worker publishes its own
 * (release) when its proxy state is made; the blocks live as long as the
 * configuration (freed with it, after the workers have ended). */
struct sl__proxy_aboard {
    _Atomic(struct sl__proxy_apub *) w[SL__PROXY_MAX_WORKERS];
};

/* A route's `adaptive_concurrency:` (proxy_adaptive_config.c): the
 * controller, its classes, and how a shed request is answered. */
struct sl__proxy_adaptive {
    struct sl_adaptive_config ac;    /* validated */
    struct sl_partition_config pc;   /* validated; one class without `classes` */
    char *classes[SL_PARTITION_MAX]; /* their names, most critical first */
    enum sl__proxy_class_from class_from;
    char *class_header;             /* SL__PCF_HEADER: lower-case */
    uint32_t route_class;           /* SL__PCF_ROUTE: the class of every request */
    unsigned status;                /* of a shed request; 503 */
    int64_t retry_after_ms;         /* its Retry-After (whole seconds, at least 1); 1 s */
    unsigned index;                 /* among the configuration's adaptive routes */
    struct sl__proxy_aboard *board; /* what workers publish */
};

/* Unset per-route values take the section's (proxy.*) in the check. */
#define SL__PROXY_UNSET_MS   (-1)
#define SL__PROXY_UNSET_SIZE SIZE_MAX
#define SL__PROXY_UNSET_U    UINT32_MAX

struct sl__proxy_route {
    char *name;        /* for the access log; "#N" by default */
    char *host;        /* exact Host (port ignored, case-insensitive); NULL any */
    char *path_prefix; /* matched on the raw target; "/" by default */
    char *methods[SL__PROXY_MAX_METHODS];
    size_t n_methods; /* 0: any method */
    /* Upgrade protocols passed to the upstream (lower case, without
     * versions); any other Upgrade is stripped and the request forwarded
     * plainly. [websocket] unless `upgrades:` is given; h2c never. */
    char *upgrades[SL__PROXY_MAX_UPGRADES];
    size_t n_upgrades;
    bool upgrades_set; /* `upgrades:` was given (maybe []) */
    struct sl__proxy_upstream up;
    int64_t connect_timeout_ms;    /* to open a connection to a server */
    int64_t read_timeout_ms;       /* between two reads of the response */
    int64_t send_timeout_ms;       /* between two writes that make progress */
    size_t max_body_bytes;         /* request body; 0 unlimited */
    struct sl__proxy_limits lim;   /* what limits its requests (proxy_limit_config.c) */
    struct sl__proxy_adaptive *ad; /* adaptive_concurrency; NULL none */
    size_t line, col;              /* where it was configured, for messages */
};

/* The `proxy:` section (proxy_config.c). */
struct sl__proxy_config {
    int64_t connect_timeout_ms, read_timeout_ms, send_timeout_ms;
    size_t max_body_bytes;
    unsigned max_fails;
    int64_t fail_timeout_ms;
    unsigned keepalive;
    int64_t keepalive_timeout_ms; /* an idle upstream connection is closed after this */
    char *via;                    /* the pseudonym in Via headers */
    /* the routes' limits: defaults, and where the client's address comes from */
    int64_t max_delay_ms;
    uint32_t max_queue;
    unsigned deny_status;
    unsigned deny_body; /* enum sl__proxy_deny_body */
    char *deny_text;
    unsigned client_header; /* enum sl__proxy_client_header */
    struct sl__proxy_cidr *trusted;
    size_t n_trusted;
    struct sl__proxy_route *routes;
    size_t n_routes;
    size_t n_adaptive; /* routes with adaptive_concurrency (their ad->index) */
};

/* ------------------------------------------------------------ per worker */

struct sl__metrics;
struct sl__proxy_up;
struct sl__proxy_x;
struct sl__proxy_local; /* a local answer (proxy_int.h) */
struct sl__proxy_worker;

/* What the gate made of a request (proxy_gate.h). */
enum sl__proxy_verdict {
    SL__PROXY_FORWARD,
    SL__PROXY_ANSWERED,
    SL__PROXY_HOLD,
};

/* The events the helpers report to the exchange's state machine
 * (proxy.c), which registers them once per worker (sl__proxy_worker_get)
 * and alone handles them: a helper calls through these pointers, never
 * proxy.c by name, so that no call goes back up the room's files
 * (docs/architecture.md §The proxy's exchange). Each is called from the
 * loop, never inside a call the state machine made to the helper. */
struct sl__proxy_events {
    /* proxy_up.c, the exchange's upstream connection: connected (status
     * 0) or not (a libuv error); bytes read (in up->in); closed, reset or
     * a write failed (status a libuv error or UV_EOF); all queued bytes
     * written. */
    void (*up_connected)(struct sl__proxy_x *x, int status);
    void (*up_data)(struct sl__proxy_x *x);
    void (*up_eof)(struct sl__proxy_x *x, int status);
    void (*up_drained)(struct sl__proxy_x *x);
    /* proxy_up.c, a connection without exchange: an idle pooled one read
     * something (its server closed it); one's handle closed and freed. */
    void (*idle_heard)(struct sl__proxy_up *up);
    void (*up_closed)(struct sl__proxy_worker *pw);
    /* proxy_pool.c: the worker's tick, once per exchange in flight. */
    void (*tick)(struct sl__proxy_x *x, int64_t now_ms);
    /* proxy_gate.c: the verdict on a request it held (FORWARD, ANSWERED
     * with `answer`, or HOLD for a client that left while it was
     * decided); a store call of the gate was answered. */
    void (*verdict)(struct sl__proxy_x *x, enum sl__proxy_verdict v,
                    struct sl__proxy_local *answer);
    void (*store_answered)(struct sl__proxy_worker *pw);
};
struct sl__proxy_greq;     /* the gate's state of one request (proxy_gate.c) */
struct sl__proxy_aw;       /* a worker's controller of one route (proxy_adaptive.c) */
struct sl__proxy_ascratch; /* a worker's shed answer (proxy_adaptive.c) */
struct sl__proxy_gscratch; /* the gate's per-worker scratch (proxy_gate.c) */

/* A route's count of requests held for their delay (bounded by max_queue). */
struct sl__proxy_queue {
    uint32_t n;
};

/* The last release time given to a key (a hash of its route and
 * descriptors) still held, so a key's requests leave in the order they
 * were queued. */
struct sl__proxy_keydue {
    uint64_t key;
    int64_t due_ms;
};
#define SL__PROXY_KEYDUE_SLOTS 1024 /* a power of two */

/* The gate's state on one worker (proxy_gate.c). */
struct sl__proxy_gate_w {
    uv_timer_t timer;                /* the earliest release of a held request */
    struct sl__proxy_queue *queues;  /* one per route */
    struct sl__proxy_greq **heap;    /* held requests, min-heap of (release, order queued) */
    size_t n_queued;                 /* over every route: the heap's size */
    size_t heap_cap;                 /* grown, never shrunk: no allocation once warm */
    uint64_t seq;                    /* order queued, breaking ties of release times */
    struct sl__proxy_keydue *keydue; /* SL__PROXY_KEYDUE_SLOTS */
    size_t n_busy;                   /* store calls (decisions, releases) not answered yet */
    struct sl__proxy_greq *free;     /* per-request states, reused */
    struct sl__proxy_gscratch *scratch;
};

/* One configured server of one route, as one worker sees it. */
struct sl__proxy_peer {
    const struct sl__proxy_server *srv;
    const struct sl__proxy_upstream *up; /* the upstream it belongs to */
    unsigned fails;                      /* failures in the current window */
    int64_t window_ms;                   /* loop time the window started */
    int64_t down_until_ms;               /* skipped until then (loop time) */
    struct sl__proxy_up *idle;           /* idle keep-alive connections */
    unsigned n_idle;
    struct sl__tlsc_slot tls_session; /* its last TLS session, offered again */
};

struct sl__proxy_worker {
    uv_loop_t *loop;
    const struct sl__proxy_config *cfg;
    const struct sl__proxy_events *ev; /* the state machine's (proxy.c) */
    struct sl__proxy_peer *peers;      /* route r's servers from peer_base[r] */
    size_t *peer_base;
    unsigned *rr;                /* round-robin position per route */
    uv_timer_t tick;             /* timeouts of exchanges and idle upstreams */
    struct sl__proxy_x *active;  /* exchanges in flight */
    size_t n_ups;                /* open upstream connections */
    size_t n_xs;                 /* client connections with an exchange */
    struct sl__metrics *metrics; /* the server's, counted as worker `wid` */
    unsigned wid;
    bool stopping;
    bool tick_closed;
    bool log_wanted;        /* log.access is on: keep referer and user agent */
    struct sl__buf scratch; /* heads written to a client (copied at once), reused */
    struct sl__proxy_gate_w gate;
    struct sl__proxy_aw *ad;          /* per adaptive route (route->ad->index) */
    struct sl__proxy_ascratch *ad_sc; /* the answer to a shed request */
    unsigned closing;                 /* handles being closed before the state is freed */
};

/* ------------------------------------------------------------ upstream connection */

struct sl__proxy_up {
    uv_tcp_t tcp; /* tcp.data points back here */
    uv_connect_t creq;
    uv_write_t wreq;
    struct sl__proxy_worker *pw;
    struct sl__proxy_peer *peer;
    struct sl__proxy_x *x; /* the exchange using it; NULL while idle */
    struct sl__buf in;     /* read, not yet handled */
    struct sl__buf out, inflight;
    /* With TLS: the transform, ciphertext read (fed to it at once) and
     * ciphertext to send (`out` is then plaintext, encrypted on flush). */
    struct sl__tlsc *tls;
    struct sl__buf raw, wire;
    int64_t idle_since_ms;
    unsigned requests; /* served over this connection */
    /* connected: ready for the exchange's bytes (TCP connected and, with
     * TLS, the handshake done); tcp_up: the TCP connection alone. */
    bool connected, tcp_up, writing, reading, closing;
    struct sl__proxy_up *next; /* the peer's idle list */
};

/* ------------------------------------------------------------ exchange */

/* The exchange's states; proxy.c alone changes them (docs/architecture.md
 * §The proxy's exchange has the diagram). */
enum sl__proxy_phase {
    SL__PX_IDLE,       /* waiting for a request head */
    SL__PX_ROUTED,     /* a head parsed: routed and put to the gate (one call) */
    SL__PX_HELD,       /* the gate holds the request (proxy_gate.h) */
    SL__PX_CONNECTING, /* an upstream connection is being opened */
    SL__PX_FORWARD,    /* request and response under way */
    SL__PX_TUNNEL,     /* after 101: bytes both ways */
    SL__PX_DONE,       /* answered; waiting for the client side to finish */
};

/* How a body is framed on one side. */
enum sl__proxy_framing {
    SL__PF_NONE,    /* no body */
    SL__PF_LENGTH,  /* `left` bytes */
    SL__PF_CHUNKED, /* chunked coding */
    SL__PF_CLOSE,   /* until the connection closes (responses only) */
};

/* What the access log and the gate's completion learn of an exchange. */
struct sl__proxy_acc {
    char client[48]; /* peer address */
    char method[16];
    char target[512]; /* truncated */
    char referer[256];
    char agent[256];
    int minor;
    int status;           /* sent to the client; 0 none (the client went away: 499) */
    uint64_t bytes_in;    /* request body bytes from the client */
    uint64_t bytes_out;   /* response body bytes to the client */
    int64_t start_ns;     /* CLOCK_REALTIME of the head */
    int64_t t0_ms;        /* loop time of the head */
    int64_t up_start_ms;  /* loop time forwarding started, -1 never */
    int64_t up_head_ms;   /* loop time the response head arrived, -1 never */
    int64_t delay_ms;     /* how long the gate scheduled it to be held, -1 not held */
    const char *upstream; /* server name, or NULL */
    const char *decision; /* the limits' verdict (static): "allow", "deny", ...; NULL none */
};

struct sl__proxy_x {
    struct sl__conn *c; /* NULL once the client connection is gone */
    struct sl__proxy_worker *pw;
    const struct sl__proxy_route *route;
    unsigned route_i;
    enum sl__proxy_phase phase;
    struct sl__proxy_up *up;
    struct sl__proxy_peer *peer;
    uint32_t tried; /* servers of the route tried for this request */
    unsigned tries;
    bool reused;    /* the upstream connection came from the pool */
    bool timed_out; /* a try timed out (504 rather than 502 if none is left) */
    bool close_now; /* close the client connection when on_read returns */

    /* the request */
    bool head_method, keep_alive, upgrade, expect_100, idempotent;
    enum sl__proxy_framing req_framing; /* as received */
    uint64_t req_left;                  /* LENGTH: body bytes still to come */
    struct sl__proxy_chunk req_chunk;
    bool req_done; /* the whole request has been taken from the client */
    bool req_sent; /* ... and handed to the upstream socket */
    bool continue_sent;
    bool client_held;    /* reading the client is held for upstream back-pressure */
    struct sl__buf head; /* the rewritten request head, kept for a retry */

    /* the response */
    bool resp_started;   /* a byte of the final response went to the client */
    bool resp_head_done; /* the final response head has been read */
    bool resp_done;
    bool resp_chunked_out; /* re-chunked to the client */
    bool close_after;      /* close the client connection after the response */
    bool up_reusable;      /* the upstream connection may go back to the pool */
    enum sl__proxy_framing resp_framing;
    uint64_t resp_left;
    struct sl__proxy_chunk resp_chunk;
    bool up_paused; /* upstream reads stopped for client back-pressure */

    /* timeouts (loop ms) */
    int64_t phase_ms;  /* the current phase started */
    int64_t up_io_ms;  /* last progress with the upstream */
    int64_t client_ms; /* last progress with the client */

    struct sl__proxy_acc acc;
    struct sl__proxy_greq *gate; /* the gate's own state for this request (proxy_gate.h) */
    /* adaptive concurrency (proxy_adaptive.c): the class the gate chose,
     * a slot held, and the times (uv_hrtime) of admission, of the request
     * handed to the upstream (the last try's) and of the response head */
    uint32_t ad_cls;
    bool ad_held;
    int ad_status;        /* the response head's status; 0 none */
    uint32_t ad_inflight; /* in flight on the route's limit when admitted */
    int64_t ad_admit_ns, ad_sent_ns, ad_head_ns;
    struct sl_str resp_hdrs; /* header lines the gate adds to the response */
    struct sl__proxy_head h; /* scratch: the head being parsed */

    struct sl__proxy_x *prev, *next; /* the worker's active list */
    bool in_active;
};

#endif /* SL_PROXY_T_H */
