/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlink_sync.c - the blocking Redis link (rlink.h, sl__rlink_sync_*): for
 * the tools and the calls that may block (`sluice rules push`, the rules
 * sync's pulls on libuv's pool, the hybrid store's last push when it is
 * freed). One non-blocking socket driven by poll(), so that every step -
 * the TCP connection, the TLS handshake (net/tlsc.h, the transform the
 * asynchronous link uses), AUTH, SELECT, and each command's write and
 * reply - ends within timeout_ms or fails with a sentence saying which
 * step and why ("redis 10.0.0.5:6380: TLS handshake failed: certificate
 * not trusted").
 *
 * hiredis formats the commands and its reader parses the replies (the
 * link's reader, sl__rlink_reader_new: bounded arrays); its sockets are
 * not used (the hiredis of Debian 12 has no TLS).
 *
 * What it does not do: bound the name resolution (getaddrinfo blocks as
 * long as the system's resolver says, as hiredis's connect did), pipeline,
 * follow redirections or reconnect (its callers decide: rules_sync.c
 * follows MOVED and ASK on a new link). conf->connect_timeout_ms is the
 * asynchronous link's; here timeout_ms bounds each step.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rlink.h"
#include "sluice.h"

#define IO_CHUNK 16384

struct sl__rlink_sync {
    int fd;
    struct sl__tlsc *tls; /* NULL: clear text */
    redisReader *rd;
    int64_t timeout_ms;
    bool first;      /* no reply read yet */
    bool cut;        /* the server closed, reset or ended TLS (not a timeout) */
    char where[300]; /* "redis host:port", the start of every sentence */
    /* the current call's: the step in progress, where a failure is said */
    const char *step;
    char *err;
    size_t cap;
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The sentence of a failure into err: "<where>: <what>"; returns -1. */
static int fail(const struct sl__rlink_sync *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(const struct sl__rlink_sync *s, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (s->cap > 0)
        snprintf(s->err, s->cap, "%s: %s", s->where, what);
    return -1;
}

/* Wait until fd is ready for `events` or the deadline: 1 ready, 0 timed
 * out, -1 poll failed. */
static int wait_for(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - now_ms();
        struct pollfd p = {.fd = fd, .events = events};
        int n;

        if (left <= 0)
            return 0;
        n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* ------------------------------------------------------------ the socket */

static int raw_send(struct sl__rlink_sync *s, const char *p, size_t n, int64_t deadline_ms)
{
    while (n > 0) {
        ssize_t w = send(s->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            s->cut = errno == ECONNRESET || errno == EPIPE;
            return fail(s, "%s: %s", s->step, strerror(errno));
        }
        int r = wait_for(s->fd, POLLOUT, deadline_ms);
        if (r == 0)
            return fail(s, "%s: no progress within %lld ms", s->step, (long long)s->timeout_ms);
        if (r < 0)
            return fail(s, "%s: poll: %s", s->step, strerror(errno));
    }
    return 0;
}

/* Bytes read (> 0), or -1 with err set (the server closed, an error, or
 * the deadline passed). */
static ssize_t raw_recv(struct sl__rlink_sync *s, char *p, size_t cap_p, int64_t deadline_ms)
{
    for (;;) {
        ssize_t n = recv(s->fd, p, cap_p, 0);
        if (n > 0)
            return n;
        if (n == 0) {
            s->cut = true;
            return fail(s, "%s: the server closed the connection", s->step);
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            s->cut = errno == ECONNRESET;
            return fail(s, "%s: %s", s->step, strerror(errno));
        }
        int r = wait_for(s->fd, POLLIN, deadline_ms);
        if (r == 0)
            return fail(s, "%s: no answer within %lld ms", s->step, (long long)s->timeout_ms);
        if (r < 0)
            return fail(s, "%s: poll: %s", s->step, strerror(errno));
    }
}

/* Send the ciphertext TLS has waiting. */
static int tls_flush(struct sl__rlink_sync *s, int64_t deadline_ms)
{
    char buf[IO_CHUNK];
    size_t n;

    while (sl__tlsc_pending(s->tls) > 0) {
        n = sl__tlsc_take(s->tls, buf, sizeof(buf));
        if (n == 0)
            break;
        if (raw_send(s, buf, n, deadline_ms) != 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ connecting */

/* One address: 0 connected (s->fd set), -1 with err set. */
static int connect_one(struct sl__rlink_sync *s, const struct addrinfo *a, int64_t deadline_ms)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    int one = 1, soerr = 0, r;
    socklen_t len = sizeof(soerr);

    if (fd < 0)
        return fail(s, "socket: %s", strerror(errno));
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            soerr = errno;
            goto bad;
        }
        r = wait_for(fd, POLLOUT, deadline_ms);
        if (r == 0) {
            close(fd);
            return fail(s, "no connection within %lld ms", (long long)s->timeout_ms);
        }
        if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
            soerr = errno;
        if (soerr != 0)
            goto bad;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->fd = fd;
    return 0;
bad:
    close(fd);
    return fail(s, "connect: %s", strerror(soerr));
}

static int tcp_connect(struct sl__rlink_sync *s, const char *host, int port, int64_t deadline_ms)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char service[16];
    int rc;

    snprintf(service, sizeof(service), "%d", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0)
        return fail(s, "cannot resolve the name: %s",
                    rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
    rc = -1;
    for (const struct addrinfo *a = res; a != NULL && rc != 0; a = a->ai_next) {
        rc = connect_one(s, a, deadline_ms);
        if (now_ms() >= deadline_ms)
            break;
    }
    freeaddrinfo(res);
    return rc;
}

static int tls_handshake(struct sl__rlink_sync *s, const struct sl__tlsc_ctx *ctx, const char *host,
                         int64_t deadline_ms)
{
    char buf[IO_CHUNK];

    s->step = "TLS handshake";

    if (ctx == NULL || (s->tls = sl__tlsc_new(ctx, host, NULL)) == NULL)
        return fail(s, "TLS handshake failed: no TLS context (store.redis.tls)");
    for (;;) {
        enum sl__tlsc_fail why = SL__TLSC_FAIL_OTHER;
        int r = sl__tlsc_handshake(s->tls, &why);
        ssize_t n;

        if (tls_flush(s, deadline_ms) != 0)
            return -1;
        if (r == 1)
            return 0;
        if (r < 0) {
            const char *name = sl__tlsc_fail_name(why);
            if (strncmp(name, "TLS handshake failed", 20) == 0)
                return fail(s, "%s", name);
            return fail(s, "TLS handshake failed: %s", name);
        }
        n = raw_recv(s, buf, sizeof(buf), deadline_ms);
        if (n < 0)
            return -1;
        sl__tlsc_feed(s->tls, buf, (size_t)n);
    }
}

/* ------------------------------------------------------------ commands */

static int send_cmd(struct sl__rlink_sync *s, const char *cmd, size_t len, int64_t deadline_ms)
{
    if (s->tls == NULL)
        return raw_send(s, cmd, len, deadline_ms);
    if (sl__tlsc_write(s->tls, cmd, len) != 0)
        return fail(s, "%s: TLS error while writing", s->step);
    return tls_flush(s, deadline_ms);
}

/* More reply bytes into the reader: 0, or -1 with err set. */
static int feed_more(struct sl__rlink_sync *s, int64_t deadline_ms)
{
    char raw[IO_CHUNK], plain[IO_CHUNK];
    ssize_t n = raw_recv(s, raw, sizeof(raw), deadline_ms);
    long m;

    if (n < 0)
        return -1;
    if (s->tls == NULL)
        return redisReaderFeed(s->rd, raw, (size_t)n) == REDIS_OK
                   ? 0
                   : fail(s, "%s: out of memory", s->step);
    sl__tlsc_feed(s->tls, raw, (size_t)n);
    while ((m = sl__tlsc_read(s->tls, plain, sizeof(plain))) > 0)
        if (redisReaderFeed(s->rd, plain, (size_t)m) != REDIS_OK)
            return fail(s, "%s: out of memory", s->step);
    s->cut = m < 0;
    if (m == -1)
        return fail(s, "%s: the server closed TLS", s->step);
    if (m == -2)
        return fail(s, "%s: TLS: %s", s->step, sl__tlsc_why(s->tls));
    return tls_flush(s, deadline_ms); /* what reading made TLS say, if anything */
}

static redisReply *read_reply(struct sl__rlink_sync *s)
{
    int64_t deadline_ms = now_ms() + s->timeout_ms;

    for (;;) {
        void *r = NULL;

        if (redisReaderGetReply(s->rd, &r) != REDIS_OK) {
            fail(s, "%s: the server sent what is not RESP (%s)", s->step, s->rd->errstr);
            return NULL;
        }
        if (r != NULL)
            return r;
        if (feed_more(s, deadline_ms) != 0)
            return NULL;
    }
}

static redisReply *roundtrip(struct sl__rlink_sync *s, int argc, const char **argv,
                             const size_t *lens)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    int rc;

    if (len < 0 || cmd == NULL) {
        fail(s, "%s: out of memory", s->step);
        return NULL;
    }
    rc = send_cmd(s, cmd, (size_t)len, now_ms() + s->timeout_ms);
    redisFreeCommand(cmd);
    return rc == 0 ? read_reply(s) : NULL;
}

/* A handshake command (AUTH, SELECT, PING): 0 accepted, -1 with err set. */
static int handshake_cmd(struct sl__rlink_sync *s, int argc, const char **argv, const char *step)
{
    size_t lens[3];
    redisReply *r;
    int rc = 0;

    s->step = step;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if ((r = roundtrip(s, argc, argv, lens)) == NULL) {
        /* Over TLS 1.3 the server judges the client's certificate after
         * the client's side of the handshake is done: the first answer
         * after it is where a refusal shows (an alert, or a reset). */
        if (s->tls != NULL && s->first && s->cut && s->cap > 0 &&
            strlen(s->err) > strlen(s->where) + 2) {
            char was[256];
            snprintf(was, sizeof(was), "%s", s->err + strlen(s->where) + 2);
            fail(s,
                 "TLS refused by the server after the handshake (a client certificate missing "
                 "or not trusted there?): %s",
                 was);
        }
        return -1;
    }
    s->first = false;
    if (r->type == REDIS_REPLY_ERROR)
        rc = fail(s, "%s refused: %.*s", s->step, (int)(r->len > 200 ? 200 : r->len), r->str);
    freeReplyObject(r);
    return rc;
}

static int login(struct sl__rlink_sync *s, const struct sl__rlink_conf *c)
{
    bool said = false;

    if (c->password != NULL && c->password[0] != '\0') {
        const char *argv[3] = {"AUTH", c->user, c->password};
        bool user = c->user != NULL && c->user[0] != '\0';
        if (!user)
            argv[1] = c->password;
        if (handshake_cmd(s, user ? 3 : 2, argv, "AUTH") != 0)
            return -1;
        said = true;
    }
    if (c->db > 0) {
        char db[16];
        const char *argv[2] = {"SELECT", db};
        snprintf(db, sizeof(db), "%u", c->db);
        if (handshake_cmd(s, 2, argv, "SELECT") != 0)
            return -1;
        said = true;
    }
    /* Over TLS 1.3 a server that refuses the client's certificate says so
     * after the handshake: one round trip now, so that it is the open
     * that fails, with a sentence about TLS. */
    if (s->tls != NULL && !said) {
        const char *argv[1] = {"PING"};
        return handshake_cmd(s, 1, argv, "PING");
    }
    return 0;
}

struct sl__rlink_sync *sl__rlink_sync_open(const struct sl__rlink_conf *c, const char *host,
                                           int port, int64_t timeout_ms, char *err, size_t cap)
{
    struct sl__rlink_sync *s = calloc(1, sizeof(*s));
    bool v6 = strchr(host, ':') != NULL;

    if (cap > 0)
        err[0] = '\0';
    if (s == NULL) {
        snprintf(err, cap, "redis %s:%d: out of memory", host, port);
        return NULL;
    }
    s->fd = -1;
    s->first = true;
    s->err = err;
    s->cap = cap;
    s->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
    snprintf(s->where, sizeof(s->where), v6 ? "redis [%s]:%d" : "redis %s:%d", host, port);
    if ((s->rd = sl__rlink_reader_new()) == NULL) {
        fail(s, "out of memory");
        goto bad;
    }
    if (tcp_connect(s, host, port, now_ms() + s->timeout_ms) != 0)
        goto bad;
    if (c->tls != NULL &&
        tls_handshake(s, sl__rlink_tls_current(c->tls), host, now_ms() + s->timeout_ms) != 0)
        goto bad;
    if (login(s, c) != 0)
        goto bad;
    s->step = NULL;
    s->err = NULL;
    s->cap = 0;
    return s;
bad:
    sl__rlink_sync_close(s);
    return NULL;
}

redisReply *sl__rlink_sync_argv(struct sl__rlink_sync *s, int argc, const char **argv,
                                const size_t *lens, char *err, size_t cap)
{
    char step[40];
    redisReply *r;

    s->err = err;
    s->cap = cap;
    if (cap > 0)
        err[0] = '\0';
    if (s->fd < 0) {
        fail(s, "the link is broken");
        return NULL;
    }
    snprintf(step, sizeof(step), "%.*s", argc > 0 && lens[0] < 32 ? (int)lens[0] : 7,
             argc > 0 && lens[0] < 32 ? argv[0] : "command");
    s->step = step;
    r = roundtrip(s, argc, argv, lens);
    if (r == NULL && s->fd >= 0) { /* half a reply may be on the way: never read it as the next */
        close(s->fd);
        s->fd = -1;
    }
    s->step = NULL; /* not to be read once the call is over */
    s->err = NULL;
    s->cap = 0;
    return r;
}

void sl__rlink_sync_close(struct sl__rlink_sync *s)
{
    if (s == NULL)
        return;
    if (s->tls != NULL && s->fd >= 0) { /* close_notify, if the socket takes it now */
        char alert[256];
        sl__tlsc_close(s->tls);
        size_t n = sl__tlsc_take(s->tls, alert, sizeof(alert));
        if (n > 0)
            (void)send(s->fd, alert, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    sl__tlsc_free(s->tls);
    if (s->fd >= 0)
        close(s->fd);
    if (s->rd != NULL)
        redisReaderFree(s->rd);
    free(s);
}
