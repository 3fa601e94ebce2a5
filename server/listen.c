/*
 * listen.c - making one SO_REUSEPORT listening socket per worker and
 * listener. It does not accept connections (libuv does, in each worker).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen.h"

int sl__listen_socket(const char *address, uint16_t *port, char *err, size_t errlen)
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
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
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
