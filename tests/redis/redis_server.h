/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_server.h - a real redis-server for the tests: started on a free
 * loopback port with no persistence (or with the AOF in a directory of the
 * test's), stopped by its PID.
 *
 * The Redis module: with $SL_REDIS_MODULE set (a path to sluice-redis.so;
 * tests/CMakeLists.txt sets it for the tests that run against the module),
 * every server is started with --loadmodule it and MODULE allowed from
 * loopback; with $SL_REDIS_PRELOAD set too (the sanitizer build: gcc's
 * libasan), redis-server runs with it preloaded, so a memory error in the
 * module aborts Redis and fails the test.
 *
 * TLS: with tls_dir set, the server serves only TLS with the certificates
 * tls_pki.h makes there, and asks for client certificates.
 *
 * It does not skip anything: a missing redis-server binary fails the test
 * that asked for one. It does not clean up after a crashed test process
 * (the server dies with nothing to save; its port is free again).
 */
#ifndef SL_TEST_REDIS_SERVER_H
#define SL_TEST_REDIS_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

struct rs_server {
    pid_t pid;
    int port;
    const char *opt, *val;    /* one extra option, or NULL */
    const char *dir;          /* with the AOF (appendonly yes) in this directory, or NULL */
    const char *const *extra; /* more arguments, NULL-ended, or NULL */
    /* TLS only, on `port` (--port 0 --tls-port), a client certificate
     * required, with the certificates of this directory (tls_pki.h);
     * readiness is then asked with redis-cli --tls. NULL: clear text. */
    const char *tls_dir;
};

/* Start one; SL_OK-style 0, or -1 (with a message on stderr). */
int rs_start(struct rs_server *s);
/* The same with one extra option and its value (e.g. --requirepass x). */
int rs_start_args(struct rs_server *s, const char *opt, const char *val);
/* Start again on s->port (after rs_stop), empty; 0 or -1. */
int rs_restart(struct rs_server *s);
/* SIGTERM then wait; safe on a stopped (SIGSTOP) server. */
void rs_stop(struct rs_server *s);
/* Send a signal to the server (SIGSTOP / SIGCONT / SIGKILL). */
void rs_signal(const struct rs_server *s, int sig);
/* Block until the server answers PING (up to ~5 s); true when it does. */
bool rs_wait_ready(const struct rs_server *s);
/* A free TCP port on 127.0.0.1 (bound then released). */
int rs_free_port(void);
/* The arguments that load $SL_REDIS_MODULE (at most 4 into argv), or 0. */
int rs_module_args(const char **argv, size_t max);
/* In a forked child: exec redis-server with argv (NULL-ended), with
 * $SL_REDIS_PRELOAD preloaded when the module is loaded. Never returns. */
void rs_exec(const char **argv) __attribute__((noreturn));

#endif
