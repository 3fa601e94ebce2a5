/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rnode.c - the link's node health (store/redis/link/rnode.h)
 * without any Redis: the edges a node's noted states make (reached once,
 * down when none ready and one failed, back with how long), the process's
 * line said once although two owners (two workers' sets on one shared
 * table) see the same outage, a forgotten address, the owner-wide stall,
 * and the published snapshot (only what was published, summed by address
 * over the owners).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rnode.h"

#define MAX_EDGES 32

struct owner {
    struct sl__rnode_set set;
    unsigned n;
    struct sl__rnode_edge e[MAX_EDGES];
    char addr[MAX_EDGES][SL__RNODE_ADDR_MAX];
    char why[MAX_EDGES][64];
};

static void on_edge(void *arg, const struct sl__rnode_edge *e)
{
    struct owner *o = arg;

    assert_true(o->n < MAX_EDGES);
    o->e[o->n] = *e;
    strcpy(o->addr[o->n], e->addr); /* borrowed for the callback only */
    strcpy(o->why[o->n], e->why);
    o->n++;
}

static const struct sl__rnode_events events = {.edge = on_edge};

static void owner_init(struct owner *o, struct sl__rnode_shared *sh)
{
    memset(o, 0, sizeof(*o));
    assert_int_equal(sl__rnode_set_init(&o->set, sh, &events, o), 0);
}

/* Each test's process: one shared table, two workers' owners on it. */
static struct sl__rnode_shared *sh;
static struct owner a, b;

static int setup(void **state)
{
    (void)state;
    if ((sh = sl__rnode_shared_new()) == NULL)
        return -1;
    owner_init(&a, sh);
    owner_init(&b, sh);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl__rnode_set_close(&a.set);
    sl__rnode_set_close(&b.set);
    sl__rnode_shared_free(sh);
    return 0;
}

/* Node k at addr with `ready` of 2 links ready, `failed` one failed. */
static void note(struct owner *o, unsigned k, const char *addr, unsigned ready, bool failed)
{
    struct sl__rnode_state s = {.addr = addr,
                                .ready = ready,
                                .conns = 2,
                                .failed = failed,
                                .why = failed ? "connection refused" : "",
                                .serving = true,
                                .edges = true};

    sl__rnode_note(&o->set, k, &s);
}

static void assert_edge(const struct owner *o, unsigned i, enum sl__rnode_what what, bool say,
                        const char *addr)
{
    assert_true(i < o->n);
    assert_int_equal(o->e[i].what, what);
    assert_int_equal(o->e[i].say, say);
    assert_string_equal(o->addr[i], addr);
}

/* One owner: reached once, down once (with why), back once. */
static void edges_of_one_node(void **state)
{
    (void)state;
    note(&a, 0, "10.0.0.1:6379", 0, false); /* connecting: no edge */
    assert_int_equal(a.n, 0);
    note(&a, 0, "10.0.0.1:6379", 1, false);
    note(&a, 0, "10.0.0.1:6379", 2, false); /* more ready: no edge */
    assert_int_equal(a.n, 1);
    assert_edge(&a, 0, SL__RNODE_REACHED, true, "10.0.0.1:6379");
    note(&a, 0, "10.0.0.1:6379", 0, false); /* none ready, none failed: not down */
    assert_int_equal(a.n, 1);
    note(&a, 0, "10.0.0.1:6379", 0, true);
    note(&a, 0, "10.0.0.1:6379", 0, true); /* still down: no second edge */
    assert_int_equal(a.n, 2);
    assert_edge(&a, 1, SL__RNODE_DOWN, true, "10.0.0.1:6379");
    assert_string_equal(a.why[1], "connection refused");
    note(&a, 0, "10.0.0.1:6379", 1, false);
    assert_int_equal(a.n, 3);
    assert_edge(&a, 2, SL__RNODE_BACK, true, "10.0.0.1:6379");
    assert_true(a.e[2].lasted_ms >= 0);
    note(&a, 0, "10.0.0.1:6379", 0, true); /* down again: said again */
    assert_int_equal(a.n, 4);
    assert_edge(&a, 3, SL__RNODE_DOWN, true, "10.0.0.1:6379");
}

/* Two owners on one shared table: each is told its edges, the line is
 * due once: the first to see it down, the last to see it back. */
static void once_per_process(void **state)
{

    (void)state;
    note(&a, 0, "10.0.0.1:6379", 1, false);
    note(&b, 0, "10.0.0.1:6379", 1, false);
    assert_edge(&a, 0, SL__RNODE_REACHED, true, "10.0.0.1:6379");
    assert_edge(&b, 0, SL__RNODE_REACHED, false, "10.0.0.1:6379");
    note(&a, 0, "10.0.0.1:6379", 0, true);
    note(&b, 0, "10.0.0.1:6379", 0, true);
    assert_edge(&a, 1, SL__RNODE_DOWN, true, "10.0.0.1:6379");
    assert_edge(&b, 1, SL__RNODE_DOWN, false, "10.0.0.1:6379");
    note(&b, 0, "10.0.0.1:6379", 2, false); /* b first back: a still sees it down */
    assert_edge(&b, 2, SL__RNODE_BACK, false, "10.0.0.1:6379");
    note(&a, 0, "10.0.0.1:6379", 2, false);
    assert_edge(&a, 2, SL__RNODE_BACK, true, "10.0.0.1:6379");
    /* another node of the same owners counts on its own */
    note(&b, 1, "10.0.0.2:6379", 0, true);
    assert_edge(&b, 3, SL__RNODE_DOWN, true, "10.0.0.2:6379");
    /* a separate table (another configuration) says its own lines */
    {
        struct sl__rnode_shared *other = sl__rnode_shared_new();
        struct owner c;
        owner_init(&c, other);
        note(&c, 0, "10.0.0.1:6379", 1, false);
        assert_edge(&c, 0, SL__RNODE_REACHED, true, "10.0.0.1:6379");
        sl__rnode_set_close(&c.set);
        sl__rnode_shared_free(other);
    }
}

/* A node whose address changes (Sentinel's new master): its being down is
 * withdrawn without an edge; the new address is reached anew, and the old
 * one, down for nobody now, is said again when it goes down again. */
static void forget_address(void **state)
{

    (void)state;
    note(&a, 0, "10.0.0.1:6379", 1, false);
    note(&a, 0, "10.0.0.1:6379", 0, true);
    assert_int_equal(a.n, 2);
    sl__rnode_forget(&a.set, 0);
    assert_int_equal(a.n, 2);
    note(&a, 0, "10.0.0.9:6379", 1, false);
    assert_int_equal(a.n, 3);
    assert_edge(&a, 2, SL__RNODE_REACHED, true, "10.0.0.9:6379");
    note(&b, 0, "10.0.0.1:6379", 0, true); /* the old master, for another worker */
    assert_edge(&b, 0, SL__RNODE_DOWN, true, "10.0.0.1:6379");
    /* a node whose edges do not count (a seed) makes none */
    {
        struct sl__rnode_state s = {.addr = "10.0.0.3:6379", .conns = 1, .failed = true};
        sl__rnode_note(&a.set, 2, &s);
        assert_int_equal(a.n, 3);
    }
}

/* The owner-wide stall: an edge on each change only, the line once per
 * process; the one-off conditions of the shared table. */
static void stall_and_conditions(void **state)
{
    struct sl__rnode_edge at = {.node = 0, .addr = "10.0.0.1:6379", .why = "does not answer"};
    int64_t lasted;

    (void)state;
    sl__rnode_stall(&a.set, false, &at); /* not stalled: no change */
    assert_int_equal(a.n, 0);
    sl__rnode_stall(&a.set, true, &at);
    sl__rnode_stall(&a.set, true, &at);
    sl__rnode_stall(&b.set, true, &at);
    assert_int_equal(a.n, 1);
    assert_edge(&a, 0, SL__RNODE_STALLED, true, "10.0.0.1:6379");
    assert_string_equal(a.why[0], "does not answer");
    assert_edge(&b, 0, SL__RNODE_STALLED, false, "10.0.0.1:6379");
    sl__rnode_stall(&a.set, false, &at);
    sl__rnode_stall(&b.set, false, &at);
    assert_edge(&a, 1, SL__RNODE_ANSWERS, false, "10.0.0.1:6379");
    assert_edge(&b, 1, SL__RNODE_ANSWERS, true, "10.0.0.1:6379");
    /* the table itself, as owners use it for their own conditions */
    assert_true(sl__rnode_shared_edge(sh, "auth refused", true, &lasted));
    assert_false(sl__rnode_shared_edge(sh, "auth refused", true, &lasted));
    sl__rnode_shared_clear(sh, "auth refused");
    assert_true(sl__rnode_shared_edge(sh, "auth refused", true, &lasted));
}

/* Other threads read only what was published, summed by address. */
static void snapshot(void **state)
{
    struct sl__rnode_pub p[4];
    struct sl__rnode_sum sum[4];
    struct sl__rnode_state held = {
        .addr = "10.0.0.2:6379", .ready = 2, .conns = 2, .serving = true, .held = true};
    unsigned m;

    (void)state;
    note(&a, 0, "10.0.0.1:6379", 2, false);
    assert_int_equal(sl__rnode_read(&a.set, p, 4), 0); /* noted, not published */
    sl__rnode_publish(&a.set, 1);
    assert_int_equal(sl__rnode_read(&a.set, p, 4), 1);
    assert_string_equal(p[0].addr, "10.0.0.1:6379");
    assert_int_equal(p[0].ready, 2);
    assert_int_equal(p[0].conns, 2);
    assert_false(p[0].down);
    note(&a, 0, "10.0.0.1:6379", 0, true);
    assert_int_equal(sl__rnode_read(&a.set, p, 4), 1);
    assert_int_equal(p[0].ready, 2); /* still the published one */
    sl__rnode_publish(&a.set, 1);
    sl__rnode_read(&a.set, p, 4);
    assert_true(p[0].down);
    note(&b, 0, "10.0.0.1:6379", 1, false);
    sl__rnode_note(&b.set, 1, &held);
    sl__rnode_publish(&b.set, 2);
    m = sl__rnode_sum_add(&a.set, sum, 0, 4);
    m = sl__rnode_sum_add(&b.set, sum, m, 4);
    assert_int_equal(m, 2);
    assert_string_equal(sum[0].addr, "10.0.0.1:6379");
    assert_int_equal(sum[0].owners, 2);
    assert_int_equal(sum[0].up, 1); /* a's is down */
    assert_int_equal(sum[0].ready, 1);
    assert_int_equal(sum[0].conns, 4);
    assert_string_equal(sum[1].addr, "10.0.0.2:6379");
    assert_int_equal(sum[1].up, 0); /* ready but held */
    assert_int_equal(sum[1].held, 1);
    assert_int_equal(sl__rnode_sum_add(&b.set, sum, 0, 1), 1); /* max: the first only */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(edges_of_one_node, setup, teardown),
        cmocka_unit_test_setup_teardown(once_per_process, setup, teardown),
        cmocka_unit_test_setup_teardown(forget_address, setup, teardown),
        cmocka_unit_test_setup_teardown(stall_and_conditions, setup, teardown),
        cmocka_unit_test_setup_teardown(snapshot, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
