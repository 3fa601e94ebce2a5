/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls.c - a listener's OpenSSL contexts, built from its struct sl__tls
 * (tls_config.c): one SSL_CTX per certificate, all set up alike - TLS 1.2
 * and 1.3 only, no compression, no renegotiation, the configured ciphers,
 * client certificates checked against ca_file, stateless session tickets
 * under keys sluiced holds - with SNI choosing among them and ALPN choosing
 * the protocol id from the listener's list.
 *
 * The contexts of one build are a generation. It is built at start and
 * again by each rotation (sl__tls_reload(), on the main loop: SIGHUP or a
 * certificate file's change), and published in t->cur; a connection takes
 * the current one at accept (sl__tls_ssl_new()) and keeps it to its end.
 * A generation's lifetime is its default context's: OpenSSL counts the
 * references to an SSL_CTX (one per SSL made from it, one for t->cur), and
 * when the last goes, the ex_data free callback frees the generation with
 * its other contexts. The SNI callback's argument is that generation, so
 * it lives as long as any handshake that can call it.
 *
 * It reads the certificate files and nothing else; it does not touch a
 * connection (conn_tls.c does).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "proto_name.h"
#include "tls.h"
#include "xalloc.h"

/* The contexts of one build: [0] the default, the others chosen by SNI. */
struct gen {
    struct sl__tls *t;
    SSL_CTX *ctx[SL__TLS_MAX_CERTS];
    size_t n;
};

static _Atomic uint64_t reloads_ok, reloads_failed;

/* ex_data slots: the generation on its default context (freed with it),
 * the listener on every context (for the ticket callback). */
static int gen_idx = -1, tls_idx = -1;
static pthread_once_t idx_once = PTHREAD_ONCE_INIT;

static void free_gen(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    struct gen *g = ptr;

    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    if (g == NULL)
        return;
    for (size_t i = 1; i < g->n; i++)
        SSL_CTX_free(g->ctx[i]);
    free(g);
}

static void make_indexes(void)
{
    gen_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, free_gen);
    tls_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/* Where a build reports: the configuration's error list (at start), or a
 * message for the log (a rotation). */
struct why {
    struct sl__config_ctx *x;
    char msg[512];
};

/* OpenSSL's last error, as text, for an operator's message. */
static const char *ssl_why(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();

    if (e == 0)
        snprintf(buf, cap, "unknown error");
    else
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
    return buf;
}

static int fail_tls(struct why *w, const struct sl__tls *t, const char *what, const char *file)
{
    char why[256];

    ssl_why(why, sizeof(why));
    if (w->x == NULL) {
        snprintf(w->msg, sizeof(w->msg), "%s%s%s: %s", what, file ? " " : "", file ? file : "",
                 why);
        return SL_EINVAL;
    }
    return sl__config_fail_at(w->x, t->line, t->col, "tls: %s%s%s: %s", what, file ? " " : "",
                              file ? file : "", why);
}

/* ALPN: the first of the listener's ids (its order) that the client
 * offers; none in common: no ALPN (the client goes on without). */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg)
{
    const struct sl__tls *t = arg;
    unsigned char *sel = NULL;

    (void)ssl;
    if (t->alpn_len == 0 || SSL_select_next_proto(&sel, outlen, t->alpn, (unsigned)t->alpn_len, in,
                                                  inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

static bool name_matches(const char *pattern, const char *name)
{
    if (pattern[0] == '*' && pattern[1] == '.') {
        const char *dot = strchr(name, '.');
        return dot != NULL && dot != name && strcasecmp(dot + 1, pattern + 2) == 0;
    }
    return strcasecmp(pattern, name) == 0;
}

/* SNI: the first certificate listing the name; else the default one. */
static int on_sni(SSL *ssl, int *alert, void *arg)
{
    const struct gen *g = arg;
    const struct sl__tls *t = g->t;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

    (void)alert;
    if (name == NULL)
        return SSL_TLSEXT_ERR_NOACK;
    for (size_t i = 1; i < g->n; i++)
        for (size_t j = 0; j < t->certs[i].n_names; j++)
            if (name_matches(t->certs[i].names[j], name)) {
                SSL_set_SSL_CTX(ssl, g->ctx[i]);
                return SSL_TLSEXT_ERR_OK;
            }
    return SSL_TLSEXT_ERR_OK;
}

/* Append ALPN id `id` to t's list, once. */
static void add_alpn(struct sl__tls *t, const char *id)
{
    size_t len = strlen(id);

    for (size_t off = 0; off < t->alpn_len; off += 1u + t->alpn[off])
        if (t->alpn[off] == len && memcmp(t->alpn + off + 1, id, len) == 0)
            return;
    if (len == 0 || len > 255 || t->alpn_len + 1 + len > sizeof(t->alpn))
        return;
    t->alpn[t->alpn_len] = (unsigned char)len;
    memcpy(t->alpn + t->alpn_len + 1, id, len);
    t->alpn_len += 1 + len;
}

/* The listener's default ALPN list: each of its protocols' id, h2 last: a
 * client offering both h2 and http/1.1 (curl does) is an HTTP client that
 * would send a gRPC room plain HTTP/2 requests, while a gRPC client offers
 * h2 alone. */
static void default_alpn(struct sl__tls *t, unsigned protos)
{
    t->alpn_len = 0;
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; sl__proto_names_reg[i].name != NULL; i++) {
            const char *id = sl__proto_names_reg[i].alpn;
            if (id != NULL && (protos & (1u << i)) && (strcmp(id, "h2") == 0) == (pass == 1))
                add_alpn(t, id);
        }
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A fresh ticket key from OpenSSL's generator, or false. */
static bool new_key(struct sl__tls_ticket_key *k, int64_t now)
{
    if (RAND_bytes(k->name, sizeof(k->name)) != 1 || RAND_bytes(k->aes, sizeof(k->aes)) != 1 ||
        RAND_bytes(k->hmac, sizeof(k->hmac)) != 1) {
        ERR_clear_error();
        return false;
    }
    k->born_ms = now;
    k->set = true;
    return true;
}

/*
 * Session tickets, stateless, under the listener's key ring (t->keys): a
 * key encrypts for half of tls.session_timeout, then is kept to decrypt
 * until it is 1.5 times tls.session_timeout old, so that a ticket made
 * with it just before it retired lives its whole lifetime. Three keys are
 * enough (a key drops out only after two newer ones each encrypted for
 * their half). The ring outlives the generations: a ticket issued before a
 * rotation resumes after it, on whichever context SNI chose. The keys come
 * from RAND_bytes and are never written anywhere.
 *
 * Locked by t->mu, as the accept is: once per handshake that makes or
 * reads a ticket, far below the cost of the handshake itself.
 */
static int on_ticket(SSL *s, unsigned char name[16], unsigned char *iv, EVP_CIPHER_CTX *ectx,
                     EVP_MAC_CTX *hctx, int enc)
{
    struct sl__tls *t = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(s), tls_idx);
    static char sha256[] = "SHA256";
    struct sl__tls_ticket_key k;
    int64_t now = now_ms(), half = t->session_timeout_ms / 2;
    int r = 1;

    if (half < 1)
        half = 1;
    pthread_mutex_lock(&t->mu);
    if (enc) {
        if (!t->keys[0].set || now - t->keys[0].born_ms >= half) {
            struct sl__tls_ticket_key fresh;
            if (!new_key(&fresh, now)) {
                pthread_mutex_unlock(&t->mu);
                return -1;
            }
            memmove(&t->keys[1], &t->keys[0], sizeof(t->keys[0]) * (SL__TLS_TICKET_KEYS - 1));
            t->keys[0] = fresh;
        }
        k = t->keys[0];
    } else {
        size_t i = 0;
        while (i < SL__TLS_TICKET_KEYS &&
               !(t->keys[i].set && memcmp(t->keys[i].name, name, 16) == 0 &&
                 now - t->keys[i].born_ms < 3 * half))
            i++;
        if (i == SL__TLS_TICKET_KEYS) {
            pthread_mutex_unlock(&t->mu);
            return 0; /* unknown or too old: a full handshake */
        }
        k = t->keys[i];
        r = i == 0 ? 1 : 2; /* 2: accepted, and a ticket under the current key is sent */
    }
    pthread_mutex_unlock(&t->mu);

    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k.hmac, sizeof(k.hmac)),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, sha256, 0), OSSL_PARAM_END};
    if (enc) {
        memcpy(name, k.name, 16);
        if (RAND_bytes(iv, 16) != 1 ||
            EVP_EncryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, k.aes, iv) != 1)
            r = -1;
    } else if (EVP_DecryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, k.aes, iv) != 1) {
        r = -1;
    }
    if (r > 0 && EVP_MAC_CTX_set_params(hctx, params) != 1)
        r = -1;
    OPENSSL_cleanse(&k, sizeof(k));
    return r;
}

/* The settings every context of the listener shares. */
static int setup_common(struct why *w, struct sl__tls *t, SSL_CTX *ctx)
{
    uint64_t opts =
        SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE;

    SSL_CTX_set_ex_data(ctx, tls_idx, t);
    /* No server-side cache: resumption is by stateless tickets only. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (t->session_tickets) {
        SSL_CTX_set_timeout(ctx, (long)((t->session_timeout_ms + 999) / 1000));
        SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket);
    } else {
        opts |= SSL_OP_NO_TICKET;
        SSL_CTX_set_num_tickets(ctx, 0);
    }
    SSL_CTX_set_options(ctx, opts);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"sluiced", 7);
    /* One record is encrypted at a time from the core's stable buffer. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!SSL_CTX_set_min_proto_version(ctx, t->min_version) ||
        !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION))
        return fail_tls(w, t, "cannot set the protocol versions", NULL);
    if (!SSL_CTX_set_cipher_list(ctx, t->ciphers))
        return fail_tls(w, t, "tls.ciphers matches no cipher:", t->ciphers);
    if (t->ciphersuites != NULL && !SSL_CTX_set_ciphersuites(ctx, t->ciphersuites))
        return fail_tls(w, t, "tls.ciphersuites is not a list of TLS 1.3 suites:", t->ciphersuites);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn, t);
    if (t->verify != SL__TLS_VERIFY_NONE) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca_file);
        if (names == NULL || !SSL_CTX_load_verify_locations(ctx, t->ca_file, NULL)) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            return fail_tls(w, t, "cannot read tls.ca_file", t->ca_file);
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(
            ctx,
            SSL_VERIFY_PEER |
                (t->verify == SL__TLS_VERIFY_REQUIRE ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
            NULL);
    }
    return 0;
}

static int build_one(struct why *w, struct sl__tls *t, struct sl__tls_cert *tc, SSL_CTX *ctx)
{
    if (setup_common(w, t, ctx) != 0)
        return SL_EINVAL;
    if (SSL_CTX_use_certificate_chain_file(ctx, tc->cert_file) != 1)
        return fail_tls(w, t, "cannot read the certificate", tc->cert_file);
    if (SSL_CTX_use_PrivateKey_file(ctx, tc->key_file, SSL_FILETYPE_PEM) != 1)
        return fail_tls(w, t, "cannot read the private key", tc->key_file);
    if (SSL_CTX_check_private_key(ctx) != 1)
        return fail_tls(w, t, "the private key does not match the certificate", tc->key_file);
    return 0;
}

/* The certificate's notAfter, in seconds since the epoch. */
static int64_t not_after(SSL_CTX *ctx)
{
    X509 *x = SSL_CTX_get0_certificate(ctx);
    ASN1_TIME *epoch = ASN1_TIME_set(NULL, 0);
    int days = 0, secs = 0;
    int64_t r = 0;

    if (x != NULL && epoch != NULL && ASN1_TIME_diff(&days, &secs, epoch, X509_get0_notAfter(x)))
        r = (int64_t)days * 86400 + secs;
    ASN1_TIME_free(epoch);
    ERR_clear_error();
    return r;
}

/* A whole generation, or NULL after reporting through w. */
static SSL_CTX *build_gen(struct why *w, struct sl__tls *t, int64_t *expiry)
{
    struct gen *g = sl__xzalloc(sizeof(*g));
    int bad = 0;

    pthread_once(&idx_once, make_indexes);
    g->t = t;
    for (size_t i = 0; i < t->n_certs && bad == 0; i++) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
        if (ctx == NULL) {
            bad = fail_tls(w, t, "cannot create a context", NULL);
            break;
        }
        g->ctx[g->n++] = ctx;
        if (i == 0 && SSL_CTX_set_ex_data(ctx, gen_idx, g) != 1) {
            SSL_CTX_free(ctx);
            free(g);
            fail_tls(w, t, "cannot create a context", NULL);
            return NULL;
        }
        bad = build_one(w, t, &t->certs[i], ctx);
        if (bad == 0)
            expiry[i] = not_after(ctx);
    }
    if (bad != 0 || g->n == 0) {
        if (g->n > 0)
            SSL_CTX_free(g->ctx[0]); /* frees g and the others */
        else
            free(g);
        return NULL;
    }
    if (g->n > 1) {
        SSL_CTX_set_tlsext_servername_callback(g->ctx[0], on_sni);
        SSL_CTX_set_tlsext_servername_arg(g->ctx[0], g);
    }
    return g->ctx[0];
}

int sl__tls_build(struct sl__config_ctx *x, struct sl__tls *t, unsigned protos)
{
    struct why w = {.x = x};
    int64_t expiry[SL__TLS_MAX_CERTS] = {0};
    SSL_CTX *ctx;

    t->protos = protos;
    if (!t->alpn_set)
        default_alpn(t, protos);
    ctx = build_gen(&w, t, expiry);
    if (ctx == NULL)
        return SL_EINVAL;
    t->cur = ctx;
    for (size_t i = 0; i < t->n_certs; i++)
        atomic_store(&t->not_after[i], expiry[i]);
    return 0;
}

int sl__tls_reload(struct sl__tls *t, const char *listener, const char *why)
{
    struct why w = {.x = NULL};
    int64_t expiry[SL__TLS_MAX_CERTS] = {0};
    SSL_CTX *ctx = build_gen(&w, t, expiry), *old;

    if (ctx == NULL) {
        atomic_fetch_add(&reloads_failed, 1);
        sl__err("tls.reload_failed",
                "tls: listener %s: reload on %s failed: %s; the previous certificates keep "
                "serving",
                listener, why, w.msg);
        return SL_EINVAL;
    }
    pthread_mutex_lock(&t->mu);
    old = t->cur;
    t->cur = ctx;
    pthread_mutex_unlock(&t->mu);
    for (size_t i = 0; i < t->n_certs; i++)
        atomic_store(&t->not_after[i], expiry[i]);
    /* The old generation goes when its last connection does. */
    SSL_CTX_free(old);
    atomic_fetch_add(&reloads_ok, 1);
    sl__info("tls.reloaded", "tls: listener %s: certificates reloaded on %s (%s%s)", listener, why,
             t->certs[0].cert_file, t->n_certs > 1 ? " and others" : "");
    return 0;
}

void *sl__tls_ssl_new(struct sl__tls *t)
{
    SSL *ssl;

    /* A lock, not a lock-free swap: SSL_new must up-ref the context before
     * a rotation may drop t->cur's reference. It is taken once per
     * connection, around SSL_new only, far below a handshake's cost; no
     * request takes it. */
    pthread_mutex_lock(&t->mu);
    ssl = SSL_new(t->cur);
    pthread_mutex_unlock(&t->mu);
    return ssl;
}

void sl__tls_release(struct sl__tls *t)
{
    SSL_CTX_free(t->cur);
    t->cur = NULL;
}

void sl__tls_reload_counts(uint64_t *ok, uint64_t *failed)
{
    *ok = atomic_load(&reloads_ok);
    *failed = atomic_load(&reloads_failed);
}
