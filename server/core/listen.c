/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * listen.c - making one SO_REUSEPORT listening socket per worker and
 * listener. It does not accept connections (libuv does, in each worker).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen.h"

static int bind_one(const char *address, uint16_t *port, bool reuseport, char *err, size_t errlen);

/*
 * SO_REUSEPORT lets any process of the same user bind a port that is
 * already in use, and the kernel then splits connections between them: a
 * second sluiced started by mistake would silently take half the traffic.
 * So before the real sockets, bind once without it: that fails if anything
 * listens there already.
 */
int sl__listen_socket(const char *address, uint16_t *port, char *err, size_t errlen)
{
    if (*port != 0) {
        uint16_t p = *port;
        int fd = bind_one(address, &p, false, err, errlen);
        if (fd < 0)
            return fd;
        close(fd);
    }
    return sl__listen_socket_shared(address, port, err, errlen);
}

int sl__listen_socket_shared(const char *address, uint16_t *port, char *err, size_t errlen)
{
    return bind_one(address, port, true, err, errlen);
}

static int bind_one(const char *address, uint16_t *port, bool reuseport, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd, one = 1, e;

    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, address, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ((struct sockaddr_in *)&ss)->sin_family = AF_INET;
        ((struct sockaddr_in *)&ss)->sin_port = htons(*port);
        sl = sizeof(struct sockaddr_in);
    } else if (inet_pton(AF_INET6, address, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        ((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons(*port);
        sl = sizeof(struct sockaddr_in6);
    } else {
        snprintf(err, errlen, "'%s' is not a numeric IPv4 or IPv6 address", address);
        return -EINVAL;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0))
        goto fail;
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0)
        goto fail;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        goto fail;
    *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                          : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
fail:
    e = errno;
    snprintf(err, errlen, "%s:%u: %s", address, *port, strerror(e));
    if (fd >= 0)
        close(fd);
    return -e;
}
