/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tlsc.h - TLS to a server Sluice connects to (internal): an OpenSSL
 * client context built from a few settings {ca_file, cert_file, key_file,
 * server_name, verify}, and the per-connection transform over two memory
 * BIOs (ciphertext fed in, plaintext out; plaintext given, ciphertext
 * taken), so that the code owning the socket stays about the socket.
 *
 * The bottom of the house's networking: the proxy's upstreams (through
 * server/core/tls_client.h, which reads their `tls:` mapping) and the
 * Redis link of the stores use it. It reads no configuration file and
 * opens no socket.
 *
 * Ownership: a struct sl__tlsc_ctx is made by sl__tlsc_ctx_new and freed
 * by sl__tlsc_ctx_free; it is read-only once built and may be shared by
 * threads (OpenSSL counts the references its connections hold, so it may
 * be freed while connections made from it are still open). A struct
 * sl__tlsc (one connection) and a struct sl__tlsc_slot (the last session
 * of one server, offered again) belong to one thread.
 */
#ifndef SL_NET_TLSC_H
#define SL_NET_TLSC_H

#include <stdbool.h>
#include <stddef.h>

/* What a client context is built from; the strings are read while
 * building only (copied where kept). */
struct sl__tlsc_conf {
    const char *ca_file;   /* NULL: the system's trust store */
    const char *cert_file; /* client certificate, NULL none (key_file too) */
    const char *key_file;
    const char *server_name; /* NULL: the host name of the server connected to */
    bool verify;             /* the server's certificate and name */
};

/* Which setting a build failure is about (for a message at its key). */
enum sl__tlsc_field {
    SL__TLSC_F_NONE = 0, /* the whole (no setting in particular) */
    SL__TLSC_F_CA,
    SL__TLSC_F_CERT,
    SL__TLSC_F_KEY,
};

struct sl__tlsc_ctx;

/* Build a client context: the files are read and the key checked
 * against the certificate here. NULL on failure, with a sentence in
 * err[0..cap) (not naming the key) and *field the setting it is about. */
struct sl__tlsc_ctx *sl__tlsc_ctx_new(const struct sl__tlsc_conf *c, char *err, size_t cap,
                                      enum sl__tlsc_field *field);
void sl__tlsc_ctx_free(struct sl__tlsc_ctx *x);

/* Why a handshake failed. */
enum sl__tlsc_fail {
    SL__TLSC_FAIL_VERIFY,    /* certificate not trusted, expired, ... */
    SL__TLSC_FAIL_NAME,      /* certificate valid but for another name or address */
    SL__TLSC_FAIL_HANDSHAKE, /* the handshake failed otherwise (alert, version, not TLS) */
    SL__TLSC_FAIL_OTHER,     /* the connection dropped, or could not be set up */
};
/* A few words for the log ("certificate not trusted", ...). */
const char *sl__tlsc_fail_name(enum sl__tlsc_fail why);

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
struct sl__tlsc *sl__tlsc_new(const struct sl__tlsc_ctx *x, const char *host,
                              struct sl__tlsc_slot *slot);
/* Offer one ALPN protocol id (e.g. "h2": gRPC servers refuse TLS without
 * it), before the first handshake step. 0, or -1 when OpenSSL refuses it. */
int sl__tlsc_alpn(struct sl__tlsc *tc, const char *proto);
/* Queue close_notify (taken with sl__tlsc_take) once the handshake is done. */
void sl__tlsc_close(struct sl__tlsc *tc);
/* Free it; its session stays good to offer again (SSL_free alone would
 * take a connection not shut down for a broken one). NULL is fine. */
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
/* OpenSSL's reason for the last read that returned -2 (e.g. "tlsv13
 * alert certificate required": a server refusing a client without a
 * certificate says so only after the client's side of the handshake). */
const char *sl__tlsc_why(const struct sl__tlsc *tc);
/* Plaintext to send (all of it encrypted): 0, or -1 on error. */
int sl__tlsc_write(struct sl__tlsc *tc, const void *p, size_t n);
/* Ciphertext waiting to be sent, and taking up to `cap` of it. */
size_t sl__tlsc_pending(const struct sl__tlsc *tc);
size_t sl__tlsc_take(struct sl__tlsc *tc, void *dst, size_t cap);

#endif /* SL_NET_TLSC_H */
