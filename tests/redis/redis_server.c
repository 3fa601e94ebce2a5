/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * redis_server.c - start and stop a real redis-server for the tests (see
 * redis_server.h). Loopback only, no RDB/AOF unless asked, killed by PID.
 */
#include "redis_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

int rs_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* PING over TLS with redis-cli (the tests' hiredis has no TLS): answered,
 * or refused for want of AUTH. */
static bool tls_pong(const struct rs_server *s)
{
    char cmd[1024], out[256] = "";
    const char *d = s->tls_dir;
    FILE *p;
    bool ok;

    snprintf(cmd, sizeof(cmd),
             "timeout 10 redis-cli --tls --cacert '%s/ca.pem' --cert '%s/client.pem' --key "
             "'%s/client.key' "
             "-h 127.0.0.1 -p %d ping 2>/dev/null",
             d, d, d, s->port);
    p = popen(cmd, "r");
    if (p == NULL)
        return false;
    ok = fgets(out, sizeof(out), p) != NULL &&
         (strncmp(out, "PONG", 4) == 0 || strstr(out, "NOAUTH") != NULL);
    pclose(p);
    return ok;
}

bool rs_wait_ready(const struct rs_server *s)
{
    struct timespec nap = {0, 20 * 1000 * 1000};

    for (int i = 0; i < 250; i++) {
        if (s->tls_dir != NULL) {
            if (tls_pong(s))
                return true;
            if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
                return false;
            nanosleep(&nap, NULL);
            continue;
        }
        struct timeval tv = {0, 200 * 1000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
        if (c != NULL && c->err == 0) {
            redisReply *r = redisCommand(c, "PING");
            bool ok = r != NULL && (r->type == REDIS_REPLY_STATUS ||
                                    (r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOAUTH")));
            freeReplyObject(r);
            redisFree(c);
            if (ok)
                return true;
        } else if (c != NULL) {
            redisFree(c);
        }
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
            return false; /* it exited: missing binary or bad arguments */
        nanosleep(&nap, NULL);
    }
    return false;
}

int rs_module_args(const char **argv, size_t max)
{
    const char *module = getenv("SL_REDIS_MODULE");

    if (module == NULL || *module == '\0' || max < 4)
        return 0;
    argv[0] = "--loadmodule";
    argv[1] = module;
    argv[2] = "--enable-module-command"; /* MODULE UNLOAD/LOAD, from loopback */
    argv[3] = "local";
    return 4;
}

void rs_exec(const char **argv)
{
    const char *preload = getenv("SL_REDIS_PRELOAD");

    if (preload != NULL && *preload != '\0' && getenv("SL_REDIS_MODULE") != NULL) {
        /* A sanitizer-built module needs its runtime first in the process;
         * Redis itself leaks at exit by design, so leaks are not reported. */
        setenv("LD_PRELOAD", preload, 1);
        setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);
    }
    execvp("redis-server", (char *const *)argv);
    fprintf(stderr, "redis_server: cannot run redis-server: %s\n", strerror(errno));
    _exit(127);
}

static int spawn(struct rs_server *s)
{
    char port[16], files[3][1024];
    const char *argv[48] = {"redis-server", "--port",    port,       "--bind",
                            "127.0.0.1",    "--save",    "",         "--loglevel",
                            "warning",      "--logfile", "/dev/null"};
    size_t n = 11;

    snprintf(port, sizeof(port), "%d", s->port);
    if (s->tls_dir != NULL) {
        argv[2] = "0"; /* no clear-text port */
        argv[n++] = "--tls-port";
        argv[n++] = port;
        snprintf(files[0], sizeof(files[0]), "%s/server.pem", s->tls_dir);
        snprintf(files[1], sizeof(files[1]), "%s/server.key", s->tls_dir);
        snprintf(files[2], sizeof(files[2]), "%s/ca.pem", s->tls_dir);
        argv[n++] = "--tls-cert-file";
        argv[n++] = files[0];
        argv[n++] = "--tls-key-file";
        argv[n++] = files[1];
        argv[n++] = "--tls-ca-cert-file";
        argv[n++] = files[2];
        argv[n++] = "--tls-auth-clients";
        argv[n++] = "yes";
    }
    if (s->dir == NULL) {
        argv[n++] = "--appendonly";
        argv[n++] = "no";
    } else { /* every write in the AOF before its reply: a kill loses nothing */
        argv[n++] = "--dir";
        argv[n++] = s->dir;
        argv[n++] = "--appendonly";
        argv[n++] = "yes";
        argv[n++] = "--appendfsync";
        argv[n++] = "always";
    }
    n += (size_t)rs_module_args(argv + n, 4);
    for (size_t i = 0; s->extra != NULL && s->extra[i] != NULL && n < 44; i++)
        argv[n++] = s->extra[i];
    if (s->opt != NULL) {
        argv[n++] = s->opt;
        argv[n++] = s->val;
    }
    argv[n] = NULL;
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0)
        rs_exec(argv);
    return 0;
}

int rs_start(struct rs_server *s)
{
    return rs_start_args(s, NULL, NULL);
}

int rs_restart(struct rs_server *s)
{
    if (spawn(s) != 0)
        return -1;
    return rs_wait_ready(s) ? 0 : -1;
}

int rs_start_args(struct rs_server *s, const char *opt, const char *val)
{
    s->opt = opt;
    s->val = opt != NULL ? val : NULL;
    for (int attempt = 0; attempt < 5; attempt++) {
        s->port = rs_free_port();
        if (s->port <= 0 || spawn(s) != 0)
            continue;
        if (rs_wait_ready(s))
            return 0;
        rs_stop(s);
    }
    fprintf(stderr, "redis_server: could not start redis-server (is it installed?)\n");
    return -1;
}

void rs_signal(const struct rs_server *s, int sig)
{
    if (s->pid > 0)
        kill(s->pid, sig);
}

void rs_stop(struct rs_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGCONT);
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}
