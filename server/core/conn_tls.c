/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * conn_tls.c - TLS as a transform of the connection's byte stream
 * (conn_io.h): a `down` table the core calls and an `up` table the
 * back-end calls, over whichever back-end the worker uses. OpenSSL works
 * on two memory BIOs: the back-end reads ciphertext into this layer's
 * room, which goes into the read BIO; SSL_read_ex decrypts into the room
 * the core's rx_room gives, and the core's rx gets the plaintext. The
 * core's sends are encrypted a few records at a time from its buffer
 * (untouched until tx_done), each batch of ciphertext handed to the lower
 * send; the core's tx_done comes once the last of it is gone. The
 * handshake is driven by the first reads and bounded by
 * server.read_timeout; shutting down sends close_notify first.
 *
 * It knows no protocol: sniffing and parsing happen on the plaintext, as
 * on a clear connection. Failures are counted by reason in the metrics
 * (sluice_tls_failures_total), logged at debug level at most once a
 * second. It does not build the contexts (tls.c).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "conn.h"
#include "conn_io.h"
#include "log.h"
#include "metrics.h"
#include "privilege.h"
#include "server-t.h"
#include "tls.h"
#include "worker-t.h"
#include "xalloc.h"

/* The back-end's read room: one ring buffer's, or one libuv read. */
#define RX_BYTES 16384
/* Plaintext encrypted per SSL_write_ex: one record. */
#define RECORD_BYTES 16384
/* Ciphertext kept waiting for the lower send before encrypting more. */
#define OUT_BATCH_BYTES (64u << 10)
/* What OpenSSL holds per connection beyond our buffers (its SSL object,
 * a record buffer each way, the memory BIOs' working size), counted in
 * the buffer budget as an estimate. */
#define OPENSSL_BYTES (48u << 10)

struct tls_conn {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    const struct sl__conn_io *lower;
    struct sl__buf out, fly;     /* ciphertext waiting; ciphertext the lower send has */
    const char *plain;           /* the core's send: its bytes (until tx_done), */
    size_t plain_len, plain_off; /* their length, and how many are encrypted */
    bool owe_tx_done;            /* the core's send is not finished */
    bool lower_sending;
    bool done;             /* the handshake finished */
    bool failed;           /* a failure was counted: the connection ends */
    bool got_bytes;        /* the peer sent something */
    bool want_shut;        /* the core asked to shut the write side */
    bool shut_begun;       /* close_notify queued */
    bool lower_shut;       /* the lower shutdown was asked */
    bool close_after;      /* close once the ciphertext waiting is sent (an alert, the 400) */
    uint8_t cert_name_len; /* 0: no verified client certificate */
    bool cert_admin;       /* one of its SANs or its name is in admin.client_cert_names */
    char cert_name[SL__CERT_NAME_MAX + 1]; /* its name (peer_name) */
    char rx[RX_BYTES];
};

static struct tls_conn *st_of(struct sl__conn *c)
{
    return c->stream;
}

static bool gone(const struct sl__conn *c)
{
    return (c->flags & (SL__CONN_CLOSE_BEGUN | SL__CONN_HANDLE_GONE)) != 0;
}

static void count(struct sl__conn *c, enum sl__conn_event e)
{
    sl__metrics_conn_event(c->w->srv->metrics, c->w->id, e, 1);
}

static void account(struct sl__conn *c, struct tls_conn *t)
{
    sl__conn_stream_bytes(c, (int64_t)(sizeof(*t) + t->out.cap + t->fly.cap + OPENSSL_BYTES));
}

/* ------------------------------------------------------------ failures */

static const char *reason_name(enum sl__conn_event e)
{
    switch (e) {
    case SL__CONN_EV_TLS_PLAINTEXT:
        return "plaintext";
    case SL__CONN_EV_TLS_VERSION:
        return "protocol_version";
    case SL__CONN_EV_TLS_CIPHER:
        return "no_shared_cipher";
    case SL__CONN_EV_TLS_CLIENT_CERT:
        return "client_certificate";
    case SL__CONN_EV_TLS_ALERT:
        return "peer_alert";
    case SL__CONN_EV_TLS_EOF:
        return "peer_closed";
    case SL__CONN_EV_TLS_INCOMPLETE:
        return "handshake_timeout";
    default:
        return "other";
    }
}

/* Count one failure, once per connection; a debug line at most once a
 * second (a client can fail handshakes as fast as it connects). */
static void failure(struct sl__conn *c, enum sl__conn_event e)
{
    static struct sl__lograte rl;
    struct tls_conn *t = st_of(c);
    char why[160] = "";
    unsigned long err = ERR_peek_error();

    if (t->failed)
        return;
    t->failed = true;
    count(c, e);
    if (err != 0)
        ERR_error_string_n(err, why, sizeof(why));
    ERR_clear_error();
    if (sl__log_enabled(SL__LOG_DEBUG))
        sl__log_rate(&rl, SL__LOG_DEBUG, "tls.failed", &SL__LOG_STR("reason", reason_name(e)), 1,
                     "tls: a connection failed (%s)%s%s", reason_name(e), why[0] ? ": " : "", why);
}

/* What the last failed SSL call says about why. */
static enum sl__conn_event classify(int ssl_err)
{
    int reason = ERR_GET_REASON(ERR_peek_error());

    if (ssl_err == SSL_ERROR_SYSCALL || ssl_err == SSL_ERROR_ZERO_RETURN)
        return SL__CONN_EV_TLS_EOF;
    if (reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256)
        return SL__CONN_EV_TLS_ALERT;
    switch (reason) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_WRONG_VERSION_NUMBER:
        return SL__CONN_EV_TLS_VERSION;
    case SSL_R_NO_SHARED_CIPHER:
        return SL__CONN_EV_TLS_CIPHER;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
        return SL__CONN_EV_TLS_CLIENT_CERT;
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
        return SL__CONN_EV_TLS_PLAINTEXT;
    default:
        return SL__CONN_EV_TLS_OTHER;
    }
}

/* ------------------------------------------------------------ writing */

/* Move the ciphertext OpenSSL wrote into `out`. Read out, not reset: a
 * memory BIO's reset clears its whole buffer, every time. */
static void drain_wbio(struct tls_conn *t)
{
    size_t n = BIO_ctrl_pending(t->wbio), got = 0;

    if (n == 0)
        return;
    if (t->out.cap - t->out.len < n)
        sl__buf_grow(&t->out, n);
    if (BIO_read_ex(t->wbio, t->out.p + t->out.len, n, &got) == 1)
        t->out.len += got;
}

/* Encrypt the core's plaintext while little ciphertext waits. false: a
 * fatal error (counted; the connection is to be aborted). */
static bool encrypt_more(struct sl__conn *c, struct tls_conn *t)
{
    while (t->plain != NULL && t->plain_off < t->plain_len && t->out.len < OUT_BATCH_BYTES) {
        size_t n = t->plain_len - t->plain_off, w = 0;
        if (n > RECORD_BYTES)
            n = RECORD_BYTES;
        if (SSL_write_ex(t->ssl, t->plain + t->plain_off, n, &w) != 1) {
            int e = SSL_get_error(t->ssl, 0);
            drain_wbio(t);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                return true; /* the handshake first: reads resume it */
            failure(c, classify(e));
            return false;
        }
        t->plain_off += w;
        drain_wbio(t);
    }
    return true;
}

/* Hand the waiting ciphertext to the lower send (one at a time). */
static int send_out(struct sl__conn *c, struct tls_conn *t)
{
    struct sl__buf x = t->fly;

    t->fly = t->out;
    t->out = x;
    t->out.len = 0;
    t->lower_sending = true;
    if (t->lower->send(c, t->fly.p, t->fly.len) != 0) {
        t->lower_sending = false;
        return -1;
    }
    return 0;
}

/* The write side, once everything before it is gone: close_notify, then
 * the lower shutdown. */
static void shut_step(struct sl__conn *c, struct tls_conn *t)
{
    if (!t->shut_begun) {
        t->shut_begun = true;
        if (t->done && !t->failed) {
            (void)SSL_shutdown(t->ssl);
            ERR_clear_error();
            drain_wbio(t);
        }
        if (t->out.len > 0)
            return; /* sent by the caller; the next pump comes back here */
    }
    if (t->lower_shut)
        return;
    t->lower_shut = true;
    if (t->lower->shutdown(c) != 0)
        t->lower->close(c);
}

/* Move things along: encrypt, send, finish the core's send, shut down. */
static void pump(struct sl__conn *c)
{
    struct tls_conn *t = st_of(c);

    if (gone(c) || t->lower_sending)
        return;
    if (!encrypt_more(c, t)) {
        sl__conn_abort(c);
        return;
    }
    if (t->out.len == 0 && t->want_shut && !t->owe_tx_done)
        shut_step(c, t);
    if (t->out.len > 0) {
        if (send_out(c, t) != 0)
            sl__conn_abort(c);
        account(c, t);
        return;
    }
    if (t->close_after) {
        sl__conn_abort(c);
        return;
    }
    account(c, t);
}

/* ------------------------------------------------------------ down */

static int open_tls(struct sl__conn *c)
{
    struct tls_conn *t = st_of(c);
    int r = t->lower->open(c);

    if (r != 0)
        return r;
    t->ssl = sl__tls_ssl_new(c->ls->tls);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        t->rbio = t->wbio = NULL;
        ERR_clear_error();
        return UV_ENOMEM;
    }
    BIO_set_mem_eof_return(t->rbio, -1); /* empty: "retry", not EOF */
    BIO_set_mem_eof_return(t->wbio, -1);
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    SSL_set_accept_state(t->ssl);
    sl__conn_handshaking(c, true);
    account(c, t);
    return 0;
}

static int read_start(struct sl__conn *c)
{
    return st_of(c)->lower->read_start(c);
}

static void read_stop(struct sl__conn *c)
{
    st_of(c)->lower->read_stop(c);
}

/* Nothing goes at once: the plaintext is encrypted by send. */
static int write_never(struct sl__conn *c, const char *p, size_t len, size_t *took)
{
    (void)c, (void)p, (void)len;
    *took = 0;
    return 0;
}

static int send_tls(struct sl__conn *c, const char *p, size_t len)
{
    struct tls_conn *t = st_of(c);

    if (t->owe_tx_done || t->failed)
        return UV_EBUSY;
    t->plain = p;
    t->plain_len = len;
    t->plain_off = 0;
    t->owe_tx_done = true;
    pump(c);
    return 0;
}

static int shutdown_tls(struct sl__conn *c)
{
    st_of(c)->want_shut = true;
    pump(c);
    return 0;
}

static void close_tls(struct sl__conn *c)
{
    st_of(c)->lower->close(c);
}

static void release_tls(struct sl__conn *c)
{
    struct tls_conn *t = st_of(c);

    if (t == NULL)
        return;
    if (t->got_bytes && !t->done && !t->failed)
        count(c, SL__CONN_EV_TLS_INCOMPLETE);
    SSL_free(t->ssl);
    sl__buf_free(&t->out);
    sl__buf_free(&t->fly);
    free(t);
    c->stream = NULL;
    sl__conn_stream_bytes(c, 0);
}

static const struct sl__conn_io tls_io = {
    .name = "tls",
    .open = open_tls,
    .read_start = read_start,
    .read_stop = read_stop,
    .write = write_never,
    .send = send_tls,
    .shutdown = shutdown_tls,
    .close = close_tls,
    .release = release_tls,
};

/* ------------------------------------------------------------ up */

static bool up_rx_room(struct sl__conn *c, char **p, size_t *room)
{
    struct tls_conn *t = st_of(c);

    *p = t->rx;
    *room = sizeof(t->rx);
    return true;
}

/* A TLS connection starts with a handshake record (22). Anything else is
 * not TLS: what starts with a capital letter is most likely an HTTP
 * request, which gets the answer nginx gives; the rest is closed. */
static bool first_bytes_ok(struct sl__conn *c, struct tls_conn *t, unsigned char first)
{
    static const char bad[] = "HTTP/1.1 400 Bad Request\r\n"
                              "Content-Type: text/plain\r\n"
                              "Content-Length: 46\r\n"
                              "Connection: close\r\n\r\n"
                              "The plain HTTP request was sent to HTTPS port\n";

    if (first == 22)
        return true;
    failure(c, SL__CONN_EV_TLS_PLAINTEXT);
    if (first >= 'A' && first <= 'Z') {
        sl__buf_append(&t->out, bad, sizeof(bad) - 1);
        t->close_after = true;
        t->lower->read_stop(c);
        pump(c);
    } else {
        sl__conn_abort(c);
    }
    return false;
}

/* Keep `s` as the name if it is printable text of a usable length (an
 * ASN.1 string may hold anything, a NUL included). */
static bool take_name(struct tls_conn *t, const unsigned char *s, int len)
{
    if (s == NULL || len <= 0 || len > SL__CERT_NAME_MAX)
        return false;
    for (int i = 0; i < len; i++)
        if (s[i] <= ' ' || s[i] >= 0x7f)
            return false;
    memcpy(t->cert_name, s, (size_t)len);
    t->cert_name[len] = '\0';
    t->cert_name_len = (uint8_t)len;
    return true;
}

/* Is the ASN.1 string `v` one of admin.client_cert_names? */
static bool listed(const struct sl__config *cfg, const ASN1_STRING *v)
{
    return sl__admin_cert_name_ok(cfg, (const char *)ASN1_STRING_get0_data(v),
                                  (size_t)ASN1_STRING_length(v));
}

/* The verified client certificate's name: its first URI SAN (a mesh's
 * SPIFFE id), else its first DNS SAN, else its subject's CN. None when
 * the client sent no certificate or it did not verify. Whether any of its
 * URI or DNS SANs, or that name, is in admin.client_cert_names. */
static void peer_name(struct sl__conn *c, struct tls_conn *t)
{
    const struct sl__config *cfg = &c->w->srv->cfg;
    X509 *peer = SSL_get0_peer_certificate(t->ssl);
    GENERAL_NAMES *sans;
    bool found = false;

    if (peer == NULL || SSL_get_verify_result(t->ssl) != X509_V_OK)
        return;
    sans = X509_get_ext_d2i(peer, NID_subject_alt_name, NULL, NULL);
    static const int kinds[] = {GEN_URI, GEN_DNS}; /* the name's order of preference */
    for (size_t k = 0; sans != NULL && k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (int i = 0; i < sk_GENERAL_NAME_num(sans); i++) {
            const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
            if (g->type != kinds[k])
                continue;
            if (!found)
                found = take_name(t, ASN1_STRING_get0_data(g->d.ia5), ASN1_STRING_length(g->d.ia5));
            t->cert_admin |= cfg->n_admin_cert_names > 0 && listed(cfg, g->d.ia5);
        }
    GENERAL_NAMES_free(sans);
    if (!found) {
        X509_NAME *subject = X509_get_subject_name(peer);
        int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
        X509_NAME_ENTRY *e = at >= 0 ? X509_NAME_get_entry(subject, at) : NULL;
        ASN1_STRING *cn = e != NULL ? X509_NAME_ENTRY_get_data(e) : NULL;
        if (cn != NULL)
            (void)take_name(t, ASN1_STRING_get0_data(cn), ASN1_STRING_length(cn));
    }
    if (t->cert_name_len > 0)
        t->cert_admin |= sl__admin_cert_name_ok(cfg, t->cert_name, t->cert_name_len);
    ERR_clear_error();
}

bool sl__conn_cert_admin(const struct sl__conn *c)
{
    const struct tls_conn *t = c->io == &tls_io ? c->stream : NULL;

    return t != NULL && t->cert_admin;
}

const char *sl__conn_peer_cert_name(const struct sl__conn *c, size_t *len)
{
    const struct tls_conn *t = c->io == &tls_io ? c->stream : NULL;

    if (t == NULL || t->cert_name_len == 0)
        return NULL;
    *len = t->cert_name_len;
    return t->cert_name;
}

/* The handshake, as far as the bytes read so far take it. false: not
 * finished (or failed: the connection is ending). */
static bool handshake(struct sl__conn *c, struct tls_conn *t)
{
    int r = SSL_do_handshake(t->ssl);

    drain_wbio(t);
    if (r == 1) {
        t->done = true;
        count(c, SL__CONN_EV_TLS_HANDSHAKES);
        if (SSL_session_reused(t->ssl))
            count(c, SL__CONN_EV_TLS_RESUMED);
        peer_name(c, t);
        sl__conn_handshaking(c, false);
        return true;
    }
    r = SSL_get_error(t->ssl, r);
    if (r != SSL_ERROR_WANT_READ && r != SSL_ERROR_WANT_WRITE) {
        failure(c, classify(r));
        t->close_after = true; /* the alert OpenSSL wrote goes first */
        t->lower->read_stop(c);
    }
    pump(c);
    return false;
}

/* Decrypt into the core's room while records are complete. */
static void decrypt(struct sl__conn *c, struct tls_conn *t)
{
    while (!gone(c) && !(c->flags & SL__CONN_PEER_GONE)) {
        char *p;
        size_t room, n = 0;
        if (!sl__conn_up_core.rx_room(c, &p, &room)) {
            sl__conn_up_core.rx(c, SL__CONN_RX_NOBUFS);
            return;
        }
        if (SSL_read_ex(t->ssl, p, room, &n) == 1) {
            sl__conn_up_core.rx(c, (ssize_t)n);
            /* Nothing buffered either side: the next read would only say
             * "want read" (an error path OpenSSL makes costly). */
            if (SSL_pending(t->ssl) == 0 && BIO_ctrl_pending(t->rbio) == 0)
                break;
            continue;
        }
        int e = SSL_get_error(t->ssl, 0);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            break;
        if (e == SSL_ERROR_ZERO_RETURN) { /* close_notify: the peer's end of data */
            ERR_clear_error();
            sl__conn_up_core.rx(c, SL__CONN_RX_EOF);
            return;
        }
        failure(c, classify(e));
        sl__conn_up_core.rx(c, UV_EPROTO);
        return;
    }
    drain_wbio(t); /* what reading made OpenSSL answer (a key update) */
    pump(c);
}

static void up_rx(struct sl__conn *c, ssize_t nread)
{
    struct tls_conn *t = st_of(c);

    if (t->close_after || t->failed)
        return; /* ending: what the peer sends now is dropped */
    if (nread <= 0) {
        if (nread < 0 && !t->done && t->got_bytes)
            failure(c, SL__CONN_EV_TLS_EOF);
        sl__conn_up_core.rx(c, nread);
        return;
    }
    if (!t->got_bytes && !first_bytes_ok(c, t, (unsigned char)t->rx[0]))
        return;
    t->got_bytes = true;
    if (BIO_write(t->rbio, t->rx, (int)nread) != (int)nread) {
        sl__conn_abort(c);
        return;
    }
    if (!t->done && !handshake(c, t))
        return;
    decrypt(c, t);
}

/* The lower send is done: finish the core's send once its plaintext is
 * all encrypted and sent, else go on. */
static void up_tx_done(struct sl__conn *c, int status)
{
    struct tls_conn *t = st_of(c);

    t->lower_sending = false;
    t->fly.len = 0;
    if (status < 0 || gone(c)) {
        if (t->owe_tx_done) {
            t->owe_tx_done = false;
            sl__conn_up_core.tx_done(c, status < 0 ? status : UV_ECANCELED);
        } else if (!gone(c)) {
            sl__conn_up_core.rx(c, status); /* the peer is gone */
        }
        return;
    }
    if (t->owe_tx_done && t->plain_off == t->plain_len && t->out.len == 0) {
        t->owe_tx_done = false;
        t->plain = NULL;
        sl__conn_up_core.tx_done(c, 0);
        if (gone(c))
            return;
    }
    pump(c);
}

static void up_closed(struct sl__conn *c)
{
    sl__conn_up_core.closed(c);
}

static void up_idle(struct sl__conn *c)
{
    sl__conn_up_core.idle(c);
}

static const struct sl__conn_up tls_up = {
    .rx_room = up_rx_room,
    .rx = up_rx,
    .tx_done = up_tx_done,
    .closed = up_closed,
    .idle = up_idle,
};

void sl__conn_tls_install(struct sl__conn *c, const struct sl__conn_io *lower)
{
    struct tls_conn *t = sl__xzalloc(sizeof(*t));

    t->lower = lower;
    c->stream = t;
    c->io = &tls_io;
    c->up = &tls_up;
}
