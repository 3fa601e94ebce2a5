/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_tls.c - libFuzzer driver for the TLS transform of the connection's
 * byte stream (server/core/conn_tls.c): the glue between OpenSSL's record
 * layer and the protocols. The transform runs as in sluiced, between a
 * fake back-end below it (the driver completes its sends later, never
 * inside the call, as conn_io.h requires) and a fake connection core above
 * it (which collects the plaintext and sends replies).
 *
 * The first byte chooses the mode:
 * - raw: the rest of the input arrives as the client's bytes, in reads of
 *   sizes the input chooses (ClientHellos, records, garbage);
 * - client: a real TLS client (OpenSSL, in memory) makes the handshake,
 *   then the input is a script: the client writes application data (valid
 *   records), raw bytes are injected into the stream, the core sends a
 *   reply or shuts its write side, the client updates its keys or sends
 *   close_notify, the core's read room shrinks; each piece is delivered in
 *   reads of the sizes the input chooses.
 * Checked, besides the sanitizers: while nothing was injected, the core
 * receives exactly the bytes the client wrote, in order, and the client
 * decrypts exactly what the core sent; the transform's memory stays within
 * its bound; no callback comes up inside the call that caused it; after
 * the close, nothing but `closed` and `idle`.
 *
 * The server's certificate is made at start in memory (Ed25519, cheap to
 * sign with: the handshake is most of an input's cost).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "conn.h"
#include "conn_io.h"
#include "log.h"
#include "metrics.h"
#include "server-t.h"
#include "tls.h"
#include "worker-t.h"

#define CHECK(c) ((c) ? (void)0 : abort()) /* unlike assert, kept under NDEBUG */

/* What the transform may hold: its receive room, a batch of ciphertext
 * each way and OpenSSL's share (conn_tls.c), with room to spare. */
#define STREAM_BYTES_MAX (512u << 10)
#define PLAIN_MAX        (256u << 10) /* more than an input holds (-max_len) */

static SSL_CTX *server_ctx, *client_ctx;
static struct sl__tls tls;
static struct sl__listener ls;
static struct sl__server srv;
static struct sl__worker wk;

/* ------------------------------------------------------------ the world */

static struct world {
    struct sl__conn c;
    /* the fake back-end */
    const char *send_p; /* a send under way (completed by the driver) */
    size_t send_len;
    bool reading, lower_shut, closed_called, closing;
    /* the fake core */
    size_t plain_len;
    size_t room_cap;   /* the core's read room per call */
    bool core_eof;     /* rx: EOF or an error */
    bool core_sending; /* a core send is owed its tx_done */
    char reply[4096];  /* the core's send: stable until tx_done */
    size_t reply_len;
    bool aborted;
    int depth; /* inside a down call: no up call may come */
    size_t wire_len;
    /* the large buffers last: not cleared per input */
    char plain[PLAIN_MAX]; /* what the core received */
    char wire[PLAIN_MAX];  /* ciphertext the server sent, for the client */
} world, *W = &world;

/* ------------------------------------------------------------ core stubs */

/* The connection core's buffer growth (conn.c), as it is there. */
void sl__buf_grow(struct sl__buf *b, size_t len)
{
    size_t cap = b->cap ? b->cap : 256;

    while (cap - b->len < len)
        cap *= 2;
    b->p = realloc(b->p, cap);
    CHECK(b->p != NULL);
    b->cap = cap;
}

void sl__buf_free(struct sl__buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* The listener's current context (tls.c: its rotation is not fuzzed). */
void *sl__tls_ssl_new(struct sl__tls *t)
{
    (void)t;
    return SSL_new(server_ctx);
}

void sl__log_event(enum sl__log_level lvl, const char *event, const char *fmt, ...)
{
    (void)lvl, (void)event, (void)fmt;
}

void sl__conn_stream_bytes(struct sl__conn *c, int64_t bytes)
{
    CHECK(bytes >= 0 && bytes <= (int64_t)STREAM_BYTES_MAX);
    c->stream_bytes = bytes;
}

void sl__conn_handshaking(struct sl__conn *c, bool on)
{
    (void)c, (void)on;
}

void sl__conn_abort(struct sl__conn *c)
{
    W->aborted = true;
    if (!(c->flags & SL__CONN_CLOSE_BEGUN))
        c->io->close(c);
}

void sl__metrics_conn_event(struct sl__metrics *m, unsigned w, enum sl__conn_event e, uint64_t n)
{
    (void)m, (void)w, (void)e, (void)n;
}

bool sl__log_enabled(enum sl__log_level lvl)
{
    (void)lvl;
    return false;
}

void sl__log_rate(struct sl__lograte *r, enum sl__log_level lvl, const char *event,
                  const struct sl__log_field *f, size_t nf, const char *fmt, ...)
{
    (void)r, (void)lvl, (void)event, (void)f, (void)nf, (void)fmt;
}

static bool core_rx_room(struct sl__conn *c, char **p, size_t *room)
{
    (void)c;
    if (W->plain_len + W->room_cap > sizeof(W->plain))
        W->plain_len = 0; /* a long input: start over (core_rx checks against sent_log) */
    *p = W->plain + W->plain_len;
    *room = W->room_cap;
    return true;
}

static size_t client_sent;        /* bytes the client wrote, all of them */
static size_t core_got;           /* bytes the core received, all of them */
static bool injected;             /* raw bytes went into the stream */
static char sent_log[PLAIN_MAX];  /* what the client wrote */
static char reply_log[PLAIN_MAX]; /* what the core sent */
static size_t core_sent, client_got;

static void core_rx(struct sl__conn *c, ssize_t n)
{
    CHECK(W->depth == 0);
    CHECK(!(c->flags & SL__CONN_CLOSE_BEGUN));
    if (n > 0) {
        CHECK((size_t)n <= W->room_cap);
        if (!injected) {
            CHECK(core_got + (size_t)n <= client_sent);
            CHECK(memcmp(W->plain + W->plain_len, sent_log + core_got, (size_t)n) == 0);
        }
        core_got += (size_t)n;
        W->plain_len += (size_t)n;
        return;
    }
    W->core_eof = true;
    c->flags |= SL__CONN_PEER_GONE;
}

static void core_tx_done(struct sl__conn *c, int status)
{
    (void)c, (void)status;
    CHECK(W->depth == 0);
    CHECK(W->core_sending);
    W->core_sending = false;
}

static void core_closed(struct sl__conn *c)
{
    (void)c;
    W->closed_called = true;
}

static void core_idle(struct sl__conn *c)
{
    (void)c;
}

const struct sl__conn_up sl__conn_up_core = {
    .rx_room = core_rx_room,
    .rx = core_rx,
    .tx_done = core_tx_done,
    .closed = core_closed,
    .idle = core_idle,
};

/* ------------------------------------------------------------ the back-end */

static int lower_open(struct sl__conn *c)
{
    (void)c;
    return 0;
}

static int lower_read_start(struct sl__conn *c)
{
    (void)c;
    W->reading = true;
    return 0;
}

static void lower_read_stop(struct sl__conn *c)
{
    (void)c;
    W->reading = false;
}

static int lower_write(struct sl__conn *c, const char *p, size_t len, size_t *took)
{
    (void)c, (void)p, (void)len;
    *took = 0;
    return 0;
}

static int lower_send(struct sl__conn *c, const char *p, size_t len)
{
    (void)c;
    CHECK(W->send_p == NULL); /* one send at a time */
    CHECK(!W->closing);
    W->send_p = p;
    W->send_len = len;
    return 0;
}

static int lower_shutdown(struct sl__conn *c)
{
    (void)c;
    CHECK(W->send_p == NULL); /* after the last send completed */
    W->lower_shut = true;
    return 0;
}

static void lower_close(struct sl__conn *c)
{
    c->flags |= SL__CONN_CLOSE_BEGUN;
    W->closing = true;
}

static const struct sl__conn_io lower = {
    .name = "fuzz",
    .open = lower_open,
    .read_start = lower_read_start,
    .read_stop = lower_read_stop,
    .write = lower_write,
    .send = lower_send,
    .shutdown = lower_shutdown,
    .close = lower_close,
};

/* ------------------------------------------------------------ driving */

/* The driver's loop turn: complete the send under way (its bytes go on
 * the wire to the client). */
static void complete_send(void)
{
    struct sl__conn *c = &W->c;

    if (W->send_p == NULL)
        return;
    size_t n = W->send_len;
    if (W->wire_len + n <= sizeof(W->wire)) {
        memcpy(W->wire + W->wire_len, W->send_p, n);
        W->wire_len += n;
    }
    W->send_p = NULL;
    if (!W->closing)
        c->up->tx_done(c, 0);
}

/* Deliver p[0..n) to the transform as reads of at most `step` bytes. */
static void deliver(const unsigned char *p, size_t n, size_t step)
{
    struct sl__conn *c = &W->c;

    while (n > 0 && !W->closing && W->reading) {
        char *room;
        size_t cap, k;
        CHECK(c->up->rx_room(c, &room, &cap));
        k = n < step ? n : step;
        if (k > cap)
            k = cap;
        memcpy(room, p, k);
        c->up->rx(c, (ssize_t)k);
        p += k;
        n -= k;
        complete_send();
    }
}

/* Move what the server sent to the client's read BIO. */
static void to_client(BIO *crbio)
{
    for (int i = 0; i < 8 && W->send_p != NULL; i++)
        complete_send();
    if (W->wire_len > 0) {
        CHECK(BIO_write(crbio, W->wire, (int)W->wire_len) == (int)W->wire_len);
        W->wire_len = 0;
    }
}

/* Move what the client wrote to the server, in reads of `step`. */
static void from_client(BIO *cwbio, size_t step)
{
    char *p;
    long n = BIO_get_mem_data(cwbio, &p);

    if (n > 0) {
        deliver((const unsigned char *)p, (size_t)n, step);
        (void)BIO_reset(cwbio);
    }
}

static size_t take(const uint8_t **d, size_t *size, size_t want)
{
    size_t n = want < *size ? want : *size;
    *d += n;
    *size -= n;
    return n;
}

static unsigned byte(const uint8_t **d, size_t *size)
{
    if (*size == 0)
        return 0;
    unsigned b = **d;
    take(d, size, 1);
    return b;
}

static size_t step_of(unsigned b)
{
    static const size_t steps[] = {1, 2, 5, 16, 100, 517, 4096, 16384};
    return steps[b & 7];
}

static void run_raw(const uint8_t *d, size_t size)
{
    size_t step = step_of(byte(&d, &size));

    deliver(d, size, step);
    complete_send();
}

static void run_client(const uint8_t *d, size_t size)
{
    SSL *cl = SSL_new(client_ctx);
    BIO *crbio = BIO_new(BIO_s_mem()), *cwbio = BIO_new(BIO_s_mem());
    size_t step = step_of(byte(&d, &size));
    unsigned char buf[16384];

    CHECK(cl != NULL && crbio != NULL && cwbio != NULL);
    BIO_set_mem_eof_return(crbio, -1);
    BIO_set_mem_eof_return(cwbio, -1);
    SSL_set_bio(cl, crbio, cwbio);
    SSL_set_connect_state(cl);
    /* The handshake: a few rounds are enough for TLS 1.2 or 1.3. */
    for (int i = 0; i < 6 && !W->closing; i++) {
        if (SSL_do_handshake(cl) == 1 && i > 0)
            break;
        from_client(cwbio, step);
        to_client(crbio);
    }
    while (size > 0 && !W->closing) {
        unsigned op = byte(&d, &size) % 8;
        size_t n = byte(&d, &size) * 16u + byte(&d, &size);
        const uint8_t *p = d;
        n = take(&d, &size, n);
        switch (op) {
        case 0:
        case 1: /* the client writes */
            if (n > 0 && SSL_is_init_finished(cl) && client_sent + n <= sizeof(sent_log)) {
                size_t w = 0;
                if (SSL_write_ex(cl, p, n, &w) == 1) {
                    memcpy(sent_log + client_sent, p, w);
                    client_sent += w;
                }
            }
            from_client(cwbio, step);
            break;
        case 2: /* raw bytes into the stream */
            injected = true;
            deliver(p, n, step);
            break;
        case 3: /* the core sends a reply */
            if (!W->core_sending && !W->lower_shut && core_sent + n <= sizeof(reply_log)) {
                W->reply_len = n < sizeof(W->reply) ? n : sizeof(W->reply);
                memcpy(W->reply, p, W->reply_len);
                memcpy(reply_log + core_sent, p, W->reply_len);
                core_sent += W->reply_len;
                W->core_sending = true;
                W->depth++;
                int r = W->c.io->send(&W->c, W->reply, W->reply_len);
                W->depth--;
                if (r != 0)
                    W->core_sending = false;
            }
            break;
        case 4: /* the core shuts its write side */
            if (!W->core_sending) {
                W->depth++;
                (void)W->c.io->shutdown(&W->c);
                W->depth--;
            }
            break;
        case 5: /* the client updates its keys */
            if (SSL_is_init_finished(cl) && SSL_version(cl) == TLS1_3_VERSION)
                (void)SSL_key_update(cl, n & 1 ? SSL_KEY_UPDATE_REQUESTED
                                               : SSL_KEY_UPDATE_NOT_REQUESTED);
            from_client(cwbio, step);
            break;
        case 6: /* the client ends */
            (void)SSL_shutdown(cl);
            from_client(cwbio, step);
            break;
        default: /* the core's room shrinks or grows; reads change size */
            W->room_cap = 1 + n % 16384;
            step = step_of((unsigned)n);
            break;
        }
        to_client(crbio);
        /* The client reads what came: the core's replies, decrypted. */
        size_t got;
        while (SSL_read_ex(cl, buf, sizeof(buf), &got) == 1) {
            if (!injected) {
                CHECK(client_got + got <= core_sent);
                CHECK(memcmp(buf, reply_log + client_got, got) == 0);
            }
            client_got += got;
        }
    }
    SSL_free(cl);
}

static EVP_PKEY *key;
static X509 *cert;

static void init_once(void)
{
    key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    cert = X509_new();
    CHECK(key != NULL && cert != NULL);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                               (const unsigned char *)"fuzz", -1, -1, 0);
    X509_set_issuer_name(cert, X509_get_subject_name(cert));
    CHECK(X509_sign(cert, key, NULL) > 0);

    server_ctx = SSL_CTX_new(TLS_server_method());
    client_ctx = SSL_CTX_new(TLS_client_method());
    CHECK(server_ctx != NULL && client_ctx != NULL);
    SSL_CTX_set_options(server_ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_min_proto_version(server_ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(server_ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    CHECK(SSL_CTX_use_certificate(server_ctx, cert) == 1);
    CHECK(SSL_CTX_use_PrivateKey(server_ctx, key) == 1);
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);

    tls.n_certs = 1;
    ls.tls = &tls;
    wk.srv = &srv;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool inited;
    unsigned mode;

    if (!inited) {
        init_once();
        inited = true;
    }
    memset(W, 0, offsetof(struct world, plain));
    W->c.w = &wk;
    W->c.ls = &ls;
    W->room_cap = 16384;
    client_sent = core_got = core_sent = client_got = 0;
    injected = false;

    sl__conn_tls_install(&W->c, &lower);
    CHECK(W->c.io->open(&W->c) == 0);
    CHECK(W->c.io->read_start(&W->c) == 0);
    mode = byte(&data, &size);
    if (mode & 1)
        run_client(data, size);
    else
        run_raw(data, size);
    complete_send();
    if (!W->closing) {
        W->c.up->rx(&W->c, SL__CONN_RX_EOF);
        complete_send();
    }
    if (!W->closing)
        W->c.io->close(&W->c);
    W->c.up->closed(&W->c);
    CHECK(W->closed_called);
    W->c.io->release(&W->c);
    CHECK(W->c.stream == NULL);
    return 0;
}
