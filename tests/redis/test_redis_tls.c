/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_redis_tls.c - the asynchronous Redis store over TLS
 * (store.redis.tls, store/redis/link/) against a real redis-server that
 * serves only TLS and requires a client certificate (redis_server.h's
 * tls_dir, certificates made by tls_pki.c with the openssl command), whose
 * only account for the store is an ACL user limited to what the store
 * sends (the line of docs/distributed.md "TLS to Redis"; the default user
 * is off). What it shows:
 *   - the harness: the server does not answer clear text on its port,
 *     and redis-cli with a certificate another CA signed is refused;
 *   - with every engine (function, script; the module when
 *     $SL_REDIS_MODULE is set: its run of this test), the store gets
 *     ready over TLS as the ACL user, uses that engine, and decides a
 *     limit exactly (allow, then deny, by its state);
 *   - without a client certificate, with a CA that did not sign the
 *     server's certificate, or with a server_name the certificate does not
 *     carry, the store never gets ready and the domains' failure policies
 *     answer; server_name localhost (a DNS SAN of the certificate) and
 *     verify false (whatever the CA) are accepted;
 *   - a client certificate the server refuses, replaced on disk by a good
 *     one: the same store gets ready without being made again.
 *
 * The loop is driven here, as in test_redis_store.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include "redis.h"
#include "redis_server.h"
#include "store_wait.h"
#include "tls_pki.h"

#define S          INT64_C(1000000000)
#define T0_NS      INT64_C(1750000000000000000)
#define TIMEOUT_MS 200

/* The ACL user of docs/distributed.md "TLS to Redis", redis_tls.py's
 * SLUICE_ACL (test_daemon_redis_tls.py checks the docs give that one);
 * with the module, its commands too, which Redis knows only once it is
 * loaded. */
#define SLUICE_ACL                                                                                 \
    "user sluice on >sluice-pw resetkeys ~sluice:* ~sluice{* resetchannels &sluice:* -@all "       \
    "+evalsha +script|load +fcall +function|load +function|list +eval +get +mget +set +del "       \
    "+publish +time +hset +hincrby +incrby +pexpire +subscribe +hgetall +role +cluster|slots "     \
    "+asking"
#define MODULE_ACL                                                                                 \
    " +sluice.version +sluice.check +sluice.peek +sluice.reset +sluice.refund +sluice.release"

static char pki[256];
static char aclfile[320];
static const char *extra[3];
static struct rs_server server;
static uv_loop_t loop;
static uv_timer_t tick;
static sl_limiter *local;
static unsigned key_no;

static const char *file(const char *name)
{
    static char bufs[8][320];
    static unsigned next;
    char *b = bufs[next++ % 8];

    return tls_pki_path(pki, name, b, sizeof(bufs[0]));
}

/* The store's configuration: TLS with the CA and the client certificate
 * of the test PKI, as the ACL user. */
static void config(struct sl__redis_config *c, enum sl__redis_engine engine)
{
    const char *why = NULL;

    sl__redis_config_init(c);
    c->port = server.port;
    c->engine = engine;
    c->timeout_ms = TIMEOUT_MS;
    c->backoff_max_ms = 200;
    c->opts.slack_ms = 600000;
    c->policy = SL__POLICY_LOCAL;
    memcpy(c->domains[0].domain, "fail-open", sizeof("fail-open"));
    c->domains[0].policy = SL__POLICY_ALLOW;
    memcpy(c->domains[1].domain, "fail-closed", sizeof("fail-closed"));
    c->domains[1].policy = SL__POLICY_DENY;
    c->n_domains = 2;
    memcpy(c->user, "sluice", sizeof("sluice"));
    memcpy(c->password, "sluice-pw", sizeof("sluice-pw"));
    c->tls.on = true;
    assert_int_equal(sl__redis_config_set(c, "store.redis.tls.ca_file", file("ca.pem"), &why),
                     SL_OK);
    assert_int_equal(sl__redis_config_set(c, "store.redis.tls.cert_file", file("client.pem"), &why),
                     SL_OK);
    assert_int_equal(sl__redis_config_set(c, "store.redis.tls.key_file", file("client.key"), &why),
                     SL_OK);
}

static void set(struct sl__redis_config *c, const char *key, const char *value)
{
    const char *why = NULL;

    assert_int_equal(sl__redis_config_set(c, key, value, &why), SL_OK);
}

static bool ready_within(struct sl__store *s, uint64_t max_ms)
{
    uv_update_time(&loop);
    for (uint64_t end = uv_now(&loop) + max_ms; !sl__store_redis_ready(s) && uv_now(&loop) < end;)
        uv_run(&loop, UV_RUN_ONCE);
    return sl__store_redis_ready(s);
}

static struct sl__store *store_of(const struct sl__redis_config *c)
{
    struct sl__store *s = NULL;

    assert_int_equal(sl__store_redis_new(&loop, c, local, &s), SL_OK);
    return s;
}

/* One descriptor with one fixed_window limit of `requests` an hour, its own key. */
struct one {
    struct sl_limit l;
    struct sl_match m;
    struct sl_entry e;
    struct sl_descriptor d;
    struct sl_request req;
};

static void one_init(struct one *o, const char *domain, uint64_t requests)
{
    memset(o, 0, sizeof(*o));
    sl_limit_init(&o->l);
    o->l.algo = SL_ALGO_FIXED_WINDOW;
    o->l.requests = requests;
    o->l.period_ns = 3600 * S;
    assert_int_equal(sl_limit_validate(&o->l, NULL), SL_OK);
    sl_limit_finish(&o->l);
    o->m.limits[0] = &o->l;
    o->m.n_limits = 1;
    o->m.key_len = (size_t)snprintf(o->m.key, sizeof(o->m.key), "tls-test-%u", ++key_no);
    o->e.key = (struct sl_str){"k", 1};
    o->e.value = (struct sl_str){o->m.key, o->m.key_len};
    o->d.entries = &o->e;
    o->d.n_entries = 1;
    o->d.hits = -1;
    o->req.domain = (struct sl_str){domain, strlen(domain)};
    o->req.descriptors = &o->d;
    o->req.n_descriptors = 1;
    o->req.hits = 1;
    o->req.now_ns = T0_NS;
}

static struct answer check_now(struct sl__store *s, struct one *o)
{
    struct sl__store_req q = {.req = &o->req, .m = &o->m, .n = 1};
    struct answer a;

    memset(&a, 0, sizeof(a));
    assert_int_equal(s->ops->check(s, &q, sw_on_answer, &a), SL_OK);
    sw_spin(&loop, &a.done, 2000);
    assert_true(a.done);
    return a;
}

static struct sl__redis_stats stats_of(struct sl__store *s)
{
    struct sl__redis_stats st;

    sl__store_redis_stats(s, &st);
    return st;
}

/* Refused over TLS: never ready, and the failure policies answer. */
static void assert_refused(const struct sl__redis_config *c)
{
    struct sl__store *s = store_of(c);
    struct one o;
    struct answer a;

    assert_false(ready_within(s, 1500));
    one_init(&o, "fail-closed", 100);
    a = check_now(s, &o);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.by, SL__BY_DENY);
    one_init(&o, "fail-open", 100);
    a = check_now(s, &o);
    assert_int_equal(a.by, SL__BY_ALLOW);
    assert_int_equal(a.res.verdict, SL_ALLOW);
    sl__store_free(s);
}

/* Accepted over TLS: ready, and Redis decides a limit of one exactly. */
static void assert_decides(struct sl__store *s)
{
    struct one o;
    struct answer a;

    one_init(&o, "d", 1);
    a = check_now(s, &o);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.by, SL__BY_STATE);
    assert_int_equal(a.res.verdict, SL_ALLOW);
    a = check_now(s, &o);
    assert_int_equal(a.by, SL__BY_STATE);
    assert_int_equal(a.res.verdict, SL_DENY);
}

static int setup(void **state)
{
    struct sl_limiter_config lc;
    FILE *f;

    (void)state;
    if (tls_pki_make(pki, sizeof(pki)) != 0)
        return -1;
    tls_pki_path(pki, "users.acl", aclfile, sizeof(aclfile));
    f = fopen(aclfile, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "user default off\nuser admin on >admin-pw ~* &* +@all\n%s%s\n", SLUICE_ACL,
            getenv("SL_REDIS_MODULE") != NULL ? MODULE_ACL : "");
    fclose(f);
    extra[0] = "--aclfile";
    extra[1] = aclfile;
    server.extra = extra;
    server.tls_dir = pki;
    if (rs_start(&server) != 0)
        return -1;
    sw_loop_init(&loop, &tick);
    sl_limiter_config_init(&lc);
    lc.table.max_bytes = 16u << 20;
    return sl_limiter_new(&lc, &local) == SL_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
    sl_limiter_free(local);
    rs_stop(&server);
    tls_pki_remove(pki);
    return 0;
}

/* redis-cli's PING with these TLS arguments: answered? */
static bool cli_pong(const char *tls_args)
{
    char cmd[2048], out[128] = "";
    FILE *p;
    bool pong;

    snprintf(
        cmd, sizeof(cmd),
        "timeout 10 redis-cli --no-auth-warning %s --user admin --pass admin-pw -h 127.0.0.1 -p %d "
        "ping 2>/dev/null",
        tls_args, server.port);
    p = popen(cmd, "r");
    assert_non_null(p);
    pong = fgets(out, sizeof(out), p) != NULL && strncmp(out, "PONG", 4) == 0;
    pclose(p);
    return pong;
}

static void test_the_server_serves_only_tls(void **state)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", server.port, tv);
    redisReply *r = NULL;
    char args[1024];

    (void)state;
    if (c != NULL && c->err == 0) /* the TCP connection is accepted; clear text is not */
        r = redisCommand(c, "PING");
    assert_true(r == NULL || r->type != REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    snprintf(args, sizeof(args), "--tls --cacert %s --cert %s --key %s", file("ca.pem"),
             file("client.pem"), file("client.key"));
    assert_true(cli_pong(args));
    snprintf(args, sizeof(args), "--tls --cacert %s --cert %s --key %s", file("ca.pem"),
             file("stranger.pem"), file("stranger.key"));
    assert_false(cli_pong(args));
    snprintf(args, sizeof(args), "--tls --cacert %s", file("ca.pem"));
    assert_false(cli_pong(args)); /* no client certificate */
}

static void test_every_engine_decides_over_tls(void **state)
{
    static const enum sl__redis_engine engines[] = {SL__ENGINE_FUNCTION, SL__ENGINE_SCRIPT,
                                                    SL__ENGINE_MODULE};

    (void)state;
    for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
        struct sl__redis_config c;
        struct sl__store *s;

        if (engines[i] == SL__ENGINE_MODULE && getenv("SL_REDIS_MODULE") == NULL)
            continue; /* the module's run of this test covers it */
        config(&c, engines[i]);
        s = store_of(&c);
        assert_true(ready_within(s, 5000));
        assert_decides(s);
        assert_int_equal(stats_of(s).engine, engines[i]);
        assert_int_equal(stats_of(s).errors, 0);
        sl__store_free(s);
    }
}

static void test_refused_without_a_client_certificate(void **state)
{
    struct sl__redis_config c;

    (void)state;
    config(&c, SL__ENGINE_FUNCTION);
    c.tls.cert_file[0] = c.tls.key_file[0] = '\0';
    assert_refused(&c);
}

static void test_an_untrusted_server_is_refused(void **state)
{
    struct sl__redis_config c;
    struct sl__store *s;

    (void)state;
    config(&c, SL__ENGINE_FUNCTION);
    set(&c, "store.redis.tls.ca_file", file("other_ca.pem"));
    assert_refused(&c);
    config(&c, SL__ENGINE_FUNCTION);
    set(&c, "store.redis.tls.server_name", "redis.example.net");
    assert_refused(&c);
    /* the name the certificate carries; no check at all */
    config(&c, SL__ENGINE_FUNCTION);
    set(&c, "store.redis.tls.server_name", "localhost");
    s = store_of(&c);
    assert_true(ready_within(s, 5000));
    assert_decides(s);
    sl__store_free(s);
    config(&c, SL__ENGINE_FUNCTION);
    set(&c, "store.redis.tls.ca_file", file("other_ca.pem"));
    set(&c, "store.redis.tls.verify", "false");
    s = store_of(&c);
    assert_true(ready_within(s, 5000));
    assert_decides(s);
    sl__store_free(s);
}

/* cp src dst.new && mv dst.new dst: a rotation's rename. */
static void replace(const char *src, const char *dst)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "cp '%s' '%s.new' && mv '%s.new' '%s'", src, dst, dst, dst);
    assert_int_equal(system(cmd), 0);
}

static void test_a_rotated_client_certificate_is_used(void **state)
{
    struct sl__redis_config c;
    struct sl__store *s;
    char cert[320], key[320];

    (void)state;
    snprintf(cert, sizeof(cert), "%s", file("rotated.pem"));
    snprintf(key, sizeof(key), "%s", file("rotated.key"));
    replace(file("stranger.pem"), cert);
    replace(file("stranger.key"), key);
    config(&c, SL__ENGINE_FUNCTION);
    set(&c, "store.redis.tls.cert_file", cert);
    set(&c, "store.redis.tls.key_file", key);
    s = store_of(&c);
    assert_false(ready_within(s, 1500)); /* another CA signed it: refused */
    replace(file("client.pem"), cert);
    replace(file("client.key"), key);
    assert_true(ready_within(s, 5000)); /* the same store, the new certificate */
    assert_decides(s);
    sl__store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_server_serves_only_tls),
        cmocka_unit_test(test_every_engine_decides_over_tls),
        cmocka_unit_test(test_refused_without_a_client_certificate),
        cmocka_unit_test(test_an_untrusted_server_is_refused),
        cmocka_unit_test(test_a_rotated_client_certificate_is_used),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
