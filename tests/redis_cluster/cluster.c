/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cluster.c - start, form, watch and stop a real Redis Cluster for the
 * tests (see cluster.h). Loopback only, no persistence, killed by PID.
 */
#include "cluster.h"
#include "redis_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int free_port(void)
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

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int spawn(struct rc_cluster *c, size_t i)
{
    char port[16], bus[16], conf[32], log[32];
    struct rc_node *n = &c->node[i];

    snprintf(port, sizeof(port), "%d", n->port);
    snprintf(bus, sizeof(bus), "%d", n->bus_port);
    snprintf(conf, sizeof(conf), "nodes-%d.conf", n->port);
    snprintf(log, sizeof(log), "%d.log", n->port);
    n->pid = fork();
    if (n->pid < 0) {
        n->pid = 0;
        return -1;
    }
    if (n->pid == 0) {
        const char *argv[40] = {"redis-server",
                                "--port",
                                port,
                                "--bind",
                                "127.0.0.1",
                                "--cluster-enabled",
                                "yes",
                                "--cluster-config-file",
                                conf,
                                "--cluster-port",
                                bus,
                                "--cluster-node-timeout",
                                "1000",
                                "--cluster-replica-validity-factor",
                                "0",
                                "--dir",
                                c->dir,
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--loglevel",
                                "notice",
                                "--logfile",
                                log};
        int k = 25;
        k += rs_module_args(argv + k, 4); /* $SL_REDIS_MODULE on every node */
        argv[k] = NULL;
        rs_exec(argv);
    }
    return 0;
}

redisContext *rc_connect(const struct rc_cluster *c, size_t i)
{
    struct timeval tv = {1, 0};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", c->node[i].port, tv);

    if (ctx != NULL && ctx->err != 0) {
        redisFree(ctx);
        return NULL;
    }
    if (ctx != NULL)
        redisSetTimeout(ctx, tv);
    return ctx;
}

redisReply *rc_command(const struct rc_cluster *c, size_t i, const char *fmt, ...)
{
    redisContext *ctx = rc_connect(c, i);
    redisReply *r;
    va_list ap;

    if (ctx == NULL)
        return NULL;
    va_start(ap, fmt);
    r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    redisFree(ctx);
    return r;
}

static bool wait_ping(struct rc_cluster *c, size_t i)
{
    for (int k = 0; k < 250; k++) {
        redisReply *r = rc_command(c, i, "PING");
        bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (ok)
            return true;
        if (waitpid(c->node[i].pid, NULL, WNOHANG) == c->node[i].pid) {
            c->node[i].pid = 0;
            return false; /* exited: missing binary, bad option or port taken */
        }
        nap_ms(20);
    }
    return false;
}

/* redis-cli --cluster create over every node; 0 when it exited 0. */
static int form(struct rc_cluster *c)
{
    char addr[RC_MAX_NODES][32], reps[8], log[96];
    const char *argv[RC_MAX_NODES + 8];
    size_t a = 0;
    int status = 0;
    pid_t pid;

    argv[a++] = "redis-cli";
    argv[a++] = "--cluster";
    argv[a++] = "create";
    for (size_t i = 0; i < c->n; i++) {
        snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%d", c->node[i].port);
        argv[a++] = addr[i];
    }
    snprintf(reps, sizeof(reps), "%zu", c->replicas);
    argv[a++] = "--cluster-replicas";
    argv[a++] = reps;
    argv[a++] = "--cluster-yes";
    argv[a] = NULL;
    snprintf(log, sizeof(log), "%s/create.log", c->dir);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp("redis-cli", (char *const *)argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cluster: redis-cli --cluster create failed (see %s)\n", log);
        return -1;
    }
    return 0;
}

int rc_index_of_port(const struct rc_cluster *c, int port)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->node[i].port == port)
            return (int)i;
    return -1;
}

/* owner[slot] = node index, from node `ask`'s CLUSTER SLOTS; false on error. */
static bool owners(const struct rc_cluster *c, size_t ask, int *owner)
{
    redisReply *r = rc_command(c, ask, "CLUSTER SLOTS");
    bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY;

    for (unsigned s = 0; s < 16384; s++)
        owner[s] = -1;
    for (size_t e = 0; ok && e < r->elements; e++) {
        redisReply *x = r->element[e];
        if (x->type != REDIS_REPLY_ARRAY || x->elements < 3 ||
            x->element[2]->type != REDIS_REPLY_ARRAY || x->element[2]->elements < 2) {
            ok = false;
            break;
        }
        int node = rc_index_of_port(c, (int)x->element[2]->element[1]->integer);
        for (long long s = x->element[0]->integer; s <= x->element[1]->integer; s++)
            owner[s] = node;
    }
    freeReplyObject(r);
    return ok;
}

int rc_owner(const struct rc_cluster *c, size_t ask, unsigned slot)
{
    static int owner[16384]; /* tests are single-threaded */

    if (slot >= 16384 || !owners(c, ask, owner))
        return -1;
    return owner[slot];
}

static bool state_ok(const struct rc_cluster *c, size_t i)
{
    redisReply *r = rc_command(c, i, "CLUSTER INFO");
    bool ok =
        r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
    freeReplyObject(r);
    return ok;
}

/* A replica whose link to its master is not up yet, or false. */
static bool replica_syncing(const struct rc_cluster *c, size_t i)
{
    redisReply *r = rc_command(c, i, "INFO replication");
    bool syncing = r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "role:slave") &&
                   !strstr(r->str, "master_link_status:up");
    freeReplyObject(r);
    return syncing;
}

static bool agree(const struct rc_cluster *c)
{
    static int first[16384], other[16384];
    bool have = false;

    for (size_t i = 0; i < c->n; i++) {
        if (c->node[i].pid == 0)
            continue;
        if (!state_ok(c, i) || replica_syncing(c, i) || !owners(c, i, have ? other : first))
            return false;
        if (have && memcmp(first, other, sizeof(first)) != 0)
            return false;
        have = true;
    }
    for (unsigned s = 0; have && s < 16384; s++)
        if (first[s] < 0 || c->node[first[s]].pid == 0)
            return false;
    return have;
}

bool rc_wait_ok(const struct rc_cluster *c, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if (agree(c))
            return true;
        nap_ms(50);
    }
    return false;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

int rc_start(struct rc_cluster *c, size_t n, size_t replicas)
{
    memset(c, 0, sizeof(*c));
    if (n > RC_MAX_NODES || n < 3 || n % (1 + replicas) != 0)
        return -1;
    c->n = n;
    c->replicas = replicas;
    snprintf(c->dir, sizeof(c->dir), "/tmp/sl-cluster-XXXXXX");
    if (mkdtemp(c->dir) == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        bool up = false;
        for (int attempt = 0; attempt < 5 && !up; attempt++) {
            c->node[i].port = free_port();
            c->node[i].bus_port = free_port();
            if (c->node[i].port <= 0 || c->node[i].bus_port <= 0 ||
                c->node[i].port == c->node[i].bus_port || spawn(c, i) != 0)
                continue;
            up = wait_ping(c, i);
            if (!up)
                rc_signal(c, i, SIGKILL);
        }
        if (!up) {
            fprintf(stderr, "cluster: could not start redis-server (is it installed?)\n");
            rc_stop(c);
            return -1;
        }
    }
    if (form(c) != 0 || !rc_wait_ok(c, 30000)) {
        fprintf(stderr, "cluster: the cluster did not reach cluster_state:ok\n");
        rc_stop(c);
        return -1;
    }
    return 0;
}

void rc_signal(struct rc_cluster *c, size_t i, int sig)
{
    if (c->node[i].pid <= 0)
        return;
    kill(c->node[i].pid, sig);
    if (sig == SIGKILL || sig == SIGTERM) {
        waitpid(c->node[i].pid, NULL, 0);
        c->node[i].pid = 0;
    }
}

int rc_restart(struct rc_cluster *c, size_t i)
{
    if (c->node[i].pid != 0 || spawn(c, i) != 0)
        return -1;
    return wait_ping(c, i) ? 0 : -1;
}

int rc_node_id(const struct rc_cluster *c, size_t i, char id[41])
{
    redisReply *r = rc_command(c, i, "CLUSTER MYID");
    int rc = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(id, r->str, 41);
        rc = 0;
    }
    freeReplyObject(r);
    return rc;
}

void rc_stop(struct rc_cluster *c)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->node[i].pid > 0) {
            kill(c->node[i].pid, SIGCONT);
            rc_signal(c, i, SIGKILL);
        }
    }
    if (c->dir[0] != '\0' && getenv("SL_KEEP_CLUSTER_DIR") == NULL)
        remove_dir(c->dir);
    c->dir[0] = '\0';
}
