/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tlsc.c - TLS to a server Sluice connects to: the OpenSSL client context
 * built from its settings, and the per-connection transform over two
 * memory BIOs (tlsc.h). It opens no socket and reads no configuration.
 *
 * The context's choices, and why: TLS 1.2 or newer (nothing older is safe
 * to speak); no compression (CRIME) and no renegotiation (a server asking
 * for it is refused); the server's certificate verified against ca_file,
 * or the system's trust store without one, and its name checked (a DNS
 * name against the certificate's names, an address against its IP
 * addresses). Sessions are cached per server by the caller's slot, never
 * in the context: a context may be shared by threads, a slot is one
 * thread's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tlsc.h"

struct sl__tlsc_ctx {
    SSL_CTX *ctx;
    char *server_name; /* NULL: the host connected to */
    bool verify;
};

struct sl__tlsc {
    SSL *ssl;
    BIO *rbio, *wbio; /* ciphertext in (from the socket) and out (to it) */
    struct sl__tlsc_slot *slot;
    bool verify;  /* the context verifies: a verification result is a reason */
    char why[96]; /* OpenSSL's reason for the last failed read, "" none */
};

/* ------------------------------------------------------------ contexts */

static void ssl_why(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();

    buf[0] = '\0';
    if (e != 0)
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
}

/* The context caches nothing itself: each new session goes to the slot
 * of the connection's server, replacing the one it held. */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct sl__tlsc *tc = SSL_get_app_data(ssl);

    if (tc == NULL || tc->slot == NULL)
        return 0;
    if (tc->slot->sess != NULL)
        SSL_SESSION_free(tc->slot->sess);
    tc->slot->sess = sess;
    return 1; /* kept: the slot holds the reference */
}

/* Can the file be opened? A sentence if not. */
static bool readable(const char *what, const char *path, char *err, size_t cap)
{
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        snprintf(err, cap, "%s: cannot read '%s': %s", what, path, strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

static struct sl__tlsc_ctx *fail(struct sl__tlsc_ctx *x, enum sl__tlsc_field f,
                                 enum sl__tlsc_field *field)
{
    *field = f;
    sl__tlsc_ctx_free(x);
    return NULL;
}

struct sl__tlsc_ctx *sl__tlsc_ctx_new(const struct sl__tlsc_conf *c, char *err, size_t cap,
                                      enum sl__tlsc_field *field)
{
    char why[200];
    struct sl__tlsc_ctx *x;
    SSL_CTX *ctx;

    *field = SL__TLSC_F_NONE;
    if ((c->cert_file == NULL) != (c->key_file == NULL)) {
        snprintf(err, cap, "cert_file and key_file go together (a client certificate and its key)");
        return NULL;
    }
    if (c->ca_file != NULL && !readable("ca_file", c->ca_file, err, cap))
        return fail(NULL, SL__TLSC_F_CA, field);
    if (c->cert_file != NULL && !readable("cert_file", c->cert_file, err, cap))
        return fail(NULL, SL__TLSC_F_CERT, field);
    if (c->key_file != NULL && !readable("key_file", c->key_file, err, cap))
        return fail(NULL, SL__TLSC_F_KEY, field);
    x = calloc(1, sizeof(*x));
    if (x == NULL ||
        (c->server_name != NULL && (x->server_name = strdup(c->server_name)) == NULL)) {
        snprintf(err, cap, "out of memory");
        return fail(x, SL__TLSC_F_NONE, field);
    }
    x->verify = c->verify;
    ctx = x->ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        ssl_why(why, sizeof(why));
        snprintf(err, cap, "cannot make a TLS context: %s", why);
        return fail(x, SL__TLSC_F_NONE, field);
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    /* Not SSL_MODE_RELEASE_BUFFERS: an idle pooled connection would save
     * its record buffers, and pay for them again on each request. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    SSL_CTX_set_verify(ctx, c->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (c->ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, c->ca_file, NULL) != 1) {
            ssl_why(why, sizeof(why));
            snprintf(err, cap, "ca_file: no certificate could be read from '%s' (PEM expected): %s",
                     c->ca_file, why);
            return fail(x, SL__TLSC_F_CA, field);
        }
    } else if (c->verify && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        ssl_why(why, sizeof(why));
        snprintf(err, cap, "the system's trust store cannot be read (give ca_file): %s", why);
        return fail(x, SL__TLSC_F_NONE, field);
    }
    if (c->cert_file != NULL) {
        if (SSL_CTX_use_certificate_chain_file(ctx, c->cert_file) != 1) {
            ssl_why(why, sizeof(why));
            snprintf(err, cap,
                     "cert_file: no certificate could be read from '%s' (PEM expected): %s",
                     c->cert_file, why);
            return fail(x, SL__TLSC_F_CERT, field);
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, c->key_file, SSL_FILETYPE_PEM) != 1) {
            ssl_why(why, sizeof(why));
            snprintf(err, cap,
                     "key_file: no private key could be read from '%s', or it does not match "
                     "cert_file: %s",
                     c->key_file, why);
            return fail(x, SL__TLSC_F_KEY, field);
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            ERR_clear_error();
            snprintf(err, cap, "key_file: '%s' is not the key of cert_file '%s'", c->key_file,
                     c->cert_file);
            return fail(x, SL__TLSC_F_KEY, field);
        }
    }
    return x;
}

void sl__tlsc_ctx_free(struct sl__tlsc_ctx *x)
{
    if (x == NULL)
        return;
    SSL_CTX_free(x->ctx);
    free(x->server_name);
    free(x);
}

const char *sl__tlsc_fail_name(enum sl__tlsc_fail why)
{
    switch (why) {
    case SL__TLSC_FAIL_VERIFY:
        return "certificate not trusted";
    case SL__TLSC_FAIL_NAME:
        return "certificate is for another name";
    case SL__TLSC_FAIL_HANDSHAKE:
        return "TLS handshake failed";
    case SL__TLSC_FAIL_OTHER:
        break;
    }
    return "connection lost during the TLS handshake";
}

/* ------------------------------------------------------------ connections */

void sl__tlsc_slot_clear(struct sl__tlsc_slot *s)
{
    if (s->sess != NULL)
        SSL_SESSION_free(s->sess);
    s->sess = NULL;
}

static bool is_address(const char *s)
{
    unsigned char a[16];

    return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

int sl__tlsc_alpn(struct sl__tlsc *tc, const char *proto)
{
    unsigned char wire[256];
    size_t n = strlen(proto);

    if (n == 0 || n > 255)
        return -1;
    wire[0] = (unsigned char)n;
    memcpy(wire + 1, proto, n);
    return SSL_set_alpn_protos(tc->ssl, wire, (unsigned)n + 1) == 0 ? 0 : -1;
}

struct sl__tlsc *sl__tlsc_new(const struct sl__tlsc_ctx *t, const char *host,
                              struct sl__tlsc_slot *slot)
{
    const char *name = t->server_name != NULL ? t->server_name : host;
    struct sl__tlsc *tc = calloc(1, sizeof(*tc));
    X509_VERIFY_PARAM *vp;

    if (tc == NULL)
        return NULL;
    tc->ssl = SSL_new(t->ctx);
    tc->rbio = BIO_new(BIO_s_mem());
    tc->wbio = BIO_new(BIO_s_mem());
    if (tc->ssl == NULL || tc->rbio == NULL || tc->wbio == NULL)
        goto fail;
    BIO_set_mem_eof_return(tc->rbio, -1); /* empty is "more to come", not EOF */
    SSL_set_bio(tc->ssl, tc->rbio, tc->wbio);
    SSL_set_app_data(tc->ssl, tc);
    SSL_set_connect_state(tc->ssl);
    vp = SSL_get0_param(tc->ssl);
    if (is_address(name)) {
        if (t->verify && X509_VERIFY_PARAM_set1_ip_asc(vp, name) != 1)
            goto fail;
    } else {
        if (SSL_set_tlsext_host_name(tc->ssl, name) != 1)
            goto fail;
        if (t->verify) {
            X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            if (SSL_set1_host(tc->ssl, name) != 1)
                goto fail;
        }
    }
    tc->slot = slot;
    tc->verify = t->verify;
    if (slot != NULL && slot->sess != NULL && SSL_SESSION_is_resumable(slot->sess))
        SSL_set_session(tc->ssl, slot->sess);
    return tc;
fail:
    if (tc->ssl == NULL) {
        BIO_free(tc->rbio);
        BIO_free(tc->wbio);
    }
    sl__tlsc_free(tc);
    ERR_clear_error();
    return NULL;
}

void sl__tlsc_close(struct sl__tlsc *tc)
{
    if (SSL_is_init_finished(tc->ssl))
        SSL_shutdown(tc->ssl); /* queues close_notify */
    ERR_clear_error();
}

void sl__tlsc_free(struct sl__tlsc *tc)
{
    if (tc == NULL)
        return;
    /* Ended cleanly as far as OpenSSL knows (close_notify queued or not):
     * otherwise it takes the session for a broken one and no longer
     * offers it. */
    SSL_set_quiet_shutdown(tc->ssl, 1);
    SSL_shutdown(tc->ssl);
    ERR_clear_error();
    SSL_free(tc->ssl); /* and its BIOs */
    free(tc);
}

void sl__tlsc_feed(struct sl__tlsc *tc, const void *p, size_t n)
{
    if (n > 0)
        BIO_write(tc->rbio, p, (int)n);
}

static enum sl__tlsc_fail classify(const struct sl__tlsc *tc, int err)
{
    long v = tc->verify ? SSL_get_verify_result(tc->ssl) : X509_V_OK;

    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
        return SL__TLSC_FAIL_NAME;
    if (v != X509_V_OK)
        return SL__TLSC_FAIL_VERIFY;
    if (err == SSL_ERROR_SSL)
        return SL__TLSC_FAIL_HANDSHAKE;
    return SL__TLSC_FAIL_OTHER;
}

int sl__tlsc_handshake(struct sl__tlsc *tc, enum sl__tlsc_fail *why)
{
    int r = SSL_do_handshake(tc->ssl);
    int err;

    if (r == 1)
        return 1;
    err = SSL_get_error(tc->ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
        return 0;
    *why = classify(tc, err);
    ERR_clear_error();
    return -1;
}

const char *sl__tlsc_why(const struct sl__tlsc *tc)
{
    return tc->why[0] != '\0' ? tc->why : "TLS record error";
}

bool sl__tlsc_resumed(const struct sl__tlsc *tc)
{
    return SSL_session_reused(tc->ssl) == 1;
}

long sl__tlsc_read(struct sl__tlsc *tc, void *dst, size_t cap)
{
    size_t got = 0;
    int err;

    if (SSL_read_ex(tc->ssl, dst, cap, &got) == 1)
        return (long)got;
    err = SSL_get_error(tc->ssl, 0);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
        return 0;
    if (err != SSL_ERROR_ZERO_RETURN) {
        const char *r = ERR_reason_error_string(ERR_peek_last_error());
        snprintf(tc->why, sizeof(tc->why), "%s", r != NULL ? r : "TLS record error");
    }
    ERR_clear_error();
    return err == SSL_ERROR_ZERO_RETURN ? -1 : -2;
}

int sl__tlsc_write(struct sl__tlsc *tc, const void *p, size_t n)
{
    const char *s = p;

    while (n > 0) {
        size_t done = 0;
        if (SSL_write_ex(tc->ssl, s, n, &done) != 1) {
            ERR_clear_error();
            return -1;
        }
        s += done;
        n -= done;
    }
    return 0;
}

size_t sl__tlsc_pending(const struct sl__tlsc *tc)
{
    return BIO_ctrl_pending(tc->wbio);
}

size_t sl__tlsc_take(struct sl__tlsc *tc, void *dst, size_t cap)
{
    int n = BIO_read(tc->wbio, dst, (int)(cap > (size_t)INT32_MAX ? INT32_MAX : cap));

    return n > 0 ? (size_t)n : 0;
}
