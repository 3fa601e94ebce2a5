/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rmaster.c - the links' Sentinel client (store/redis/link/rmaster.h)
 * against fake sentinels on the test's own loop, which answer the
 * question as each test sets them (a master, nil, or nothing at all) and
 * push +switch-master messages to their subscribers when told: a master
 * named by the answer and then by a switch, another master's switch
 * ignored, a refused, an ignorant and a silent sentinel passed over in
 * turn (with the notes an owner logs), the owner's request to ask again
 * heard (and folded within the gap), and the follower freed from inside
 * its own callback. Real sentinels and failovers are the integration
 * tests' (test_sentinel_daemon.py, test_daemon_hybrid.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rmaster.h"
#include "sluice.h"

/* ------------------------------------------------------------ fake sentinels */

enum fake_mode { ANSWER, NIL, SILENT };

struct fake {
    uv_tcp_t srv;
    int port;
    enum fake_mode mode;
    int master_port; /* what ANSWER names (127.0.0.1) */
    uv_stream_t *subs[8];
    int n_subs;
    struct fconn *conns[16]; /* open */
    int n_conns;
    int questions, subscribes;
};

struct fconn {
    uv_tcp_t h;
    struct fake *f;
    char buf[4096];
    size_t len;
};

static void on_write(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

static void send_str(uv_stream_t *s, const char *text)
{
    uv_write_t *w = malloc(sizeof(*w));
    size_t n = strlen(text);
    char *copy = malloc(n);
    uv_buf_t b;

    assert_non_null(w);
    assert_non_null(copy);
    memcpy(copy, text, n);
    w->data = copy;
    b = uv_buf_init(copy, (unsigned)n);
    if (uv_write(w, s, &b, 1, on_write) != 0)
        on_write(w, 0);
}

/* One command of `c`'s buffer, an array of bulk strings: its first two
 * words (upper case compared by the caller) and the bytes it took, or 0
 * while incomplete. */
static size_t parse_cmd(const char *b, size_t len, char w[2][64])
{
    size_t at = 0;
    long n;
    char *end;

    w[0][0] = w[1][0] = '\0';
    if (len < 4 || b[0] != '*' || memchr(b, '\n', len) == NULL)
        return 0;
    n = strtol(b + 1, &end, 10);
    at = (size_t)(strchr(b, '\n') - b) + 1;
    for (long i = 0; i < n; i++) {
        const char *nl;
        long bl;
        if (at >= len || b[at] != '$' || (nl = memchr(b + at, '\n', len - at)) == NULL)
            return 0;
        bl = strtol(b + at + 1, NULL, 10);
        at = (size_t)(nl - b) + 1;
        if (at + (size_t)bl + 2 > len)
            return 0;
        if (i < 2) {
            size_t k = (size_t)bl < 63 ? (size_t)bl : 63;
            memcpy(w[i], b + at, k);
            w[i][k] = '\0';
        }
        at += (size_t)bl + 2;
    }
    (void)end;
    return at;
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
    struct fconn *c = h->data;

    (void)want;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - c->len));
}

static void on_fclosed(uv_handle_t *h)
{
    struct fconn *c = h->data;
    struct fake *f = c->f;

    for (int i = 0; i < f->n_conns; i++)
        if (f->conns[i] == c)
            f->conns[i] = f->conns[--f->n_conns];
    free(c);
}

static void forget_sub(struct fake *f, uv_stream_t *s)
{
    for (int i = 0; i < f->n_subs; i++)
        if (f->subs[i] == s)
            f->subs[i] = f->subs[--f->n_subs];
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct fconn *c = s->data;
    struct fake *f = c->f;
    char w[2][64], reply[128];
    size_t used;

    (void)b;
    if (n < 0) {
        forget_sub(f, s);
        uv_close((uv_handle_t *)s, on_fclosed);
        return;
    }
    c->len += (size_t)n;
    while ((used = parse_cmd(c->buf, c->len, w)) > 0) {
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
        if (strcmp(w[0], "SENTINEL") == 0) {
            f->questions++;
            if (f->mode == ANSWER) {
                char port[8];
                snprintf(port, sizeof(port), "%d", f->master_port);
                snprintf(reply, sizeof(reply), "*2\r\n$9\r\n127.0.0.1\r\n$%zu\r\n%s\r\n",
                         strlen(port), port);
                send_str(s, reply);
            } else if (f->mode == NIL) {
                send_str(s, "*-1\r\n");
            }
        } else if (strcmp(w[0], "SUBSCRIBE") == 0) {
            f->subscribes++;
            if (f->mode != SILENT) {
                send_str(s, "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n");
                if (f->n_subs < 8)
                    f->subs[f->n_subs++] = s;
            }
        }
    }
}

static void on_conn(uv_stream_t *srv, int status)
{
    struct fake *f = srv->data;
    struct fconn *c;

    if (status != 0 || f->n_conns == 16 || (c = calloc(1, sizeof(*c))) == NULL)
        return;
    c->f = f;
    f->conns[f->n_conns++] = c;
    uv_tcp_init(srv->loop, &c->h);
    c->h.data = c;
    if (uv_accept(srv, (uv_stream_t *)&c->h) != 0) {
        uv_close((uv_handle_t *)&c->h, on_fclosed);
        return;
    }
    uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
}

static void fake_start(uv_loop_t *loop, struct fake *f, enum fake_mode mode, int master_port)
{
    struct sockaddr_in a;
    struct sockaddr_storage got;
    int len = sizeof(got);

    memset(f, 0, sizeof(*f));
    f->mode = mode;
    f->master_port = master_port;
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_init(loop, &f->srv);
    f->srv.data = f;
    assert_int_equal(uv_tcp_bind(&f->srv, (const struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&f->srv, 16, on_conn), 0);
    uv_tcp_getsockname(&f->srv, (struct sockaddr *)&got, &len);
    f->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
}

/* A +switch-master message to every subscriber of f. */
static void fake_switch(struct fake *f, const char *msg)
{
    char out[256];

    snprintf(out, sizeof(out), "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$%zu\r\n%s\r\n",
             strlen(msg), msg);
    for (int i = 0; i < f->n_subs; i++)
        send_str(f->subs[i], out);
}

/* Close f's listener and every connection it accepted. */
static void fake_stop(struct fake *f)
{
    uv_close((uv_handle_t *)&f->srv, NULL);
    f->n_subs = 0;
    for (int i = 0; i < f->n_conns; i++)
        if (!uv_is_closing((uv_handle_t *)&f->conns[i]->h))
            uv_close((uv_handle_t *)&f->conns[i]->h, on_fclosed);
}

/* A port nothing listens on (bound, then closed). */
static int closed_port(uv_loop_t *loop)
{
    struct fake f;
    int port;

    fake_start(loop, &f, SILENT, 0);
    port = f.port;
    uv_close((uv_handle_t *)&f.srv, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return port;
}

/* ------------------------------------------------------------ the owner */

struct owner {
    struct sl__rmaster *m;
    int named, last_port;
    unsigned last_via;
    int notes[5];
    unsigned note_at[5];
    int changes;
    bool free_on_name;
};

static void on_master(void *arg, const char *host, int port, unsigned via)
{
    struct owner *o = arg;

    assert_string_equal(host, "127.0.0.1");
    o->named++;
    o->last_port = port;
    o->last_via = via;
    if (o->free_on_name) {
        sl__rmaster_free(o->m);
        o->m = NULL;
    }
}

static void on_note(void *arg, enum sl__rmaster_note what, unsigned at, const char *text)
{
    struct owner *o = arg;

    assert_non_null(text);
    o->notes[what]++;
    o->note_at[what] = at;
}

static void on_changed(void *arg)
{
    ((struct owner *)arg)->changes++;
}

static const struct sl__rmaster_events events = {
    .master = on_master, .note = on_note, .changed = on_changed};

static void tick(uv_timer_t *t)
{
    (void)t;
}

/* Run the loop until *counter reaches `want` or about 5 s. */
static void run_until(uv_loop_t *loop, const int *counter, int want)
{
    uint64_t end = uv_hrtime() + 5000000000ull;
    uv_timer_t t;

    uv_timer_init(loop, &t);
    uv_timer_start(&t, tick, 5, 5);
    while (*counter < want && uv_hrtime() < end)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void run_ms(uv_loop_t *loop, int ms)
{
    uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000ull;
    uv_timer_t t;

    uv_timer_init(loop, &t);
    uv_timer_start(&t, tick, 5, 5);
    while (uv_hrtime() < end)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static struct sl__rmaster_conf conf_of(const int *ports, unsigned n,
                                       const struct sl__rlink_conf *lc)
{
    struct sl__rmaster_conf c = {0};

    for (unsigned i = 0; i < n; i++) {
        snprintf(c.addr[i].host, sizeof(c.addr[i].host), "127.0.0.1");
        c.addr[i].port = ports[i];
    }
    c.n = n;
    c.name = "mymaster";
    c.probe_ms = 150;
    c.gap_ms = 50;
    c.backoff_min_ms = 5;
    c.backoff_max_ms = 20;
    c.link = lc;
    return c;
}

struct env {
    uv_loop_t loop;
    struct sl__rlink_group *g;
    struct sl__rlink_conf lc;
};

static void env_open(struct env *e)
{
    memset(e, 0, sizeof(*e));
    assert_int_equal(uv_loop_init(&e->loop), 0);
    e->g = sl__rlink_group_new(&e->loop);
    assert_non_null(e->g);
    e->lc.connect_timeout_ms = 1000;
}

static void env_close(struct env *e)
{
    sl__rlink_group_free(e->g);
    for (int i = 0; i < 16; i++)
        uv_run(&e->loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&e->loop), 0); /* every handle closed */
}

/* ------------------------------------------------------------ tests */

static void test_named_then_switched(void **state)
{
    struct env e;
    struct fake f;
    struct owner o = {0};
    struct sl__rmaster_conf c;

    (void)state;
    env_open(&e);
    fake_start(&e.loop, &f, ANSWER, 7001);
    c = conf_of(&f.port, 1, &e.lc);
    o.m = sl__rmaster_new(&e.loop, e.g, &c, &events, &o);
    assert_non_null(o.m);
    assert_int_equal(o.named, 0); /* nothing from inside the call */

    run_until(&e.loop, &o.named, 1);
    assert_int_equal(o.last_port, 7001);
    assert_int_equal(o.last_via, 0);
    run_until(&e.loop, &o.notes[SL__RMASTER_FOLLOWING], 1);
    assert_true(sl__rmaster_subscribed(o.m));
    assert_false(sl__rmaster_failed(o.m));
    assert_true(o.changes > 0);

    /* the subscription is confirmed: a question follows it (what changed
     * before it); then a switch names the new master at once */
    run_until(&e.loop, &f.questions, 2);
    run_until(&e.loop, &o.named, 2);
    fake_switch(&f, "other 127.0.0.1 1 127.0.0.1 9999"); /* another master's: ignored */
    fake_switch(&f, "mymaster 127.0.0.1 7001 127.0.0.1 7002");
    run_until(&e.loop, &o.named, 3);
    assert_int_equal(o.last_port, 7002);
    run_ms(&e.loop, 30);
    assert_int_equal(o.named, 3);

    /* the owner asks again: one question, however often it asks in the gap */
    int before = f.questions;
    sl__rmaster_ask(o.m);
    sl__rmaster_ask(o.m);
    sl__rmaster_ask(o.m);
    run_ms(&e.loop, 200);
    assert_true(f.questions >= before + 1);
    assert_true(f.questions <= before + 2); /* at most one more after the gap */
    assert_int_equal(o.last_port, 7001);    /* what the fake answers */
    assert_int_equal(o.notes[SL__RMASTER_UNREACHABLE], 0);

    sl__rmaster_free(o.m);
    sl__rmaster_free(NULL);
    sl__rmaster_ask(NULL);
    fake_stop(&f);
    env_close(&e);
}

static void test_refused_ignorant_and_silent_passed_over(void **state)
{
    struct env e;
    struct fake nil, silent, good;
    struct owner o = {0};
    struct sl__rmaster_conf c;
    int ports[4];
    char at[80];

    (void)state;
    env_open(&e);
    ports[0] = closed_port(&e.loop);
    fake_start(&e.loop, &nil, NIL, 0);
    fake_start(&e.loop, &silent, SILENT, 0);
    fake_start(&e.loop, &good, ANSWER, 7100);
    ports[1] = nil.port;
    ports[2] = silent.port;
    ports[3] = good.port;
    c = conf_of(ports, 4, &e.lc);
    o.m = sl__rmaster_new(&e.loop, e.g, &c, &events, &o);
    assert_non_null(o.m);

    run_until(&e.loop, &o.named, 1);
    assert_int_equal(o.last_port, 7100);
    assert_int_equal(o.last_via, 3); /* the only one that names it */
    assert_true(nil.questions >= 1);
    assert_true(silent.questions >= 1);
    assert_true(sl__rmaster_failed(o.m));
    assert_true(o.notes[SL__RMASTER_NO_MASTER] >= 1);
    assert_int_equal(o.note_at[SL__RMASTER_NO_MASTER], 1);
    assert_true(o.notes[SL__RMASTER_UNREACHABLE] >= 1); /* the refused port, an edge */
    sl__rmaster_addr(o.m, 3, at, sizeof(at));
    snprintf(c.addr[0].host, sizeof(c.addr[0].host), "127.0.0.1:%d", good.port);
    assert_string_equal(at, c.addr[0].host);

    /* the subscriber too finds one that confirms (nil's does: it is only
     * ignorant of the name) */
    for (int i = 0; i < 40 && !sl__rmaster_subscribed(o.m); i++)
        run_ms(&e.loop, 25);
    assert_true(sl__rmaster_subscribed(o.m));
    assert_true(sl__rmaster_at(o.m) == 1 || sl__rmaster_at(o.m) == 3);

    sl__rmaster_free(o.m);
    fake_stop(&nil);
    fake_stop(&silent);
    fake_stop(&good);
    env_close(&e);
}

static void test_freed_inside_its_callback(void **state)
{
    struct env e;
    struct fake f;
    struct owner o = {.free_on_name = true};
    struct sl__rmaster_conf c;

    (void)state;
    env_open(&e);
    fake_start(&e.loop, &f, ANSWER, 7200);
    c = conf_of(&f.port, 1, &e.lc);
    o.m = sl__rmaster_new(&e.loop, e.g, &c, &events, &o);
    run_until(&e.loop, &o.named, 1);
    assert_null(o.m);
    fake_switch(&f, "mymaster 127.0.0.1 7200 127.0.0.1 7201");
    run_ms(&e.loop, 50);
    assert_int_equal(o.named, 1); /* nothing after the free */
    fake_stop(&f);
    env_close(&e);
}

static void test_refuses_no_sentinels(void **state)
{
    struct env e;
    struct owner o = {0};
    struct sl__rmaster_conf c;

    (void)state;
    env_open(&e);
    c = conf_of(NULL, 0, &e.lc);
    assert_null(sl__rmaster_new(&e.loop, e.g, &c, &events, &o));
    c.n = SL__RMASTER_MAX + 1;
    assert_null(sl__rmaster_new(&e.loop, e.g, &c, &events, &o));
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_named_then_switched),
        cmocka_unit_test(test_refused_ignorant_and_silent_passed_over),
        cmocka_unit_test(test_freed_inside_its_callback),
        cmocka_unit_test(test_refuses_no_sentinels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
