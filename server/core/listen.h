/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * listen.h - listening sockets with SO_REUSEPORT (internal). Debian's libuv
 * 1.44 has no flag for it, so the socket is made here and handed to libuv
 * with uv_tcp_open().
 */
#ifndef SL_SERVER_LISTEN_H
#define SL_SERVER_LISTEN_H

#include <stddef.h>
#include <stdint.h>

/*
 * A bound, non-blocking TCP socket on address:port with SO_REUSEADDR and
 * SO_REUSEPORT, not yet listening. *port is updated to the bound port (for
 * port 0). Fails with -EADDRINUSE if anything listens on the port already,
 * even another process with SO_REUSEPORT. Returns the fd, or -errno with a
 * message in `err`.
 */
int sl__listen_socket(const char *address, uint16_t *port, char *err, size_t errlen);
/* The same without the check that nothing listens there yet: for the second
 * and later sockets of one listener (one per worker). */
int sl__listen_socket_shared(const char *address, uint16_t *port, char *err, size_t errlen);

#endif /* SL_SERVER_LISTEN_H */
