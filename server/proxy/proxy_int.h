/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_int.h - what the proxy room's files call of each other (internal
 * to server/proxy/). Types in proxy-t.h. Everything runs on one worker's
 * loop thread.
 */
#ifndef SL_PROXY_INT_H
#define SL_PROXY_INT_H

#include <stdio.h>

#include <yaml.h>

#include "config-t.h"
#include "proxy-t.h"

/* Output queued for a peer above this stops the side that feeds it (the
 * other connection's reading) until it has drained: the bound on what one
 * exchange buffers in each direction, however large the body. */
#define SL__PROXY_HIGH (256u << 10)

/* ------------------------------------------------------------ proxy_limit_config.c */

struct sl__config_ctx;
extern const char *const sl__proxy_deny_body_names[];     /* enum sl__proxy_deny_body */
extern const char *const sl__proxy_client_header_names[]; /* enum sl__proxy_client_header */

/* A route's limits before its keys are read (every value unset). */
void sl__proxy_limit_init(struct sl__proxy_limits *l);
/* One route key `key` if it is a limiting one: 0 read, 1 not one of
 * them, -1 after sl__config_fail(). */
int sl__proxy_limit_key(struct sl__config_ctx *x, struct sl__proxy_limits *l, const char *key,
                        yaml_node_t *v);
/* Unset values from the section (and http.headers) once the file is
 * read; SL_EINVAL with *why when the route's limits cannot work. */
int sl__proxy_limit_complete(const struct sl__proxy_config *pc, unsigned http_headers,
                             struct sl__proxy_limits *l, const char **why);
void sl__proxy_limit_free(struct sl__proxy_limits *l);
/* proxy.trusted_proxies: a list of addresses and CIDR ranges. */
int sl__proxy_trusted_load(struct sl__config_ctx *x, struct sl__proxy_config *pc, yaml_node_t *v);
/* --help lines for what the key table cannot print. */
void sl__proxy_limit_help(FILE *out);

/* ------------------------------------------------------------ proxy_adaptive_config.c */

/* A route's `adaptive_concurrency:` mapping `m` into r->ad: 0, or -1
 * after sl__config_fail(). */
int sl__proxy_adaptive_load(struct sl__config_ctx *x, struct sl__proxy_route *r, yaml_node_t *m);
/* Once the file is read: the adaptive routes numbered (ad->index,
 * pc->n_adaptive) and their boards made. */
void sl__proxy_adaptive_complete(struct sl__proxy_config *pc);
/* Free ad (NULL: nothing), its board and the workers' blocks on it. */
void sl__proxy_adaptive_free(struct sl__proxy_adaptive *ad);

/* ------------------------------------------------------------ proxy_route.c */

/* The index of the first route of `pc` that `h` matches, or -1. */
int sl__proxy_route_match(const struct sl__proxy_config *pc, const struct sl__proxy_head *h);

/* ------------------------------------------------------------ proxy_head.c */

/* How the request goes upstream. */
struct sl__proxy_fwd {
    const char *client; /* the client's address, for X-Forwarded-For and Forwarded */
    const char *via;    /* this proxy's pseudonym */
    const char *host;   /* Host to send when the request has none (HTTP/1.0) */
    enum sl__proxy_framing framing;
    uint64_t length; /* with SL__PF_LENGTH */
    bool upgrade;    /* pass Upgrade and Connection: upgrade */
};

/* The request head for the upstream into `out` (appended): request line in
 * HTTP/1.1, the client's headers but the hop-by-hop ones (and those its
 * Connection header names), Expect (answered here), and the framing and
 * forwarding headers rebuilt. */
void sl__proxy_req_head(struct sl__buf *out, const struct sl__proxy_head *h,
                        const struct sl__proxy_fwd *f);

/* How the response goes to the client. */
struct sl__proxy_rfwd {
    const char *via;
    enum sl__proxy_framing framing; /* to the client */
    uint64_t length;                /* with SL__PF_LENGTH */
    bool keep_length;               /* pass the upstream's Content-Length (HEAD, 304) */
    bool close;                     /* Connection: close */
    bool keep_alive10;              /* Connection: keep-alive to an HTTP/1.0 client */
    bool upgrade;                   /* a 101: pass Upgrade and Connection: upgrade */
    struct sl_str extra; /* header lines to add ("Name: v\r\n"...); replace the upstream's
                          * rate-limit headers */
};

/* The response head for the client into `out` (appended). */
void sl__proxy_resp_head(struct sl__buf *out, const struct sl__proxy_head *h,
                         const struct sl__proxy_rfwd *f);

/* A response the proxy makes itself. */
struct sl__proxy_local {
    int status;
    const char *type;      /* Content-Type */
    struct sl_str headers; /* more header lines, each ending in CRLF */
    struct sl_str body;
    bool close;   /* Connection: close */
    bool no_body; /* an answer to HEAD: Content-Length as if, no body */
};
void sl__proxy_local_resp(struct sl__buf *out, const struct sl__proxy_local *l);

/* An error response of the proxy's own: JSON body {"error": why}. */
void sl__proxy_local_head(struct sl__buf *out, int status, bool close, const char *why);
/* That body into buf[0..cap); its length (0 if it did not fit). */
size_t sl__proxy_error_body(char *buf, size_t cap, const char *why);

/* The reason phrase of `status` ("Too Many Requests"). */
const char *sl__proxy_reason(int status);

/* ------------------------------------------------------------ proxy_pool.c */

/* This worker's proxy state, made on first use (loop thread of `loop`,
 * worker `wid`), whose helpers report to the state machine through `ev`
 * (static). */
struct sl__proxy_worker *sl__proxy_worker_get(uv_loop_t *loop, unsigned wid,
                                              const struct sl__config *cfg,
                                              const struct sl__proxy_events *ev);

/* The next server of route `ri` to try: round robin over those not in
 * *tried and not taken out by failures (with one server, it is always
 * tried). Adds it to *tried. NULL when none is left. */
struct sl__proxy_peer *sl__proxy_pick(struct sl__proxy_worker *pw, unsigned ri, uint32_t *tried);

/* Count a failure (connect error or timeout, response timeout) or a
 * success of `peer`, as nginx's max_fails and fail_timeout do. */
void sl__proxy_peer_failed(struct sl__proxy_worker *pw, struct sl__proxy_peer *peer);
void sl__proxy_peer_ok(struct sl__proxy_peer *peer);

/* An idle keep-alive connection to `peer`, now the caller's, or NULL. */
struct sl__proxy_up *sl__proxy_pool_take(struct sl__proxy_peer *peer);

/* Give `up` back after a complete exchange: kept idle when the pool has
 * room and the worker is not stopping, closed otherwise. */
void sl__proxy_pool_put(struct sl__proxy_up *up);

/* Close every idle connection to `p` (one turned out closed by the
 * server: the others are likely closed too, e.g. after a restart). */
void sl__proxy_pool_drop(struct sl__proxy_peer *p);

/* Let `p` (a server of route `ri`) be picked again for this request. */
void sl__proxy_untry(struct sl__proxy_worker *pw, unsigned ri, const struct sl__proxy_peer *p,
                     uint32_t *tried);

/* An idle connection went bad (its server closed it): drop it from its
 * pool (the caller closes it). */
void sl__proxy_pool_forget(struct sl__proxy_up *up);

/* Exchanges whose timeouts the worker's tick checks. */
void sl__proxy_active_add(struct sl__proxy_worker *pw, struct sl__proxy_x *x);
void sl__proxy_active_remove(struct sl__proxy_worker *pw, struct sl__proxy_x *x);

/* An upstream connection closed (pw->ev->up_closed), an exchange was
 * freed: the worker may now finish stopping. (sl__proxy_worker_get's
 * caller counts n_xs up.) */
void sl__proxy_worker_up_gone(struct sl__proxy_worker *pw);
void sl__proxy_worker_x_gone(struct sl__proxy_worker *pw);
/* ... or the gate's last store call was answered (pw->ev->store_answered). */
void sl__proxy_worker_maybe_free(struct sl__proxy_worker *pw);

/* The room's worker_stop (proto-t.h). */
void sl__proxy_worker_stop(struct sl__worker *w);

/* ------------------------------------------------------------ proxy_up.c */

/* Open a connection to `peer` for exchange `x` (pw->ev->up_connected
 * follows, from the loop). NULL when it cannot even start. */
struct sl__proxy_up *sl__proxy_up_connect(struct sl__proxy_worker *pw, struct sl__proxy_peer *peer,
                                          struct sl__proxy_x *x);

/* Queue bytes for the upstream (copied); sent by sl__proxy_up_flush(). */
void sl__proxy_up_queue(struct sl__proxy_up *up, const void *p, size_t n);
/* Start writing what is queued (once connected). */
void sl__proxy_up_flush(struct sl__proxy_up *up);
/* Bytes queued or being written. */
size_t sl__proxy_up_pending(const struct sl__proxy_up *up);

/* Read from it (the exchange's response, or EOF while idle) or stop. */
void sl__proxy_up_read(struct sl__proxy_up *up, bool on);

/* Close and free it (asynchronously; it is detached from its exchange). */
void sl__proxy_up_close(struct sl__proxy_up *up);

/* ------------------------------------------------------------ proxy_resp.c */

/* What the upstream's bytes made of the response (sl__proxy_resp_take). */
enum sl__proxy_rstep {
    SL__PR_WAIT,     /* more bytes are needed: what came went to the client */
    SL__PR_DONE,     /* the response is complete (and flushed to the client) */
    SL__PR_UPGRADED, /* a 101 went to the client: the exchange is a tunnel now
                      * (bytes after the head wait in up->in) */
    SL__PR_BROKEN,   /* a broken response (*why): a 502, or cut off if started */
};

/* Forward what the upstream sent (x->up->in, with bytes in it) of the
 * response: heads parsed and rewritten, body decoded and re-chunked,
 * client back-pressure applied. It ends nothing: the state machine acts
 * on the step. */
enum sl__proxy_rstep sl__proxy_resp_take(struct sl__proxy_x *x, const char **why);

/* In a tunnel: what the upstream sent, to the client. */
void sl__proxy_resp_tunnel(struct sl__proxy_x *x);

/* Has the client closed or reset its connection? (The state machine and
 * the gate ask; inline so that asking makes no call between them.) */
static inline bool sl__proxy_client_left(const struct sl__proxy_x *x)
{
    return (x->c->flags & (SL__CONN_EOF | SL__CONN_PEER_GONE)) != 0;
}

/* ------------------------------------------------------------ proxy_log.c */

/* One access log line for the finished exchange, in `format`. */
void sl__proxy_log(const struct sl__proxy_x *x, enum sl__log_access format);

#endif /* SL_PROXY_INT_H */
