/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls.c - a listener's OpenSSL contexts, built once at start from its
 * struct sl__tls (tls_config.c): one SSL_CTX per certificate, all set up
 * alike - TLS 1.2 and 1.3 only, no compression, no renegotiation, no
 * session resumption yet, the configured ciphers, client certificates
 * checked against ca_file - with SNI choosing among them and ALPN choosing
 * the protocol id from the listener's list.
 *
 * It reads the certificate files and nothing else; it does not touch a
 * connection (conn_tls.c does).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "proto_name.h"
#include "tls.h"

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

static int fail_tls(struct sl__config_ctx *x, const struct sl__tls *t, const char *what,
                    const char *file)
{
    char why[256];

    return sl__config_fail_at(x, t->line, t->col, "tls: %s%s%s: %s", what, file ? " " : "",
                              file ? file : "", ssl_why(why, sizeof(why)));
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
    const struct sl__tls *t = arg;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

    (void)alert;
    if (name == NULL)
        return SSL_TLSEXT_ERR_NOACK;
    for (size_t i = 1; i < t->n_certs; i++)
        for (size_t j = 0; j < t->certs[i].n_names; j++)
            if (name_matches(t->certs[i].names[j], name)) {
                SSL_set_SSL_CTX(ssl, t->certs[i].ctx);
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

/* The settings every context of the listener shares. */
static int setup_common(struct sl__config_ctx *x, struct sl__tls *t, SSL_CTX *ctx)
{
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"sluiced", 7);
    /* One record is encrypted at a time from the core's stable buffer. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!SSL_CTX_set_min_proto_version(ctx, t->min_version) ||
        !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION))
        return fail_tls(x, t, "cannot set the protocol versions", NULL);
    if (!SSL_CTX_set_cipher_list(ctx, t->ciphers))
        return fail_tls(x, t, "tls.ciphers matches no cipher:", t->ciphers);
    if (t->ciphersuites != NULL && !SSL_CTX_set_ciphersuites(ctx, t->ciphersuites))
        return fail_tls(x, t, "tls.ciphersuites is not a list of TLS 1.3 suites:", t->ciphersuites);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn, t);
    if (t->verify != SL__TLS_VERIFY_NONE) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca_file);
        if (names == NULL || !SSL_CTX_load_verify_locations(ctx, t->ca_file, NULL)) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            return fail_tls(x, t, "cannot read tls.ca_file", t->ca_file);
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

static int build_one(struct sl__config_ctx *x, struct sl__tls *t, struct sl__tls_cert *tc)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (ctx == NULL)
        return fail_tls(x, t, "cannot create a context", NULL);
    tc->ctx = ctx;
    if (setup_common(x, t, ctx) != 0)
        return SL_EINVAL;
    if (SSL_CTX_use_certificate_chain_file(ctx, tc->cert_file) != 1)
        return fail_tls(x, t, "cannot read the certificate", tc->cert_file);
    if (SSL_CTX_use_PrivateKey_file(ctx, tc->key_file, SSL_FILETYPE_PEM) != 1)
        return fail_tls(x, t, "cannot read the private key", tc->key_file);
    if (SSL_CTX_check_private_key(ctx) != 1)
        return fail_tls(x, t, "the private key does not match the certificate", tc->key_file);
    return 0;
}

int sl__tls_build(struct sl__config_ctx *x, struct sl__tls *t, unsigned protos)
{
    if (!t->alpn_set)
        default_alpn(t, protos);
    for (size_t i = 0; i < t->n_certs; i++)
        if (build_one(x, t, &t->certs[i]) != 0)
            return SL_EINVAL;
    if (t->n_certs > 1) {
        SSL_CTX_set_tlsext_servername_callback(t->certs[0].ctx, on_sni);
        SSL_CTX_set_tlsext_servername_arg(t->certs[0].ctx, t);
    }
    return 0;
}
