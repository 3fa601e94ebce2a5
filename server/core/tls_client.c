/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_client.c - TLS to a server this daemon connects to: the `tls:`
 * mapping of a client (the proxy's upstreams) read and its OpenSSL
 * context built once at start, and the per-connection transform over two
 * memory BIOs (tls_client.h). It opens no socket.
 *
 * The context's choices, and why: TLS 1.2 or newer (nothing older is safe
 * to speak); no compression (CRIME) and no renegotiation (a server asking
 * for it is refused); the server's certificate verified against ca_file,
 * or the system's trust store without one, and its name checked (a DNS
 * name against the certificate's names, an address against its IP
 * addresses). Sessions are cached per server by the caller's slot, never
 * in the context: a context is shared by every worker, a slot is one
 * worker's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "config-t.h"
#include "tls_client.h"
#include "xalloc.h"

struct sl__tlsc {
    SSL *ssl;
    BIO *rbio, *wbio; /* ciphertext in (from the socket) and out (to it) */
    struct sl__tlsc_slot *slot;
    bool verify; /* the context verifies: a verification result is a reason */
};

/* ------------------------------------------------------------ configuration */

static char *path_in(const struct sl__config *c, const char *p)
{
    const char *slash = c->path ? strrchr(c->path, '/') : NULL;
    size_t dl = slash != NULL ? (size_t)(slash - c->path) : 0, pl = strlen(p);
    char *out;

    if (p[0] == '/' || dl == 0)
        return sl__xstrndup(p, pl);
    out = sl__xzalloc(dl + pl + 2);
    memcpy(out, c->path, dl);
    out[dl] = '/';
    memcpy(out + dl + 1, p, pl + 1);
    return out;
}

static int set_str(struct sl__config_ctx *x, yaml_node_t *v, const char *key, const char *name,
                   bool path, char **dst)
{
    const char *s = sl__config_scalar(v);

    if (s == NULL || *s == '\0')
        return sl__config_fail(x, v, "%s.%s must be a %s", key, name,
                               path ? "file path" : "non-empty string");
    free(*dst);
    *dst = path ? path_in(sl__config_of(x), s) : sl__xstrndup(s, strlen(s));
    return 0;
}

static int set_bool(struct sl__config_ctx *x, yaml_node_t *v, const char *key, bool *dst)
{
    const char *s = sl__config_scalar(v);

    if (s != NULL && (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "on") == 0))
        *dst = true;
    else if (s != NULL &&
             (strcmp(s, "false") == 0 || strcmp(s, "no") == 0 || strcmp(s, "off") == 0))
        *dst = false;
    else
        return sl__config_fail(x, v, "%s.verify must be true or false (got '%s')", key,
                               s ? s : "?");
    return 0;
}

/* Can the file be opened? A message naming the key if not. */
static int readable(struct sl__config_ctx *x, yaml_node_t *v, const char *key, const char *name,
                    const char *path)
{
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return sl__config_fail(x, v, "%s.%s: cannot read '%s': %s", key, name, path,
                               strerror(errno));
    fclose(f);
    return 0;
}

static const char *ssl_why(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();

    buf[0] = '\0';
    if (e != 0)
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
    return buf;
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

static int build(struct sl__config_ctx *x, struct sl__tls_client *t, const char *key,
                 yaml_node_t *m, yaml_node_t *ca_n, yaml_node_t *cert_n, yaml_node_t *key_n)
{
    char why[200];
    SSL_CTX *ctx;

    if ((t->cert_file == NULL) != (t->key_file == NULL))
        return sl__config_fail(x, m,
                               "%s: cert_file and key_file go together (a client "
                               "certificate and its key)",
                               key);
    if (t->ca_file != NULL && readable(x, ca_n, key, "ca_file", t->ca_file) != 0)
        return SL_EINVAL;
    if (t->cert_file != NULL && (readable(x, cert_n, key, "cert_file", t->cert_file) != 0 ||
                                 readable(x, key_n, key, "key_file", t->key_file) != 0))
        return SL_EINVAL;
    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        return sl__config_fail(x, m, "%s: cannot make a TLS context: %s", key,
                               ssl_why(why, sizeof(why)));
    t->ctx = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    /* Not SSL_MODE_RELEASE_BUFFERS: an idle pooled connection would save
     * its record buffers, and pay for them again on each request. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    SSL_CTX_set_verify(ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (t->ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, t->ca_file, NULL) != 1)
            return sl__config_fail(x, ca_n,
                                   "%s.ca_file: no certificate could be read from "
                                   "'%s' (PEM expected): %s",
                                   key, t->ca_file, ssl_why(why, sizeof(why)));
    } else if (t->verify && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return sl__config_fail(x, m,
                               "%s: the system's trust store cannot be read (give "
                               "ca_file): %s",
                               key, ssl_why(why, sizeof(why)));
    }
    if (t->cert_file != NULL) {
        if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1)
            return sl__config_fail(x, cert_n,
                                   "%s.cert_file: no certificate could be read from "
                                   "'%s' (PEM expected): %s",
                                   key, t->cert_file, ssl_why(why, sizeof(why)));
        if (SSL_CTX_use_PrivateKey_file(ctx, t->key_file, SSL_FILETYPE_PEM) != 1)
            return sl__config_fail(x, key_n,
                                   "%s.key_file: no private key could be read from "
                                   "'%s', or it does not match cert_file: %s",
                                   key, t->key_file, ssl_why(why, sizeof(why)));
        if (SSL_CTX_check_private_key(ctx) != 1)
            return sl__config_fail(x, key_n, "%s.key_file: '%s' is not the key of cert_file '%s'",
                                   key, t->key_file, t->cert_file);
    }
    return 0;
}

int sl__tls_client_load(struct sl__config_ctx *x, yaml_node_t *v, const char *key,
                        struct sl__tls_client **out)
{
    yaml_document_t *doc = sl__config_doc(x);
    struct sl__tls_client *t = sl__xzalloc(sizeof(*t));
    yaml_node_t *ca_n = v, *cert_n = v, *key_n = v;
    int failed = 0;

    *out = t;
    t->verify = true;
    if (v->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, v,
                               "%s is a mapping: {ca_file, server_name, verify, "
                               "cert_file, key_file}",
                               key);
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *val = yaml_document_get_node(doc, p->value);
        const char *ks = sl__config_scalar(k);
        int r;
        if (ks == NULL) {
            r = sl__config_fail(x, k, "a key is a name, not a list or a mapping");
        } else if (strcmp(ks, "ca_file") == 0) {
            ca_n = val;
            r = set_str(x, val, key, ks, true, &t->ca_file);
        } else if (strcmp(ks, "cert_file") == 0) {
            cert_n = val;
            r = set_str(x, val, key, ks, true, &t->cert_file);
        } else if (strcmp(ks, "key_file") == 0) {
            key_n = val;
            r = set_str(x, val, key, ks, true, &t->key_file);
        } else if (strcmp(ks, "server_name") == 0) {
            r = set_str(x, val, key, ks, false, &t->server_name);
        } else if (strcmp(ks, "verify") == 0) {
            r = set_bool(x, val, key, &t->verify);
        } else {
            r = sl__config_fail(x, k,
                                "unknown key '%s' in %s (ca_file, server_name, verify, "
                                "cert_file, key_file)",
                                ks, key);
        }
        if (r != 0)
            failed = SL_EINVAL; /* and on: every error in one run */
    }
    if (failed != 0)
        return failed;
    return build(x, t, key, v, ca_n, cert_n, key_n);
}

void sl__tls_client_free(struct sl__tls_client *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t->ca_file);
    free(t->server_name);
    free(t->cert_file);
    free(t->key_file);
    free(t);
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

struct sl__tlsc *sl__tlsc_new(const struct sl__tls_client *t, const char *host,
                              struct sl__tlsc_slot *slot)
{
    const char *name = t->server_name != NULL ? t->server_name : host;
    struct sl__tlsc *tc = sl__xzalloc(sizeof(*tc));
    X509_VERIFY_PARAM *vp;

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
