/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rcluster_map.h - the Redis link's cluster layer, the pure part
 * (rcluster_map.c, rcluster_slot.c): key slots (CRC16-XMODEM of the key or
 * its {hash tag}, mod 16384, exactly as Redis Cluster specifies), the slot
 * map built from a CLUSTER SLOTS reply, MOVED/ASK redirection parsing and
 * the reading of a cluster's error replies, grouping a check's descriptors
 * by slot, and when to refresh the map. rcluster.h is the part on links:
 * the map asked of a link or of seeds. store/redis/redis_cluster.h
 * forwards here (its name is the one the tests and fuzzers include).
 *
 * Debian's hiredis 0.14 has no cluster client, hence this file. It does no
 * I/O, reads no clock (times are passed in) and allocates nothing: a map is
 * a caller-owned struct. The connections per node and the retries live in
 * their owners (the Redis store's redis_route.c, the hybrid store's sync,
 * the rules push), which use these functions.
 *
 * Ownership: every struct here is a plain value owned by its caller; strings
 * passed in are borrowed. Threads: no shared state; one map per worker.
 */
#ifndef SL_STORE_RCLUSTER_MAP_H
#define SL_STORE_RCLUSTER_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct redisReply;

#define SL__CLUSTER_SLOTS     16384
#define SL__CLUSTER_MAX_NODES 64 /* masters a map can name */
#define SL__CLUSTER_HOST_MAX  64 /* an address as Redis prints it, NUL included */
#define SL__CLUSTER_NO_NODE   0xff

/* CRC16-XMODEM (polynomial 0x1021, initial value 0), Redis Cluster's. */
uint16_t sl__redis_crc16(const char *buf, size_t len);

/* The slot of `key`: the bytes between the first '{' and the first '}'
 * after it when there are any, else the whole key; 0..16383. */
unsigned sl__redis_keyslot(const char *key, size_t len);

/* For every slot, a tag of 1 to 4 bytes of [0-9a-z] whose slot it is (the
 * first in length-then-counting order), NUL-terminated, in tags[slot].
 * One pass of some 10^5 CRCs: compute once and keep. SL_OK, or SL_ENOENT
 * if a slot had none (does not happen). */
int sl__redis_slot_tags(char (*tags)[5]);

/* One master, as CLUSTER SLOTS and MOVED name it. */
struct sl__cnode {
    char host[SL__CLUSTER_HOST_MAX];
    int port;
};

/* Which master serves each slot. The node table only grows: an index,
 * once given, names the same address for the map's life (the store keeps
 * its connections per index). */
struct sl__cmap {
    size_t n_nodes;
    struct sl__cnode nodes[SL__CLUSTER_MAX_NODES];
    uint8_t owner[SL__CLUSTER_SLOTS]; /* node index, or SL__CLUSTER_NO_NODE */
    uint64_t version;                 /* bumped by every change */
};

/* An empty map: no node, every slot unowned. */
void sl__cmap_init(struct sl__cmap *m);

/*
 * An address list as the configuration writes it, "host:port,host:port",
 * into out[0..max): the count, or -1 when it is malformed (no host, a port
 * outside 1..65535, a trailing comma, a host of SL__CLUSTER_HOST_MAX bytes
 * or more) or names more than max. An IPv6 host is written in brackets,
 * "[::1]:7000", and stored bare ("::1"); a bare "::1:7000" is read as
 * Redis prints it (the last ':' separates the port). "" is 0 addresses.
 */
int sl__redis_parse_addrs(const char *list, struct sl__cnode *out, size_t max);

/* The index of (host, port), added when new. -1 when the map is full or
 * the host is too long. */
int sl__cmap_node(struct sl__cmap *m, const char *host, size_t host_len, int port);

/*
 * Replace `m` with the map a CLUSTER SLOTS reply describes (only masters,
 * the first address of each range). An empty or "?" host means the node
 * that was asked: `asked_host`. SL_OK; SL_EINVAL when the reply is not a
 * well-formed CLUSTER SLOTS reply (then `m` is unchanged) or names more than
 * SL__CLUSTER_MAX_NODES masters in all (then no slot is routed). Nodes
 * already known keep their indexes.
 */
int sl__cmap_load(struct sl__cmap *m, const struct redisReply *r, const char *asked_host);

/* The node index serving `slot`, or -1 when no node is known for it. */
int sl__cmap_lookup(const struct sl__cmap *m, unsigned slot);

/* Does every slot have a node? */
bool sl__cmap_complete(const struct sl__cmap *m);

enum sl__credir_kind { SL__CREDIR_MOVED = 1, SL__CREDIR_ASK = 2 };

/* A redirection error reply: "MOVED <slot> <host>:<port>" or "ASK ...". */
struct sl__credir {
    enum sl__credir_kind kind;
    unsigned slot;
    char host[SL__CLUSTER_HOST_MAX];
    int port;
};

/*
 * Parse an error reply's text. An empty host (Redis 7's ":port" when the
 * endpoint is unknown) becomes `asked_host`. SL_OK; SL_ENOENT when the text
 * is not a redirection (some other error); SL_EINVAL when it starts like
 * one but is malformed (slot out of range, bad port, host too long).
 */
int sl__credir_parse(const char *err, size_t len, const char *asked_host, struct sl__credir *out);

/* What a reply says of a cluster's routing. */
enum sl__cerr {
    SL__CERR_NONE = 0,  /* not one of these (an answer, or another error) */
    SL__CERR_MOVED,     /* the slot is another master's: *d names it */
    SL__CERR_ASK,       /* the slot migrates and the keys are elsewhere: *d */
    SL__CERR_TRYAGAIN,  /* the keys of one call split by a migration */
    SL__CERR_DOWN,      /* CLUSTERDOWN: the cluster (or the slot) not served now */
    SL__CERR_MALFORMED, /* MOVED/ASK that does not parse */
};

/* Read reply r (NULL: none) of a call sent to `asked_host`: a MOVED or ASK
 * is parsed into *d (sl__credir_parse). Every kind but NONE and MALFORMED
 * means Redis did not run the call. */
enum sl__cerr sl__cluster_reply(const struct redisReply *r, const char *asked_host,
                                struct sl__credir *d);

/*
 * Apply a MOVED to the map: the slot now belongs to (host, port). SL_OK,
 * SL_ENOMEM when the map cannot name another node. An ASK changes nothing
 * in the map (the slot is only migrating) and must not be given here.
 */
int sl__cmap_moved(struct sl__cmap *m, const struct sl__credir *d);

/*
 * Group descriptors by slot: slots[0..n) are each descriptor's slot;
 * group[i] receives descriptor i's group, group_slot[g] each group's slot,
 * in order of first appearance. Returns the number of groups (n at most).
 */
size_t sl__cluster_group(const uint16_t *slots, size_t n, uint8_t *group, uint16_t *group_slot);

/*
 * When to ask CLUSTER SLOTS again: after a MOVED, an error from a node or
 * a connection lost (sl__crefresh_want), at most once per min_gap_ms; and
 * every period_ms anyway. Times are the caller's milliseconds (uv_now).
 */
struct sl__crefresh {
    int64_t min_gap_ms; /* never two refreshes closer than this */
    int64_t period_ms;  /* refresh at least this often; 0: only on demand */
    int64_t last_ms;    /* the last refresh started; INT64_MIN: never */
    bool wanted;        /* something suggested the map is stale */
};
void sl__crefresh_init(struct sl__crefresh *r, int64_t min_gap_ms, int64_t period_ms);
void sl__crefresh_want(struct sl__crefresh *r);
/* Should a refresh start now? When true, it is recorded as started. */
bool sl__crefresh_due(struct sl__crefresh *r, int64_t now_ms);
/* Milliseconds until sl__crefresh_due could be true (0: now; -1: never). */
int64_t sl__crefresh_wait(const struct sl__crefresh *r, int64_t now_ms);

#endif /* SL_STORE_RCLUSTER_MAP_H */
