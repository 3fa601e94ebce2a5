/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls-t.h - the types of a listener's TLS (internal): what its `tls:`
 * mapping says, and the OpenSSL contexts made of it once at start.
 *
 * Ownership: a struct sl__tls belongs to its listener's configuration
 * (struct sl__listener.tls) and is freed by sl__tls_free() with it. Its
 * contexts come in generations (tls.c): one SSL_CTX per certificate, built
 * together at start and again by each rotation, read-only once built and
 * shared by every worker (OpenSSL makes SSL_new() on a shared SSL_CTX safe
 * from any thread). `cur` is the generation new connections take; an older
 * one lives on while a connection made from it does.
 */
#ifndef SL_SERVER_TLS_T_H
#define SL_SERVER_TLS_T_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
};

/* Session ticket keys a listener holds (tls.session_tickets): the newest
 * encrypts, the older ones still decrypt (tls.c). Memory only. */
#define SL__TLS_TICKET_KEYS 3
struct sl__tls_ticket_key {
    unsigned char name[16], aes[32], hmac[32];
    int64_t born_ms; /* CLOCK_MONOTONIC */
    bool set;
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
    bool session_tickets;       /* tls.session_tickets */
    int64_t session_timeout_ms; /* tls.session_timeout */
    size_t line, col;           /* where `tls:` was written, for later errors */

    /* Built by sl__tls_build(), replaced by sl__tls_reload(). */
    unsigned protos;    /* the listener's, for the ALPN default */
    pthread_mutex_t mu; /* guards `cur` and `keys` (tls.c says why a lock) */
    void *cur;          /* SSL_CTX *: the current generation's default context */
    _Atomic int64_t not_after[SL__TLS_MAX_CERTS];        /* each certificate's, epoch seconds */
    struct sl__tls_ticket_key keys[SL__TLS_TICKET_KEYS]; /* [0] encrypts */
};

#endif /* SL_SERVER_TLS_T_H */
