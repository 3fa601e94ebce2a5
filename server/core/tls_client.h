/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_client.h - TLS to a server this daemon connects to (internal): a
 * `tls:` mapping {ca_file, server_name, verify, cert_file, key_file} read
 * into one OpenSSL client context built at start, and the per-connection
 * transform over memory BIOs (ciphertext fed in, plaintext out; plaintext
 * given, ciphertext taken), so that the code owning the socket stays
 * about the socket. The proxy's upstreams use it; any other client of
 * the daemon may.
 *
 * Ownership: a struct sl__tls_client belongs to the configuration that
 * read it (freed by sl__tls_client_free); its context is read-only once
 * built and shared by every worker. A struct sl__tlsc (one connection)
 * and a struct sl__tlsc_slot (the last session of one server, offered
 * again) belong to one worker's thread.
 */
#ifndef SL_SERVER_TLS_CLIENT_H
#define SL_SERVER_TLS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "config.h"

struct sl__tls_client {
    char *ca_file;     /* resolved path; NULL: the system's trust store */
    char *server_name; /* NULL: the host name of the server connected to */
    char *cert_file;   /* client certificate, NULL none */
    char *key_file;
    bool verify; /* the server's certificate and name (true by default) */
    void *ctx;   /* SSL_CTX * */
};

/* Read the mapping `v` (written at `key`, e.g. "upstream.tls", which
 * names it in messages) into a new *out, and build its context: files
 * are read and the key checked against the certificate here. 0, or
 * SL_EINVAL after reporting each problem with sl__config_fail() (*out
 * is set also then, to be freed with its owner). Relative paths resolve
 * against the configuration file's directory. */
int sl__tls_client_load(struct sl__config_ctx *x, yaml_node_t *v, const char *key,
                        struct sl__tls_client **out);
void sl__tls_client_free(struct sl__tls_client *t);

/* Why a handshake failed. */
enum sl__tlsc_fail {
    SL__TLSC_FAIL_VERIFY,    /* certificate not trusted, expired, ... */
    SL__TLSC_FAIL_NAME,      /* certificate valid but for another name or address */
    SL__TLSC_FAIL_HANDSHAKE, /* the handshake failed otherwise (alert, version, not TLS) */
    SL__TLSC_FAIL_OTHER,     /* the connection dropped, or could not be set up */
};

/* The last session of one server, offered on its next connections. */
struct sl__tlsc_slot {
    void *sess; /* SSL_SESSION *, NULL none */
};
void sl__tlsc_slot_clear(struct sl__tlsc_slot *s);

struct sl__tlsc;

/* A client connection's transform to `host` (the server's host name or
 * address, used when server_name is not set; an address is checked as
 * such and sends no SNI), offering `slot`'s session and keeping new ones
 * there (slot may be NULL). NULL when OpenSSL cannot make one. */
struct sl__tlsc *sl__tlsc_new(const struct sl__tls_client *t, const char *host,
                              struct sl__tlsc_slot *slot);
/* Queue close_notify (taken with sl__tlsc_take) once the handshake is done. */
void sl__tlsc_close(struct sl__tlsc *tc);
/* Free it; its session stays good to offer again (SSL_free alone would
 * take a connection not shut down for a broken one). */
void sl__tlsc_free(struct sl__tlsc *tc);

/* Ciphertext read from the socket (copied). */
void sl__tlsc_feed(struct sl__tlsc *tc, const void *p, size_t n);
/* Drive the handshake: 1 done, 0 more bytes needed, -1 failed (*why). */
int sl__tlsc_handshake(struct sl__tlsc *tc, enum sl__tlsc_fail *why);
/* Whether the handshake resumed a session. */
bool sl__tlsc_resumed(const struct sl__tlsc *tc);
/* Plaintext into dst[0..cap): bytes (> 0), 0 when nothing more is
 * readable now, -1 the server closed TLS (close_notify), -2 an error. */
long sl__tlsc_read(struct sl__tlsc *tc, void *dst, size_t cap);
/* Plaintext to send (all of it encrypted): 0, or -1 on error. */
int sl__tlsc_write(struct sl__tlsc *tc, const void *p, size_t n);
/* Ciphertext waiting to be sent, and taking up to `cap` of it. */
size_t sl__tlsc_pending(const struct sl__tlsc *tc);
size_t sl__tlsc_take(struct sl__tlsc *tc, void *dst, size_t cap);

#endif /* SL_SERVER_TLS_CLIENT_H */
