/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlink.c - one connection to a Redis server on a libuv loop (rlink.h):
 * the socket, the TLS transform, AUTH/SELECT, the replies handed to their
 * commands in order, and the group's end-of-iteration writes.
 *
 * Why not hiredis's own asynchronous I/O: hiredis 0.14 (Debian 12) reads
 * and writes the socket itself, so TLS cannot go under it, and it asks
 * for a write event per command. Here hiredis does what it is good at -
 * formatting commands and parsing replies (redisReader) - and the bytes
 * go through libuv and net/tlsc.h, the TLS the proxy's upstreams use.
 *
 * The life of a connection: DOWN -> CONNECTING (a name resolved first,
 * without blocking, when the host is not an address) -> TLS (the
 * handshake, when configured) -> AUTH (AUTH and SELECT replies awaited,
 * when there are any) -> UP. The commands the owner sent meanwhile wait
 * in `out` behind the link's own AUTH and SELECT, and leave with them.
 *
 * The per-connection handles live in a struct sock, allocated per
 * connection: libuv closes a handle on the next loop iteration, by which
 * time the link may be connecting again (or gone), so the old socket is
 * detached (its link pointer cleared) and frees itself when libuv is done.
 *
 * Callbacks run with `depth` raised. A drop or free inside one detaches
 * the socket at once (nothing more is read from it) but gives the waiting
 * commands their NULL replies, and frees the link, only when the
 * outermost callback has returned.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/read.h>

#include "rlink.h"
#include "sluice.h"

#define RBUF 16384 /* bytes read per callback (and TLS plaintext per step) */

enum lstate { L_DOWN = 0, L_CONNECTING, L_TLS, L_AUTH, L_UP };

struct waiter {
    sl__rlink_reply_fn fn;
    void *arg;
    bool own; /* the link's AUTH or SELECT */
};

/* A FIFO of waiters, grown to the most ever outstanding and then reused. */
struct fifo {
    struct waiter *w;
    size_t cap, head, len;
};

struct bytes {
    char *p;
    size_t len, cap;
};

struct sock {
    struct sl__rlink *l; /* NULL once detached */
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_getaddrinfo_t gai;
    uv_write_t wreq;
    unsigned refs; /* the tcp handle, a getaddrinfo or write in flight */
    bool tcp_open;
    struct addrinfo *ai, *ai_next; /* a name's addresses, tried in turn */
};

struct sl__rlink_group {
    uv_loop_t *loop;
    uv_check_t check;
    uv_prepare_t prepare;
    struct sl__rlink *dirty; /* links with output to write */
    unsigned links;
    unsigned closing; /* handles still closing (sl__rlink_group_free) */
};

struct sl__rlink {
    struct sl__rlink_group *g;
    const struct sl__rlink_conf *c;
    struct sl__rlink_events ev;
    void *arg;
    enum lstate state;
    struct sock *s;
    uv_timer_t timer; /* connect_timeout_ms */
    redisReader *reader;
    struct sl__tlsc *tls;
    struct sl__tlsc_slot slot; /* the last TLS session, offered again */
    char host[256];
    int port;
    struct fifo q;       /* commands sent on this connection */
    struct fifo orphans; /* commands of a dropped connection, awaiting NULL */
    struct bytes out;    /* plaintext not yet written */
    struct bytes wire;   /* bytes being written (ciphertext with TLS) */
    bool writing;        /* wire is in a uv_write */
    bool queued;         /* in g->dirty */
    bool dead;           /* freed: released when depth is 0 */
    bool refused;        /* uv_tcp_connect refused at once: said from the timer */
    bool replied;        /* a reply came on this connection */
    unsigned depth;      /* callbacks running */
    unsigned own_left;   /* own replies (AUTH, SELECT) still awaited */
    struct sl__rlink *next_dirty, *prev_dirty;
    char rbuf[RBUF];
};

static void fail(struct sl__rlink *l, enum sl__rlink_down kind, enum sl__tlsc_fail tls,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void flush(struct sl__rlink *l);
static void retry(struct sl__rlink *l, const struct sockaddr *sa);

/* The system's words for a libuv error (libuv's are the negated errno on
 * Unix): "Connection refused", as the log has always said it. */
static const char *errtext(int status)
{
    return status < 0 && status > -1000 ? strerror(-status) : uv_strerror(status);
}

/* ------------------------------------------------------------ the reader */

/* hiredis 0.14 allocates an array's declared element count at once
 * ("*811000000" is 6.5 GB of pointers), before anything is read: a
 * server (or anyone on a clear-text path to it) could make sluiced
 * allocate what it likes. The link's reader refuses an array larger than
 * any reply Sluice reads (an error of the reader, as out of memory). */
static redisReplyObjectFunctions bounded;
static void *(*create_array)(const redisReadTask *, int);
static uv_once_t bounded_once = UV_ONCE_INIT;

static void *bounded_array(const redisReadTask *task, int elements)
{
    return elements > SL__RLINK_MAX_ELEMENTS ? NULL : create_array(task, elements);
}

static void bounded_init(void)
{
    redisReader *r = redisReaderCreate();

    if (r == NULL)
        return;
    bounded = *r->fn;
    create_array = bounded.createArray;
    bounded.createArray = bounded_array;
    redisReaderFree(r);
}

redisReader *sl__rlink_reader_new(void)
{
    redisReader *r;

    uv_once(&bounded_once, bounded_init);
    r = redisReaderCreate();
    if (r != NULL && create_array != NULL)
        r->fn = &bounded;
    return r;
}

/* ------------------------------------------------------------ buffers */

/* Room for n more bytes (grown to the most ever held, then reused). */
static int bytes_reserve(struct bytes *b, size_t n)
{
    size_t cap = b->cap ? b->cap : 4096;
    char *np;

    if (b->len + n <= b->cap)
        return SL_OK;
    while (cap < b->len + n)
        cap *= 2;
    np = realloc(b->p, cap);
    if (np == NULL)
        return SL_ENOMEM;
    b->p = np;
    b->cap = cap;
    return SL_OK;
}

static int bytes_add(struct bytes *b, const void *p, size_t n)
{
    if (bytes_reserve(b, n) != SL_OK)
        return SL_ENOMEM;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return SL_OK;
}

/* Room for `more` waiters beyond f's own: SL_OK, or SL_ENOMEM (f unchanged). */
static int fifo_reserve(struct fifo *f, size_t more)
{
    size_t cap = f->cap ? f->cap : 16;
    struct waiter *w;

    if (f->len + more <= f->cap)
        return SL_OK;
    while (cap < f->len + more)
        cap *= 2;
    if ((w = malloc(cap * sizeof(*w))) == NULL)
        return SL_ENOMEM;
    for (size_t i = 0; i < f->len; i++)
        w[i] = f->w[(f->head + i) % f->cap];
    free(f->w);
    f->w = w;
    f->cap = cap;
    f->head = 0;
    return SL_OK;
}

static int fifo_push(struct fifo *f, sl__rlink_reply_fn fn, void *arg, bool own)
{
    if (fifo_reserve(f, 1) != SL_OK)
        return SL_ENOMEM;
    f->w[(f->head + f->len) % f->cap] = (struct waiter){fn, arg, own};
    f->len++;
    return SL_OK;
}

static struct waiter fifo_pop(struct fifo *f)
{
    struct waiter w = f->w[f->head];

    f->head = (f->head + 1) % f->cap;
    f->len--;
    return w;
}

/* ------------------------------------------------------------ the group */

static void group_flush(struct sl__rlink_group *g)
{
    while (g->dirty != NULL) {
        struct sl__rlink *l = g->dirty;
        g->dirty = l->next_dirty;
        if (g->dirty != NULL)
            g->dirty->prev_dirty = NULL;
        l->next_dirty = l->prev_dirty = NULL;
        l->queued = false;
        flush(l);
    }
}

static void on_check(uv_check_t *h)
{
    group_flush(h->data);
}

static void on_prepare(uv_prepare_t *h)
{
    group_flush(h->data);
}

struct sl__rlink_group *sl__rlink_group_new(uv_loop_t *loop)
{
    struct sl__rlink_group *g = calloc(1, sizeof(*g));

    if (g == NULL)
        return NULL;
    g->loop = loop;
    uv_check_init(loop, &g->check);
    uv_prepare_init(loop, &g->prepare);
    g->check.data = g->prepare.data = g;
    uv_unref((uv_handle_t *)&g->check);
    uv_unref((uv_handle_t *)&g->prepare);
    /* after the reads of an iteration, and before it waits (timers) */
    uv_check_start(&g->check, on_check);
    uv_prepare_start(&g->prepare, on_prepare);
    return g;
}

static void on_group_closed(uv_handle_t *h)
{
    struct sl__rlink_group *g = h->data;

    /* libuv runs close callbacks in no promised order (today the last
     * closed first): the memory goes with the second, whichever it is */
    if (--g->closing == 0)
        free(g);
}

void sl__rlink_group_free(struct sl__rlink_group *g)
{
    if (g == NULL)
        return;
    group_flush(g);
    g->closing = 2;
    uv_close((uv_handle_t *)&g->check, on_group_closed);
    uv_close((uv_handle_t *)&g->prepare, on_group_closed);
}

static void mark_dirty(struct sl__rlink *l)
{
    if (l->queued)
        return;
    l->queued = true;
    l->prev_dirty = NULL;
    l->next_dirty = l->g->dirty;
    if (l->g->dirty != NULL)
        l->g->dirty->prev_dirty = l;
    l->g->dirty = l;
}

static void unmark_dirty(struct sl__rlink *l)
{
    if (!l->queued)
        return;
    if (l->prev_dirty != NULL)
        l->prev_dirty->next_dirty = l->next_dirty;
    else
        l->g->dirty = l->next_dirty;
    if (l->next_dirty != NULL)
        l->next_dirty->prev_dirty = l->prev_dirty;
    l->next_dirty = l->prev_dirty = NULL;
    l->queued = false;
}

/* ------------------------------------------------------------ sockets */

static void sock_unref(struct sock *s)
{
    if (--s->refs > 0)
        return;
    if (s->ai != NULL)
        uv_freeaddrinfo(s->ai);
    free(s);
}

static void on_tcp_closed(uv_handle_t *h)
{
    sock_unref(h->data);
}

/* Detach the current socket: nothing more is read from or written to it. */
static void detach(struct sl__rlink *l)
{
    struct sock *s = l->s;

    if (s == NULL)
        return;
    l->s = NULL;
    s->l = NULL;
    if (s->tcp_open) {
        s->tcp_open = false;
        uv_close((uv_handle_t *)&s->tcp, on_tcp_closed);
    }
    sock_unref(s); /* the link's own reference */
}

/* ------------------------------------------------------------ replies */

static void fire_orphans(struct sl__rlink *l);

static void on_timer_closed(uv_handle_t *h)
{
    free(h->data); /* the link */
}

static void release(struct sl__rlink *l)
{
    uv_close((uv_handle_t *)&l->timer, on_timer_closed);
}

/* After a callback: the deferred work of a drop or free made in it. */
static void leave(struct sl__rlink *l)
{
    if (--l->depth > 0)
        return;
    if (l->orphans.len > 0)
        fire_orphans(l);
    if (l->dead && l->depth == 0) {
        free(l->q.w);
        free(l->orphans.w);
        free(l->out.p);
        free(l->wire.p);
        sl__tlsc_slot_clear(&l->slot);
        l->g->links--;
        release(l);
    }
}

static void fire_orphans(struct sl__rlink *l)
{
    l->depth++;
    while (l->orphans.len > 0) {
        struct waiter w = fifo_pop(&l->orphans);
        if (w.fn != NULL)
            w.fn(l, NULL, w.arg);
    }
    l->depth--;
}

/* The connection is over: its waiters become orphans (NULL replies, now
 * or after the current callback) and the link is DOWN. */
static void close_conn(struct sl__rlink *l)
{
    detach(l);
    uv_timer_stop(&l->timer);
    unmark_dirty(l);
    if (l->orphans.len == 0) { /* the usual case: the queue becomes the orphans */
        struct fifo t = l->orphans;
        l->orphans = l->q;
        l->q = t;
    } else if (fifo_reserve(&l->orphans, l->q.len) == SL_OK) {
        while (l->q.len > 0) {
            struct waiter w = fifo_pop(&l->q);
            fifo_push(&l->orphans, w.fn, w.arg, w.own); /* reserved: cannot fail */
        }
    } else { /* out of memory: their NULL replies now rather than never */
        l->depth++;
        while (l->q.len > 0) {
            struct waiter w = fifo_pop(&l->q);
            if (w.fn != NULL)
                w.fn(l, NULL, w.arg);
        }
        l->depth--;
    }
    l->out.len = l->wire.len = 0;
    l->writing = false;
    l->own_left = 0;
    if (l->tls != NULL) {
        sl__tlsc_free(l->tls);
        l->tls = NULL;
    }
    if (l->reader != NULL) {
        redisReaderFree(l->reader);
        l->reader = NULL;
    }
    l->state = L_DOWN;
}

static void fail(struct sl__rlink *l, enum sl__rlink_down kind, enum sl__tlsc_fail tls,
                 const char *fmt, ...)
{
    char text[256];
    struct sl__rlink_why why = {.kind = kind, .tls = tls, .text = text};
    va_list ap;

    if (l->state == L_DOWN)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    close_conn(l);
    l->depth++;
    if (l->depth == 1)
        fire_orphans(l);
    if (!l->dead && l->ev.down != NULL)
        l->ev.down(l, l->arg, &why);
    leave(l);
}

static void became_up(struct sl__rlink *l)
{
    l->state = L_UP;
    uv_timer_stop(&l->timer);
    if (l->ev.up != NULL) {
        l->depth++;
        l->ev.up(l, l->arg);
        leave(l);
    }
}

/* One of the link's own replies (AUTH, SELECT). */
static bool own_reply(struct sl__rlink *l, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR) {
        fail(l, SL__RLINK_AUTH, SL__TLSC_FAIL_OTHER, "%s refused: %s",
             l->own_left == 2 || l->c->db == 0 ? "AUTH" : "SELECT", r->str);
        return false;
    }
    if (--l->own_left == 0 && l->state == L_AUTH)
        became_up(l);
    return true;
}

/* Hand every complete reply in the reader to its waiter. */
static void dispatch(struct sl__rlink *l)
{
    struct sock *s = l->s;

    while (l->s == s && s != NULL && l->reader != NULL) {
        void *reply = NULL;
        if (redisReaderGetReply(l->reader, &reply) != REDIS_OK) {
            fail(l, SL__RLINK_PROTOCOL, SL__TLSC_FAIL_OTHER, "not the Redis protocol: %s",
                 l->reader->errstr);
            return;
        }
        if (reply == NULL)
            return;
        l->replied = true;
        if (l->q.len > 0 && l->q.w[l->q.head].own) {
            fifo_pop(&l->q);
            own_reply(l, reply);
        } else if (l->ev.push != NULL) {
            l->depth++;
            l->ev.push(l, reply, l->arg);
            leave(l);
        } else if (l->q.len > 0) {
            struct waiter w = fifo_pop(&l->q);
            if (w.fn != NULL) {
                l->depth++;
                w.fn(l, reply, w.arg);
                leave(l);
            }
        } else {
            freeReplyObject(reply);
            fail(l, SL__RLINK_PROTOCOL, SL__TLSC_FAIL_OTHER, "a reply to no command");
            return;
        }
        freeReplyObject(reply);
    }
}

/* ------------------------------------------------------------ reading */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct sock *s = h->data;

    (void)hint;
    if (s->l == NULL) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init(s->l->rbuf, RBUF);
}

static void transport_ready(struct sl__rlink *l)
{
    l->state = l->own_left > 0 ? L_AUTH : L_UP;
    if (l->state == L_UP)
        became_up(l);
    if (l->state != L_DOWN && l->out.len > 0)
        mark_dirty(l);
}

static void tls_step(struct sl__rlink *l)
{
    enum sl__tlsc_fail why = SL__TLSC_FAIL_OTHER;
    int r = sl__tlsc_handshake(l->tls, &why);

    if (sl__tlsc_pending(l->tls) > 0)
        mark_dirty(l);
    if (r < 0) {
        fail(l, SL__RLINK_TLS, why, "TLS handshake with %s:%d failed: %s", l->host, l->port,
             sl__tlsc_fail_name(why));
        return;
    }
    if (r == 1)
        transport_ready(l);
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf)
{
    struct sock *s = h->data;
    struct sl__rlink *l = s->l;

    (void)buf;
    if (l == NULL || nread == 0)
        return;
    if (nread < 0) {
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "%s",
             nread == UV_EOF ? "connection closed by Redis" : errtext((int)nread));
        return;
    }
    if (l->tls == NULL) {
        redisReaderFeed(l->reader, l->rbuf, (size_t)nread);
        dispatch(l);
        return;
    }
    sl__tlsc_feed(l->tls, l->rbuf, (size_t)nread);
    if (l->state == L_TLS) {
        tls_step(l);
        if (l->s != s || l->state == L_TLS)
            return;
    }
    for (;;) {
        long n = sl__tlsc_read(l->tls, l->rbuf, RBUF);
        if (n == 0)
            break;
        if (n == -1) {
            fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER,
                 "connection closed by Redis (TLS close_notify)");
            return;
        }
        if (n < 0) { /* an alert before any reply: the server refusing this client */
            fail(l, l->replied ? SL__RLINK_LOST : SL__RLINK_TLS, SL__TLSC_FAIL_HANDSHAKE,
                 "TLS with %s:%d failed: %s", l->host, l->port, sl__tlsc_why(l->tls));
            return;
        }
        redisReaderFeed(l->reader, l->rbuf, (size_t)n);
        dispatch(l);
        if (l->s != s)
            return;
    }
    if (sl__tlsc_pending(l->tls) > 0)
        mark_dirty(l);
}

/* ------------------------------------------------------------ writing */

static void on_written(uv_write_t *req, int status)
{
    struct sock *s = req->data;
    struct sl__rlink *l = s->l;

    sock_unref(s);
    if (l == NULL)
        return;
    l->writing = false;
    l->wire.len = 0;
    if (status != 0) {
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "write failed: %s", errtext(status));
        return;
    }
    if (l->out.len > 0 || (l->tls != NULL && sl__tlsc_pending(l->tls) > 0))
        flush(l);
}

/* Move what may be written into `wire` and write it: as much as the
 * socket takes now, the rest with uv_write (one at a time). */
static void flush(struct sl__rlink *l)
{
    struct sock *s = l->s;
    uv_buf_t b;
    int n;

    if (s == NULL || l->writing || l->state == L_CONNECTING || l->state == L_DOWN)
        return;
    if (l->tls != NULL) {
        size_t p;
        if (l->state != L_TLS && l->out.len > 0) {
            if (sl__tlsc_write(l->tls, l->out.p, l->out.len) != 0) {
                fail(l, SL__RLINK_TLS, SL__TLSC_FAIL_OTHER, "TLS write failed");
                return;
            }
            l->out.len = 0;
        }
        while ((p = sl__tlsc_pending(l->tls)) > 0) {
            if (bytes_reserve(&l->wire, p) != SL_OK) {
                fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "out of memory");
                return;
            }
            l->wire.len += sl__tlsc_take(l->tls, l->wire.p + l->wire.len, p);
        }
    } else if (l->state != L_TLS && l->out.len > 0) {
        struct bytes t = l->wire; /* empty: swap, no copy */
        l->wire = l->out;
        l->out = t;
        l->out.len = 0;
    }
    if (l->wire.len == 0)
        return;
    b = uv_buf_init(l->wire.p, (unsigned)l->wire.len);
    n = uv_try_write((uv_stream_t *)&s->tcp, &b, 1);
    if (n == (int)l->wire.len) {
        l->wire.len = 0;
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "write failed: %s", errtext(n));
        return;
    }
    if (n > 0) {
        memmove(l->wire.p, l->wire.p + n, l->wire.len - (size_t)n);
        l->wire.len -= (size_t)n;
    }
    b = uv_buf_init(l->wire.p, (unsigned)l->wire.len);
    s->wreq.data = s;
    if (uv_write(&s->wreq, (uv_stream_t *)&s->tcp, &b, 1, on_written) != 0) {
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "write failed");
        return;
    }
    s->refs++;
    l->writing = true;
}

/* ------------------------------------------------------------ connecting */

static void on_connected(uv_connect_t *req, int status)
{
    struct sock *s = req->data;
    struct sl__rlink *l = s->l;

    sock_unref(s);
    if (l == NULL)
        return;
    if (status != 0 && s->ai_next != NULL) { /* the name's next address, on a new socket */
        struct addrinfo *next = s->ai_next;
        s->ai_next = next->ai_next;
        retry(l, next->ai_addr);
        return;
    }
    if (status != 0) {
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "%s", errtext(status));
        return;
    }
    uv_tcp_nodelay(&s->tcp, 1);
    uv_tcp_keepalive(&s->tcp, 1, 15); /* a silent partition is noticed, in time */
    if (uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read) != 0) {
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "cannot read the socket");
        return;
    }
    if (l->tls != NULL) {
        l->state = L_TLS;
        tls_step(l);
        return;
    }
    transport_ready(l);
}

static void on_timeout(uv_timer_t *t);
static void connect_addr(struct sl__rlink *l, const struct sockaddr *sa);

/* A failed connect leaves its socket unusable: the next address of the
 * name is tried on a new one, which takes over the address list. */
static void retry(struct sl__rlink *l, const struct sockaddr *sa)
{
    struct sock *old = l->s, *s = calloc(1, sizeof(*s));

    if (s == NULL || uv_tcp_init(l->g->loop, &s->tcp) != 0) {
        free(s);
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "out of memory");
        return;
    }
    s->tcp.data = s;
    s->tcp_open = true;
    s->refs = 2;
    s->l = l;
    s->ai = old->ai;
    s->ai_next = old->ai_next;
    old->ai = old->ai_next = NULL;
    uv_unref((uv_handle_t *)&s->tcp);
    detach(l);
    l->s = s;
    connect_addr(l, sa);
}

static void connect_addr(struct sl__rlink *l, const struct sockaddr *sa)
{
    struct sock *s = l->s;

    s->creq.data = s;
    if (uv_tcp_connect(&s->creq, &s->tcp, sa, on_connected) != 0) {
        /* reported from the loop, never from inside sl__rlink_connect */
        l->refused = true;
        uv_timer_start(&l->timer, on_timeout, 0, 0);
        return;
    }
    s->refs++;
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct sock *s = req->data;
    struct sl__rlink *l = s->l;

    sock_unref(s);
    if (l == NULL) {
        uv_freeaddrinfo(res);
        return;
    }
    if (status != 0 || res == NULL) {
        uv_freeaddrinfo(res);
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "cannot resolve %s: %s", l->host,
             uv_strerror(status));
        return;
    }
    s->ai = res;
    s->ai_next = res->ai_next;
    connect_addr(l, res->ai_addr);
}

static void on_timeout(uv_timer_t *t)
{
    struct sl__rlink *l = t->data;

    if (l->state == L_UP || l->state == L_DOWN)
        return;
    if (l->refused)
        fail(l, SL__RLINK_LOST, SL__TLSC_FAIL_OTHER, "cannot connect to %s:%d", l->host, l->port);
    else
        fail(l, SL__RLINK_TIMEOUT, SL__TLSC_FAIL_OTHER, "no connection to %s:%d within %lld ms",
             l->host, l->port, (long long)l->c->connect_timeout_ms);
}

static int queue_own(struct sl__rlink *l)
{
    const char *user = l->c->user, *pw = l->c->password;
    char *cmd = NULL;
    int len = -1;

    if (pw != NULL && pw[0] != '\0') {
        if (user != NULL && user[0] != '\0')
            len = redisFormatCommand(&cmd, "AUTH %s %s", user, pw);
        else
            len = redisFormatCommand(&cmd, "AUTH %s", pw);
        if (len < 0 || bytes_add(&l->out, cmd, (size_t)len) != SL_OK ||
            fifo_push(&l->q, NULL, NULL, true) != SL_OK) {
            redisFreeCommand(cmd);
            return SL_ENOMEM;
        }
        redisFreeCommand(cmd);
        l->own_left++;
    }
    if (l->c->db > 0) {
        len = redisFormatCommand(&cmd, "SELECT %u", l->c->db);
        if (len < 0 || bytes_add(&l->out, cmd, (size_t)len) != SL_OK ||
            fifo_push(&l->q, NULL, NULL, true) != SL_OK) {
            redisFreeCommand(cmd);
            return SL_ENOMEM;
        }
        redisFreeCommand(cmd);
        l->own_left++;
    }
    return SL_OK;
}

/* ------------------------------------------------------------ the API */

struct sl__rlink *sl__rlink_new(struct sl__rlink_group *g, const struct sl__rlink_conf *c,
                                const struct sl__rlink_events *ev, void *arg)
{
    struct sl__rlink *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    l->g = g;
    l->c = c;
    l->ev = *ev;
    l->arg = arg;
    uv_timer_init(g->loop, &l->timer);
    uv_unref((uv_handle_t *)&l->timer);
    l->timer.data = l;
    g->links++;
    return l;
}

int sl__rlink_connect(struct sl__rlink *l, const char *host, int port)
{
    struct sockaddr_storage sa;
    struct sock *s;

    if (l->state != L_DOWN || l->dead)
        return SL_EINVAL;
    if (strlen(host) >= sizeof(l->host) || port <= 0 || port > 65535)
        return SL_EINVAL;
    memcpy(l->host, host, strlen(host) + 1);
    l->port = port;
    s = calloc(1, sizeof(*s));
    l->reader = sl__rlink_reader_new();
    if (s == NULL || l->reader == NULL) {
        free(s);
        return SL_ENOMEM;
    }
    if (l->c->tls != NULL) {
        const struct sl__tlsc_ctx *x = sl__rlink_tls_current(l->c->tls);
        l->tls = x != NULL ? sl__tlsc_new(x, host, &l->slot) : NULL;
        if (l->tls == NULL) {
            free(s);
            redisReaderFree(l->reader);
            l->reader = NULL;
            return SL_ENOMEM;
        }
    }
    if (uv_tcp_init(l->g->loop, &s->tcp) != 0) {
        free(s);
        close_conn(l);
        return SL_ENOMEM;
    }
    s->tcp.data = s;
    s->tcp_open = true;
    s->refs = 1 + 1; /* the link's, the tcp handle's (dropped when it closes) */
    s->l = l;
    uv_unref((uv_handle_t *)&s->tcp); /* the owner's calls keep the loop alive, not this */
    l->s = s;
    l->state = L_CONNECTING;
    l->refused = l->replied = false;
    if (queue_own(l) != SL_OK) {
        close_conn(l);
        return SL_ENOMEM;
    }
    if (l->c->connect_timeout_ms > 0)
        uv_timer_start(&l->timer, on_timeout, (uint64_t)l->c->connect_timeout_ms, 0);
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&sa) == 0 ||
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&sa) == 0) {
        connect_addr(l, (const struct sockaddr *)&sa);
        return SL_OK;
    }
    {
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        char ps[8];
        snprintf(ps, sizeof(ps), "%d", port);
        s->gai.data = s;
        if (uv_getaddrinfo(l->g->loop, &s->gai, on_resolved, host, ps, &hints) != 0) {
            l->refused = true;
            uv_timer_start(&l->timer, on_timeout, 0, 0);
            return SL_OK;
        }
        s->refs++;
    }
    return SL_OK;
}

void sl__rlink_drop(struct sl__rlink *l)
{
    if (l == NULL || l->state == L_DOWN)
        return;
    close_conn(l);
    if (l->depth == 0)
        fire_orphans(l);
}

void sl__rlink_free(struct sl__rlink *l)
{
    if (l == NULL || l->dead)
        return;
    l->dead = true;
    l->depth++;
    sl__rlink_drop(l);
    leave(l); /* frees now, or when the outermost callback returns */
}

bool sl__rlink_is_up(const struct sl__rlink *l)
{
    return l != NULL && l->state == L_UP;
}

bool sl__rlink_is_busy(const struct sl__rlink *l)
{
    return l != NULL && l->state != L_DOWN;
}

size_t sl__rlink_pending(const struct sl__rlink *l)
{
    return l->q.len;
}

int sl__rlink_formatted(struct sl__rlink *l, sl__rlink_reply_fn fn, void *arg, const char *cmd,
                        size_t len)
{
    if (l == NULL || l->state == L_DOWN || l->dead)
        return SL_ENOENT;
    if (bytes_reserve(&l->out, len) != SL_OK ||
        (l->ev.push == NULL && fifo_push(&l->q, fn, arg, false) != SL_OK))
        return SL_ENOMEM;
    memcpy(l->out.p + l->out.len, cmd, len);
    l->out.len += len;
    if (l->state == L_UP || l->state == L_AUTH)
        mark_dirty(l);
    return SL_OK;
}

int sl__rlink_command(struct sl__rlink *l, sl__rlink_reply_fn fn, void *arg, const char *fmt, ...)
{
    char *cmd = NULL;
    va_list ap;
    int len, rc;

    if (l == NULL || l->state == L_DOWN || l->dead)
        return SL_ENOENT;
    va_start(ap, fmt);
    len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0)
        return SL_ENOMEM;
    rc = sl__rlink_formatted(l, fn, arg, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return rc;
}

int sl__rlink_argv(struct sl__rlink *l, sl__rlink_reply_fn fn, void *arg, int argc,
                   const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    int len, rc;

    if (l == NULL || l->state == L_DOWN || l->dead)
        return SL_ENOENT;
    len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0)
        return SL_ENOMEM;
    rc = sl__rlink_formatted(l, fn, arg, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return rc;
}

/* ------------------------------------------------------------ backoff */

void sl__rbackoff_init(struct sl__rbackoff *b, int64_t min_ms, int64_t max_ms)
{
    b->min_ms = min_ms > 0 ? min_ms : 1;
    b->max_ms = max_ms > b->min_ms ? max_ms : b->min_ms;
    b->next_ms = b->min_ms;
    b->seed = (uint64_t)(uintptr_t)b ^ (uint64_t)uv_hrtime();
}

int64_t sl__rbackoff_next(struct sl__rbackoff *b)
{
    int64_t hi = b->next_ms, lo = hi / 2, wait;

    /* xorshift64: the jitter needs no quality, only spread */
    b->seed ^= b->seed << 13;
    b->seed ^= b->seed >> 7;
    b->seed ^= b->seed << 17;
    wait = lo + (int64_t)(b->seed % (uint64_t)(hi - lo + 1));
    b->next_ms = hi * 2 > b->max_ms ? b->max_ms : hi * 2;
    return wait;
}

void sl__rbackoff_reset(struct sl__rbackoff *b)
{
    b->next_ms = b->min_ms;
}
