/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls-t.h - the types of a listener's TLS (internal): what its `tls:`
 * mapping says, and the OpenSSL contexts made of it once at start.
 *
 * Ownership: a struct sl__tls belongs to its listener's configuration
 * (struct sl__listener.tls) and is freed by sl__tls_free() with it. Its
 * contexts are read-only once built and shared by every worker: OpenSSL
 * makes SSL_new() on a shared SSL_CTX safe from any thread.
 */
#ifndef SL_SERVER_TLS_T_H
#define SL_SERVER_TLS_T_H

#include <stdbool.h>
#include <stddef.h>

/* Certificates of one listener (tls.certificates), chosen by SNI. */
#define SL__TLS_MAX_CERTS 16
/* Names one certificate answers for (server_names). */
#define SL__TLS_MAX_NAMES 16
/* ALPN ids a listener offers (tls.alpn). */
#define SL__TLS_MAX_ALPN 4

/* What a client must show (tls.verify_client). */
enum sl__tls_verify {
    SL__TLS_VERIFY_NONE = 0,     /* no certificate asked */
    SL__TLS_VERIFY_OPTIONAL = 1, /* asked; one shown must verify against ca_file */
    SL__TLS_VERIFY_REQUIRE = 2,  /* asked and required */
};

struct sl__tls_cert {
    char *cert_file, *key_file;     /* resolved paths */
    char *names[SL__TLS_MAX_NAMES]; /* server_names, lower case; "*.x" one label */
    size_t n_names;
    void *ctx; /* SSL_CTX *, built by sl__tls_build() */
};

struct sl__tls {
    struct sl__tls_cert certs[SL__TLS_MAX_CERTS]; /* [0]: the default (no or unknown SNI) */
    size_t n_certs;
    char *ca_file;              /* client certificates' CAs, NULL: none */
    enum sl__tls_verify verify; /* tls.verify_client */
    int min_version;            /* TLS1_2_VERSION or TLS1_3_VERSION */
    char *ciphers;              /* TLS 1.2 cipher list (OpenSSL syntax) */
    char *ciphersuites;         /* TLS 1.3 suites */
    unsigned char alpn[64];     /* wire format: length-prefixed ids, server order */
    size_t alpn_len;            /* 0: computed from the listener's protocols */
    bool alpn_set;              /* tls.alpn was given (even empty: offer none) */
    size_t line, col;           /* where `tls:` was written, for later errors */
};

#endif /* SL_SERVER_TLS_T_H */
