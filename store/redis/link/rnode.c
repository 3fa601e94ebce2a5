/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rnode.c - the nodes' health (rnode.h): the process's conditions, each
 * owner's nodes and their edges, and the published snapshot.
 *
 * The shared table is the only state here touched by several threads
 * (its mutex, taken on state changes only); a set's snapshot has its own
 * mutex, taken when the owner publishes (on changes) and when a health
 * view reads it. Nothing here runs per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rnode.h"

#define MAX_CONDS 256
#define KEY_MAX   (SL__CLUSTER_HOST_MAX + 160)

struct cond {
    char key[KEY_MAX];
    unsigned bad;     /* owners that see it bad */
    int64_t since_ms; /* when the first of them did */
};

struct sl__rnode_shared {
    uv_mutex_t lock;
    size_t n;
    struct cond c[MAX_CONDS];
};

/* A set's per-node flags: what it has counted in the process. */
enum {
    SEEN = 1u << 0, /* reached once */
    DOWN = 1u << 1, /* counted unreachable */
};

struct sl__rnode_shared *sl__rnode_shared_new(void)
{
    struct sl__rnode_shared *sh = calloc(1, sizeof(*sh));

    if (sh != NULL && uv_mutex_init(&sh->lock) != 0) {
        free(sh);
        return NULL;
    }
    return sh;
}

void sl__rnode_shared_free(struct sl__rnode_shared *sh)
{
    if (sh == NULL)
        return;
    uv_mutex_destroy(&sh->lock);
    free(sh);
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The entry for `key` (added, with no owner seeing it bad, when new), or
 * NULL when the table is full. Under the lock. */
static struct cond *find(struct sl__rnode_shared *sh, const char *key)
{
    for (size_t i = 0; i < sh->n; i++)
        if (strcmp(sh->c[i].key, key) == 0)
            return &sh->c[i];
    if (sh->n == MAX_CONDS) {
        for (size_t i = 0; i < sh->n; i++) /* reuse one nobody sees bad */
            if (sh->c[i].bad == 0) {
                snprintf(sh->c[i].key, sizeof(sh->c[i].key), "%s", key);
                return &sh->c[i];
            }
        return NULL;
    }
    snprintf(sh->c[sh->n].key, sizeof(sh->c[sh->n].key), "%s", key);
    sh->c[sh->n].bad = 0;
    return &sh->c[sh->n++];
}

bool sl__rnode_shared_edge(struct sl__rnode_shared *sh, const char *key, bool bad,
                           int64_t *lasted_ms)
{
    struct cond *c;
    bool line = true;

    *lasted_ms = 0;
    uv_mutex_lock(&sh->lock);
    if ((c = find(sh, key)) != NULL && bad) {
        line = c->bad++ == 0;
        if (line)
            c->since_ms = mono_ms();
    } else if (c != NULL) {
        line = c->bad == 1;
        c->bad -= c->bad > 0;
        *lasted_ms = mono_ms() - c->since_ms;
    }
    uv_mutex_unlock(&sh->lock);
    return line;
}

void sl__rnode_shared_clear(struct sl__rnode_shared *sh, const char *key)
{
    struct cond *c;

    uv_mutex_lock(&sh->lock);
    if ((c = find(sh, key)) != NULL)
        c->bad = 0;
    uv_mutex_unlock(&sh->lock);
}

/* ------------------------------------------------------------ an owner's */

int sl__rnode_set_init(struct sl__rnode_set *set, struct sl__rnode_shared *shared,
                       const struct sl__rnode_events *ev, void *arg)
{
    memset(set, 0, sizeof(*set));
    set->shared = shared;
    set->ev = ev;
    set->arg = arg;
    if (uv_mutex_init(&set->lock) != 0)
        return -1;
    set->lock_made = true;
    return 0;
}

void sl__rnode_set_close(struct sl__rnode_set *set)
{
    if (!set->lock_made)
        return;
    uv_mutex_destroy(&set->lock);
    set->lock_made = false;
}

/* Node k's condition `what` ("reached", "unreachable") in the process. */
static bool node_edge(struct sl__rnode_set *set, unsigned k, const char *what, bool bad,
                      int64_t *lasted_ms)
{
    char key[KEY_MAX];

    snprintf(key, sizeof(key), "%s %s", what, set->counted[k]);
    return sl__rnode_shared_edge(set->shared, key, bad, lasted_ms);
}

static void report(struct sl__rnode_set *set, struct sl__rnode_edge *e)
{
    if (set->ev != NULL && set->ev->edge != NULL)
        set->ev->edge(set->arg, e);
}

void sl__rnode_note(struct sl__rnode_set *set, unsigned k, const struct sl__rnode_state *s)
{
    struct sl__rnode_pub *p = &set->next[k];
    uint8_t *f = &set->flags[k];
    struct sl__rnode_edge e = {.node = k, .addr = set->counted[k], .why = ""};
    bool up = s->ready > 0;

    memset(p, 0, sizeof(*p));
    snprintf(p->addr, sizeof(p->addr), "%s", s->addr);
    p->ready = (uint16_t)s->ready;
    p->conns = (uint16_t)s->conns;
    p->serving = s->serving;
    p->held = s->held;
    p->down = !up && s->failed;
    if (!s->edges)
        return;
    if (up && !(*f & SEEN)) { /* said once per process, never withdrawn */
        *f |= SEEN;
        snprintf(set->counted[k], sizeof(set->counted[k]), "%s", s->addr);
        e.what = SL__RNODE_REACHED;
        e.say = node_edge(set, k, "reached", true, &e.lasted_ms);
        report(set, &e);
    }
    if (p->down && !(*f & DOWN)) {
        *f |= DOWN;
        snprintf(set->counted[k], sizeof(set->counted[k]), "%s", s->addr);
        e.what = SL__RNODE_DOWN;
        e.why = s->why != NULL ? s->why : "";
        e.say = node_edge(set, k, "unreachable", true, &e.lasted_ms);
        report(set, &e);
    } else if (up && (*f & DOWN)) {
        *f &= (uint8_t)~DOWN;
        e.what = SL__RNODE_BACK;
        e.say = node_edge(set, k, "unreachable", false, &e.lasted_ms);
        report(set, &e);
    }
}

void sl__rnode_publish(struct sl__rnode_set *set, unsigned n)
{
    if (n > SL__CLUSTER_MAX_NODES)
        n = SL__CLUSTER_MAX_NODES;
    uv_mutex_lock(&set->lock);
    memcpy(set->pub, set->next, sizeof(set->pub[0]) * n);
    set->n = n;
    uv_mutex_unlock(&set->lock);
}

void sl__rnode_forget(struct sl__rnode_set *set, unsigned k)
{
    int64_t lasted;

    if (set->flags[k] & DOWN)
        node_edge(set, k, "unreachable", false, &lasted);
    set->flags[k] = 0; /* the new address is reached anew */
}

void sl__rnode_stall(struct sl__rnode_set *set, bool bad, const struct sl__rnode_edge *at)
{
    struct sl__rnode_edge e = *at;

    if (bad == set->stalled)
        return;
    set->stalled = bad;
    e.what = bad ? SL__RNODE_STALLED : SL__RNODE_ANSWERS;
    e.why = e.why != NULL ? e.why : "";
    e.say = sl__rnode_shared_edge(set->shared, "stalled", bad, &e.lasted_ms);
    report(set, &e);
}

unsigned sl__rnode_read(struct sl__rnode_set *set, struct sl__rnode_pub *out, unsigned max)
{
    unsigned n;

    uv_mutex_lock(&set->lock);
    n = set->n < max ? set->n : max;
    memcpy(out, set->pub, sizeof(out[0]) * n);
    uv_mutex_unlock(&set->lock);
    return n;
}

unsigned sl__rnode_sum_add(struct sl__rnode_set *set, struct sl__rnode_sum *out, unsigned m,
                           unsigned max)
{
    uv_mutex_lock(&set->lock);
    for (unsigned k = 0; k < set->n; k++) {
        const struct sl__rnode_pub *p = &set->pub[k];
        unsigned j = 0;
        while (j < m && strcmp(out[j].addr, p->addr) != 0)
            j++;
        if (j == m && m == max)
            continue;
        if (j == m) {
            memset(&out[m], 0, sizeof(out[m]));
            snprintf(out[m].addr, sizeof(out[m].addr), "%s", p->addr);
            m++;
        }
        out[j].owners++;
        out[j].up += p->ready > 0 && !p->held;
        out[j].held += p->held;
        out[j].ready += p->ready;
        out[j].conns += p->conns;
        out[j].serving = out[j].serving || p->serving;
    }
    uv_mutex_unlock(&set->lock);
    return m;
}
