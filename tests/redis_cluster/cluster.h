/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cluster.h - a real Redis Cluster for the tests: N redis-server processes
 * started with --cluster-enabled on free loopback ports (client and bus
 * port both chosen free), formed with `redis-cli --cluster create`, waited
 * for until every node says cluster_state:ok and agrees on all 16384 slots,
 * and killed by PID at the end (their temporary directory removed).
 *
 * With $SL_REDIS_MODULE set, every node loads the Redis module (as
 * tests/redis/redis_server.h's servers do).
 *
 * It never skips: a missing redis-server or redis-cli fails the test that
 * asked for a cluster. It does not survive a crashed test process (the
 * servers keep running until killed; their ports are loopback only).
 */
#ifndef SL_TEST_REDIS_CLUSTER_H
#define SL_TEST_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#define RC_MAX_NODES 6

struct rc_node {
    pid_t pid; /* 0 while stopped */
    int port;
    int bus_port;
};

struct rc_cluster {
    size_t n;        /* nodes */
    size_t replicas; /* per master: n = masters * (1 + replicas) */
    char dir[64];    /* node configs and logs */
    struct rc_node node[RC_MAX_NODES];
};

/* Start n nodes (3 masters, or 6 = 3 masters + 1 replica each) and form the
 * cluster; 0, or -1 with a message on stderr (everything started is
 * stopped again). */
int rc_start(struct rc_cluster *c, size_t n, size_t replicas);
/* Kill every node (SIGCONT then SIGKILL, waited for) and remove the dir. */
void rc_stop(struct rc_cluster *c);
/* A blocking connection to node i (1 s timeout), or NULL. */
redisContext *rc_connect(const struct rc_cluster *c, size_t i);
/* Every running node reports cluster_state:ok and the same owner for
 * every slot, within timeout_ms. */
bool rc_wait_ok(const struct rc_cluster *c, int timeout_ms);
/* The node index whose port is `port`, or -1. */
int rc_index_of_port(const struct rc_cluster *c, int port);
/* The node that serves `slot` according to node `ask` (CLUSTER SLOTS), or -1. */
int rc_owner(const struct rc_cluster *c, size_t ask, unsigned slot);
/* The node id (40 hex + NUL) of node i; 0 or -1. */
int rc_node_id(const struct rc_cluster *c, size_t i, char id[41]);
/* Signal node i (SIGSTOP, SIGCONT, SIGKILL; a SIGKILL is waited for). */
void rc_signal(struct rc_cluster *c, size_t i, int sig);
/* Start node i again with its config (after a kill); 0 or -1. */
int rc_restart(struct rc_cluster *c, size_t i);
/* Run one command on node i and return its reply (caller frees) or NULL. */
redisReply *rc_command(const struct rc_cluster *c, size_t i, const char *fmt, ...);

#endif
