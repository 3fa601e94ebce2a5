/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_client.h - TLS to a server this daemon connects to (internal): a
 * `tls:` mapping {ca_file, server_name, verify, cert_file, key_file} read
 * into one OpenSSL client context built at start (net/tlsc.h builds it
 * and holds the per-connection transform the users call). The proxy's
 * upstreams use it.
 *
 * Ownership: a struct sl__tls_client belongs to the configuration that
 * read it (freed by sl__tls_client_free); its context is read-only once
 * built and shared by every worker.
 */
#ifndef SL_SERVER_TLS_CLIENT_H
#define SL_SERVER_TLS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "config.h"
#include "tlsc.h"

struct sl__tls_client {
    char *ca_file;     /* resolved path; NULL: the system's trust store */
    char *server_name; /* NULL: the host name of the server connected to */
    char *cert_file;   /* client certificate, NULL none */
    char *key_file;
    bool verify;             /* the server's certificate and name (true by default) */
    struct sl__tlsc_ctx *cc; /* built from the above (net/tlsc.h) */
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

#endif /* SL_SERVER_TLS_CLIENT_H */
