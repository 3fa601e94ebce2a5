/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_pki.h - test certificates for TLS to Redis, made with the openssl
 * command in a new temporary directory (the same set as
 * tests/integration/conftest_tls.py's Pki, EC P-256, valid two days):
 *
 *   ca.pem, ca.key               the CA every server and client trusts
 *   other_ca.pem, other_ca.key   a CA that signed only `stranger`
 *   server.pem, server.key       signed by ca: CN localhost, SANs
 *                                DNS:localhost and IP:127.0.0.1
 *   client.pem, client.key       signed by ca: a client certificate
 *   stranger.pem, stranger.key   signed by other_ca: refused by a server
 *                                that trusts ca
 *
 * A redis-server started with rs_server.tls_dir set to the directory
 * serves only TLS with server.pem and requires a client certificate from
 * ca (redis_server.h).
 */
#ifndef SL_TEST_TLS_PKI_H
#define SL_TEST_TLS_PKI_H

#include <stddef.h>

/* Make the certificates in a new directory, whose path is written to dir
 * (cap bytes); 0, or -1 with a message on stderr. */
int tls_pki_make(char *dir, size_t cap);
/* dir/name into buf (cap bytes); buf. */
const char *tls_pki_path(const char *dir, const char *name, char *buf, size_t cap);
/* Remove the directory and everything in it. */
void tls_pki_remove(const char *dir);

#endif
