/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * uring_probe.c - would io_uring pay on this kernel? The question the
 * server's loop would ask, measured without the server: per loop
 * iteration, each of CONNS client connections has one small request
 * waiting; the server reads it and writes a small reply. This program
 * plays both ends over loopback TCP and times only the server's side
 * (process CPU time, so io_uring's kernel work is counted too):
 *
 *   syscalls  one read() and one write() per connection (what sluiced's
 *             libuv loop does today: 2 system calls per request)
 *   uring     one io_uring_enter() per iteration: a recv linked to a send
 *             per connection (liburing), the replies leaving as the
 *             requests are read
 *
 * The client side (write the request, read the reply) uses plain system
 * calls in both modes and is not timed. Output: `name value unit` lines,
 * the CPU per request of each mode and their ratio, for 1, 16 and 50
 * connections. No target: the figure decides whether an io_uring loop is
 * worth building (docs/benchmarks-history.md).
 *
 * usage: uring_probe [ROUNDS]   (default 20000 iterations per figure)
 */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXC 64
#define MSG  32

static int cli[MAXC], srv[MAXC];

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void connect_pairs(int n)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, MAXC) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) < 0)
        die("listen");
    for (int i = 0; i < n; i++) {
        cli[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (cli[i] < 0 || connect(cli[i], (struct sockaddr *)&a, sizeof(a)) < 0)
            die("connect");
        srv[i] = accept(l, NULL, NULL);
        if (srv[i] < 0)
            die("accept");
        setsockopt(cli[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(srv[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    close(l);
}

static void close_pairs(int n)
{
    for (int i = 0; i < n; i++) {
        close(cli[i]);
        close(srv[i]);
    }
}

static int64_t cpu_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void xfer(int fd, char *buf, int rd)
{
    ssize_t r = rd ? read(fd, buf, MSG) : write(fd, buf, MSG);

    if (r != MSG)
        die(rd ? "read" : "write");
}

/* CPU ns per request of the server's side over `rounds` iterations. */
static double run(int n, int rounds, struct io_uring *ring)
{
    char req[MSG], rep[MSG], in[MAXC][MSG], out[MSG];
    int64_t spent = 0;

    memset(req, 'q', sizeof(req));
    memset(rep, 'r', sizeof(rep));
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++)
            xfer(cli[i], req, 0);
        int64_t t0 = cpu_ns();
        if (ring == NULL) {
            for (int i = 0; i < n; i++)
                xfer(srv[i], in[i], 1);
            for (int i = 0; i < n; i++)
                xfer(srv[i], rep, 0);
        } else {
            for (int i = 0; i < n; i++) {
                struct io_uring_sqe *s = io_uring_get_sqe(ring);
                io_uring_prep_recv(s, srv[i], in[i], MSG, 0);
                s->flags |= IOSQE_IO_LINK;
                s = io_uring_get_sqe(ring);
                io_uring_prep_send(s, srv[i], rep, MSG, 0);
            }
            if (io_uring_submit_and_wait(ring, (unsigned)(2 * n)) < 0)
                die("io_uring_submit_and_wait");
            struct io_uring_cqe *c;
            unsigned head, seen = 0;
            io_uring_for_each_cqe(ring, head, c)
            {
                if (c->res != MSG) {
                    errno = c->res < 0 ? -c->res : EIO;
                    die("io_uring completion");
                }
                seen++;
            }
            io_uring_cq_advance(ring, seen);
        }
        spent += cpu_ns() - t0;
        for (int i = 0; i < n; i++)
            xfer(cli[i], out, 1);
    }
    return (double)spent / ((double)rounds * n);
}

int main(int argc, char **argv)
{
    static const int conns[] = {1, 16, 50};
    int rounds = argc > 1 ? atoi(argv[1]) : 20000;
    struct io_uring ring;
    int rc = io_uring_queue_init(2 * MAXC, &ring, 0);

    if (rounds <= 0) {
        fprintf(stderr, "usage: uring_probe [ROUNDS]\n");
        return 2;
    }
    if (rc < 0) {
        printf("uring_probe_unavailable 1 (io_uring_queue_init: %s)\n", strerror(-rc));
        return 0;
    }
    for (size_t k = 0; k < sizeof(conns) / sizeof(conns[0]); k++) {
        int n = conns[k];
        connect_pairs(n);
        run(n, rounds / 10, NULL); /* warm both paths up */
        run(n, rounds / 10, &ring);
        double a = 0, b = 0;
        for (int rep = 0; rep < 3; rep++) { /* interleaved */
            a += run(n, rounds, NULL);
            b += run(n, rounds, &ring);
        }
        printf("uring_probe_syscalls_c%d %.0f ns/request\n", n, a / 3);
        printf("uring_probe_uring_c%d %.0f ns/request\n", n, b / 3);
        printf("uring_probe_uring_vs_syscalls_c%d %.2f x\n", n, b / a);
        close_pairs(n);
    }
    io_uring_queue_exit(&ring);
    return 0;
}
