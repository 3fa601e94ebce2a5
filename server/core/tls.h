/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls.h - TLS on a listener (internal): reading its `tls:` mapping
 * (tls_config.c), building the OpenSSL contexts once at start (tls.c) and
 * the per-connection transform over the byte stream (conn_tls.c,
 * conn_io.h). Types in tls-t.h; docs/tls.md is the operator's page.
 */
#ifndef SL_SERVER_TLS_H
#define SL_SERVER_TLS_H

#include <stdint.h>
#include <stdio.h>

#include <yaml.h>

#include "config.h"
#include "tls-t.h"

struct sl__conn;
struct sl__conn_io;

/* Read a listener's `tls:` mapping `v` into a new *out (also on error, so
 * that it is freed with the listener). 0, or SL_EINVAL after reporting
 * each problem with sl__config_fail(). Paths resolve against `dir`. */
int sl__tls_config_load(struct sl__config_ctx *x, yaml_node_t *v, const char *dir,
                        struct sl__tls **out);

/* Once the listener is read (its protocols known): load the certificates
 * and keys, check that each key matches its certificate, and build the
 * contexts. 0, or SL_EINVAL after reporting at the `tls:` key. Reads the
 * files; writes nothing. */
int sl__tls_build(struct sl__config_ctx *x, struct sl__tls *t, unsigned protos);

/* Rotation: build the listener's contexts anew from its files (the
 * certificates, keys and ca_file) and publish them for new connections;
 * established ones keep theirs. On failure nothing changes and one log line
 * (tls.reload_failed) names the file and OpenSSL's reason. `listener`
 * (address:port) and `why` (the trigger) are for the log. Main thread. */
int sl__tls_reload(struct sl__tls *t, const char *listener, const char *why);

/* A new SSL of the listener's current contexts (SSL *), or NULL; any
 * worker. */
void *sl__tls_ssl_new(struct sl__tls *t);

/* Drop the current contexts (sl__tls_free does). */
void sl__tls_release(struct sl__tls *t);

/* Rotations that succeeded and failed, since start. */
void sl__tls_reload_counts(uint64_t *ok, uint64_t *failed);

void sl__tls_free(struct sl__tls *t);

/* --help lines for the listener's tls keys. */
void sl__tls_help(FILE *f);

/* Put the TLS transform on a just-accepted connection of a listener with
 * TLS: c->io and c->up become the transform's, over the back-end's `lower`
 * (conn_tls.c). */
void sl__conn_tls_install(struct sl__conn *c, const struct sl__conn_io *lower);

#endif /* SL_SERVER_TLS_H */
