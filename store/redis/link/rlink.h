/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlink.h - the Redis link (internal): one connection to one Redis (or
 * Sentinel) server on a worker's libuv loop, the way every part of the
 * stores that talks to Redis talks to it - the Redis store's data and
 * subscriber connections, Sentinel, the hybrid store's sync and the rules
 * sync.
 *
 * A link owns its socket (libuv TCP), its TLS (net/tlsc.h, the transform
 * the proxy's upstreams use) and its hiredis reply reader; commands are
 * formatted by hiredis too. It connects (numeric address or a name
 * resolved without blocking the loop), makes the TLS handshake, sends
 * AUTH (user and password, or the password alone) and, when asked, SELECT,
 * before anything its owner sent; then it says `up`. Replies are given to
 * the commands' callbacks in order; a link made for pub/sub gives every
 * reply to `push` instead. The commands of one loop iteration leave in one
 * write at its end (a group's uv_check and uv_prepare flush every link
 * with output), which under pipelined traffic is one write for every
 * command the iteration's reads decided.
 *
 * What a link does not do: decide when to reconnect (its owner does, with
 * struct sl__rbackoff below, the one policy every owner uses), follow
 * Sentinel (rmaster.h, on two links of its own), route a cluster's slots
 * (redis_route.c, the hybrid store's sync, on redis_cluster.h's map) or
 * log (its owner logs what `down` tells it).
 *
 * Ownership and threads: everything here belongs to one loop's thread. A
 * link is made by sl__rlink_new and freed by sl__rlink_free (its handles
 * close on the next loop iteration; the memory goes then). The conf and
 * the TLS settings are borrowed and must outlive the link. Callbacks may
 * call any function here on any link, including dropping or freeing the
 * link they are called for: it takes effect when the callback returns.
 */
#ifndef SL_STORE_RLINK_H
#define SL_STORE_RLINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include <hiredis/hiredis.h>

#include "tlsc.h"

/* The settings of store.redis.tls, inline so that a configuration is
 * copied with `=` (every owner keeps its copy). */
#define SL__RLINK_PATH_MAX 1024
struct sl__redis_tls {
    bool on;                            /* store.redis.tls given (even empty: the system's CAs) */
    bool verify;                        /* the server's certificate and name (default true) */
    char ca_file[SL__RLINK_PATH_MAX];   /* "": the system's trust store */
    char cert_file[SL__RLINK_PATH_MAX]; /* client certificate, "": none (key_file too) */
    char key_file[SL__RLINK_PATH_MAX];
    char server_name[256]; /* "": the host connected to */
};

/* TLS to a Redis deployment: the settings and the context they build,
 * built again when a file changes (checked when a link connects: a
 * rotated client certificate or CA is used from the next connection on,
 * without a restart). One per owner (loop thread). */
struct sl__rlink_tls {
    struct sl__redis_tls set; /* copied */
    struct sl__tlsc_ctx *ctx; /* the current one */
    struct sl__rlink_stamp {
        dev_t dev;
        ino_t ino;
        int64_t mtime_ns;
        off_t size;
    } stamp[3];    /* ca_file, cert_file, key_file as last read */
    char why[256]; /* the last failure to build one, "" none */
};
/* Build the first context: SL_OK, or SL_EINVAL with why[] set (a
 * sentence naming the setting, e.g. "store.redis.tls.ca_file: ..."). */
int sl__rlink_tls_init(struct sl__rlink_tls *t, const struct sl__redis_tls *set);
void sl__rlink_tls_close(struct sl__rlink_tls *t);
/* The context to connect with: a new one when a file changed since the
 * last build and the new files make one (else the last good one, why[]
 * saying what is wrong with the new files). */
const struct sl__tlsc_ctx *sl__rlink_tls_current(struct sl__rlink_tls *t);

/* What every link of one owner shares; borrowed by its links. */
struct sl__rlink_conf {
    const char *user;           /* ACL user, "" or NULL: AUTH with the password alone */
    const char *password;       /* "" or NULL: no AUTH */
    unsigned db;                /* SELECT db after AUTH when > 0 */
    int64_t connect_timeout_ms; /* TCP + TLS + AUTH must take less; 0: no limit */
    struct sl__rlink_tls *tls;  /* NULL: clear text */
};

/* The links of one loop that write at the end of its iterations. */
struct sl__rlink_group;
struct sl__rlink_group *sl__rlink_group_new(uv_loop_t *loop);
/* After every link of the group was freed (closes its handles; the
 * memory goes on the next loop iteration). NULL is fine. */
void sl__rlink_group_free(struct sl__rlink_group *g);

struct sl__rlink;

/* Why a link went down. */
enum sl__rlink_down {
    SL__RLINK_LOST = 0, /* the connection was lost, or never made */
    SL__RLINK_TIMEOUT,  /* connect_timeout_ms passed before `up` */
    SL__RLINK_TLS,      /* the TLS handshake failed (tlsc's reason in `tls`) */
    SL__RLINK_AUTH,     /* AUTH or SELECT refused (the server's error in the text) */
    SL__RLINK_PROTOCOL, /* the server sent what is not RESP */
};
struct sl__rlink_why {
    enum sl__rlink_down kind;
    enum sl__tlsc_fail tls; /* with SL__RLINK_TLS */
    const char *text;       /* a sentence for the log (valid during the callback) */
};

/* A reply to one command; r is NULL when the link went down (or was
 * dropped or freed) before it came. r is freed when the callback returns. */
typedef void (*sl__rlink_reply_fn)(struct sl__rlink *l, redisReply *r, void *arg);

struct sl__rlink_events {
    /* Connected, TLS done, AUTH (and SELECT) accepted. */
    void (*up)(struct sl__rlink *l, void *arg);
    /* Not connected any more (never `up`, or lost): every command still
     * waiting has had its NULL reply. Not called for sl__rlink_drop or
     * sl__rlink_free. The link may be connected again. */
    void (*down)(struct sl__rlink *l, void *arg, const struct sl__rlink_why *why);
    /* A link for pub/sub (push not NULL): every reply after the
     * handshake, instead of a command's callback. */
    void (*push)(struct sl__rlink *l, redisReply *r, void *arg);
};

/* A link, not connected; NULL out of memory. */
struct sl__rlink *sl__rlink_new(struct sl__rlink_group *g, const struct sl__rlink_conf *c,
                                const struct sl__rlink_events *ev, void *arg);
/* Start connecting to host:port (a numeric IPv4/IPv6 address or a name):
 * SL_OK, then `up` or `down` follows (never from inside this call), or
 * SL_EINVAL when not down (or a bad host or port). Commands may be sent at once: they leave after
 * the handshake. */
int sl__rlink_connect(struct sl__rlink *l, const char *host, int port);
/* Close the connection now, without `down`: every command waiting gets its
 * NULL reply (after the current callback, when called from one). */
void sl__rlink_drop(struct sl__rlink *l);
/* Drop and free it. NULL is fine. */
void sl__rlink_free(struct sl__rlink *l);

/* These, drop and the commands take a NULL link as one that is down. */
bool sl__rlink_is_up(const struct sl__rlink *l);
/* Connecting, up, or closing: not down. */
bool sl__rlink_is_busy(const struct sl__rlink *l);
/* Commands sent and not yet answered. */
size_t sl__rlink_pending(const struct sl__rlink *l);

/* Send a command: SL_OK (its reply comes to fn, which may be NULL; on a
 * pub/sub link replies go to `push` and fn is not kept), or
 * SL_ENOENT when the link is down (fn is not called), SL_ENOMEM. A formatted command
 * (from redisFormatCommand) is copied. */
int sl__rlink_command(struct sl__rlink *l, sl__rlink_reply_fn fn, void *arg, const char *fmt, ...);
int sl__rlink_formatted(struct sl__rlink *l, sl__rlink_reply_fn fn, void *arg, const char *cmd,
                        size_t len);
int sl__rlink_argv(struct sl__rlink *l, sl__rlink_reply_fn fn, void *arg, int argc,
                   const char **argv, const size_t *lens);

/* A reply reader for a Redis connection: hiredis's, refusing an array of
 * more than SL__RLINK_MAX_ELEMENTS elements (hiredis 0.14 allocates the
 * declared count before reading any). Every link's reader is one. */
#define SL__RLINK_MAX_ELEMENTS (1 << 20)
redisReader *sl__rlink_reader_new(void);

/* The one reconnection policy: exponential backoff from min_ms to max_ms,
 * each wait drawn in [wait/2, wait] so that many clients cut off together
 * do not come back together. */
struct sl__rbackoff {
    int64_t min_ms, max_ms;
    int64_t next_ms; /* the upper bound of the next wait */
    uint64_t seed;
};
void sl__rbackoff_init(struct sl__rbackoff *b, int64_t min_ms, int64_t max_ms);
/* The wait before the next attempt (and the one after grows). */
int64_t sl__rbackoff_next(struct sl__rbackoff *b);
/* A success: the next failure waits min_ms again. */
void sl__rbackoff_reset(struct sl__rbackoff *b);

/* A blocking link for the tools (`sluice rules push`, the hybrid store's
 * start): connect with TLS and AUTH, send one command, read its reply,
 * each within timeout_ms. NULL with a sentence in err when any of it
 * fails. Not for a worker's loop. */
struct sl__rlink_sync;
struct sl__rlink_sync *sl__rlink_sync_open(const struct sl__rlink_conf *c, const char *host,
                                           int port, int64_t timeout_ms, char *err, size_t cap);
/* The reply (freeReplyObject it), or NULL with err set (the link is then
 * broken: close it). */
redisReply *sl__rlink_sync_argv(struct sl__rlink_sync *s, int argc, const char **argv,
                                const size_t *lens, char *err, size_t cap);
void sl__rlink_sync_close(struct sl__rlink_sync *s);

/* Sentinel (rlink_sentinel.c): which master a sentinel names. */
/* SENTINEL get-master-addr-by-name's reply. true when it names a master,
 * [host, port]: *host borrowed from the reply, *port 1..65535, or 0 when
 * the port is not one; false for nil (the name is not known), an error or
 * any other shape. Pure (fuzz/fuzz_redis_reply.c). */
bool sl__redis_master_addr(const redisReply *r, const char **host, int *port);
/* SENTINEL get-master-addr-by-name's reply: true when it names a master,
 * [host, port], with host copied (cap bytes, NUL included) and *port in
 * 1..65535; false for a NULL reply, nil (the name is not known), an error
 * or any other shape. Pure. */
bool sl__rlink_master_addr(const redisReply *r, char *host, size_t cap, int *port);
/* The question on a blocking link (a worker's loop follows the sentinels
 * with rmaster.h instead): sentinel host:port, each step
 * within timeout_ms. SL_OK with host (cap bytes) and *port, SL_ENOENT when
 * it cannot say. */
struct sl__rlink_master_q {
    const char *host; /* the sentinel */
    int port;
    const char *name; /* the master's name */
    int64_t timeout_ms;
};
int sl__rlink_sync_master(const struct sl__rlink_conf *c, const struct sl__rlink_master_q *q,
                          char *host, size_t cap, int *port);

#endif /* SL_STORE_RLINK_H */
