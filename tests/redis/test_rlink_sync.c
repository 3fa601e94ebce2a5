/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_rlink_sync.c - the blocking Redis link (store/redis/link/
 * rlink_sync.c) against real redis-servers: commands and replies in
 * clear text, AUTH (accepted, refused) and SELECT, a port where nothing
 * listens and one where nothing answers, and TLS with a client certificate
 * (accepted), without one (refused by the server) and with a CA that did
 * not sign the server's certificate (refused by the link). The
 * certificates are made by the openssl command in a temporary directory
 * (tls_pki.h).
 *
 * The rules sync's blocking calls (rules_sync.c), which are on this link,
 * push and pull over TLS too. It does not test the asynchronous link
 * (rlink.h's sl__rlink_*).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "redis_server.h"
#include "tls_pki.h"
#include "rlink.h"
#include "rules_sync.h"
#include "sluice.h"

#define TIMEOUT_MS 2000

static struct rs_server plain, secret, tls;
static char dir[512];

static int setup(void **state)
{
    (void)state;
    if (tls_pki_make(dir, sizeof(dir)) != 0)
        return -1;
    if (rs_start(&plain) != 0 || rs_start_args(&secret, "--requirepass", "s3cret") != 0)
        return -1;
    tls.tls_dir = dir;
    return rs_start(&tls);
}

static int teardown(void **state)
{
    (void)state;
    rs_stop(&plain);
    rs_stop(&secret);
    rs_stop(&tls);
    tls_pki_remove(dir);
    return 0;
}

/* One command (its words separated by spaces) on s: the reply. */
static redisReply *cmd(struct sl__rlink_sync *s, const char *line, char *err, size_t cap)
{
    char buf[256], *save = NULL;
    const char *argv[8];
    size_t lens[8];
    int argc = 0;

    snprintf(buf, sizeof(buf), "%s", line);
    for (char *w = strtok_r(buf, " ", &save); w != NULL && argc < 8;
         w = strtok_r(NULL, " ", &save)) {
        argv[argc] = w;
        lens[argc++] = strlen(w);
    }
    return sl__rlink_sync_argv(s, argc, argv, lens, err, cap);
}

/* The command's reply is a string or status equal to `want`. */
static void expect(struct sl__rlink_sync *s, const char *line, const char *want)
{
    char err[256];
    redisReply *r = cmd(s, line, err, sizeof(err));

    if (r == NULL)
        fail_msg("%s: %s", line, err);
    assert_true(r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING);
    assert_string_equal(r->str, want);
    freeReplyObject(r);
}

/* PING, SET, GET and a binary-safe value, then an error reply (a reply,
 * not a broken link). */
static void exercise(struct sl__rlink_sync *s)
{
    const char *argv[3] = {"SET", "bin", "a\0b"};
    size_t lens[3] = {3, 3, 3};
    char err[256];
    redisReply *r;

    expect(s, "PING", "PONG");
    expect(s, "SET k hello", "OK");
    expect(s, "GET k", "hello");
    r = sl__rlink_sync_argv(s, 3, argv, lens, err, sizeof(err));
    assert_non_null(r);
    freeReplyObject(r);
    argv[0] = "GET";
    r = sl__rlink_sync_argv(s, 2, argv, lens, err, sizeof(err));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, 3);
    assert_memory_equal(r->str, "a\0b", 3);
    freeReplyObject(r);
    r = cmd(s, "NOSUCHCOMMAND x", err, sizeof(err));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    expect(s, "PING", "PONG");
}

static void test_clear_text_commands(void **state)
{
    struct sl__rlink_conf c = {.connect_timeout_ms = TIMEOUT_MS};
    char err[256];
    struct sl__rlink_sync *s;

    (void)state;
    s = sl__rlink_sync_open(&c, "127.0.0.1", plain.port, TIMEOUT_MS, err, sizeof(err));
    if (s == NULL)
        fail_msg("%s", err);
    exercise(s);
    sl__rlink_sync_close(s);
    /* a name, resolved */
    s = sl__rlink_sync_open(&c, "localhost", plain.port, TIMEOUT_MS, err, sizeof(err));
    if (s == NULL)
        fail_msg("%s", err);
    expect(s, "GET k", "hello");
    sl__rlink_sync_close(s);
}

static void test_select_db(void **state)
{
    struct sl__rlink_conf c = {.db = 3};
    char err[256];
    struct sl__rlink_sync *s, *zero;
    redisReply *r;

    (void)state;
    s = sl__rlink_sync_open(&c, "127.0.0.1", plain.port, TIMEOUT_MS, err, sizeof(err));
    if (s == NULL)
        fail_msg("%s", err);
    expect(s, "SET only_in_3 yes", "OK");
    sl__rlink_sync_close(s);
    c.db = 0;
    zero = sl__rlink_sync_open(&c, "127.0.0.1", plain.port, TIMEOUT_MS, err, sizeof(err));
    assert_non_null(zero);
    r = cmd(zero, "GET only_in_3", err, sizeof(err));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    sl__rlink_sync_close(zero);
    /* a database the server does not have */
    c.db = 99999;
    s = sl__rlink_sync_open(&c, "127.0.0.1", plain.port, TIMEOUT_MS, err, sizeof(err));
    assert_null(s);
    assert_non_null(strstr(err, "SELECT refused: ERR"));
}

static void test_auth(void **state)
{
    struct sl__rlink_conf c = {.password = "s3cret"};
    char err[256], where[64];
    struct sl__rlink_sync *s;

    (void)state;
    s = sl__rlink_sync_open(&c, "127.0.0.1", secret.port, TIMEOUT_MS, err, sizeof(err));
    if (s == NULL)
        fail_msg("%s", err);
    expect(s, "PING", "PONG");
    sl__rlink_sync_close(s);
    /* user and password */
    c.user = "default";
    s = sl__rlink_sync_open(&c, "127.0.0.1", secret.port, TIMEOUT_MS, err, sizeof(err));
    if (s == NULL)
        fail_msg("%s", err);
    sl__rlink_sync_close(s);
    /* refused, with the server's words */
    c.user = NULL;
    c.password = "wrong";
    s = sl__rlink_sync_open(&c, "127.0.0.1", secret.port, TIMEOUT_MS, err, sizeof(err));
    assert_null(s);
    snprintf(where, sizeof(where), "redis 127.0.0.1:%d: AUTH refused: WRONGPASS", secret.port);
    if (strncmp(err, where, strlen(where)) != 0)
        fail_msg("%s", err);
    /* no password where one is required: the first command says so */
    c.password = "";
    s = sl__rlink_sync_open(&c, "127.0.0.1", secret.port, TIMEOUT_MS, err, sizeof(err));
    assert_non_null(s);
    redisReply *r = cmd(s, "GET k", err, sizeof(err));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "NOAUTH"));
    freeReplyObject(r);
    sl__rlink_sync_close(s);
}

static void test_nothing_listens(void **state)
{
    struct sl__rlink_conf c = {0};
    char err[256];
    int port = rs_free_port();

    (void)state;
    assert_null(sl__rlink_sync_open(&c, "127.0.0.1", port, TIMEOUT_MS, err, sizeof(err)));
    assert_non_null(strstr(err, "connect: Connection refused"));
    assert_null(
        sl__rlink_sync_open(&c, "no-such-host.invalid", 6379, TIMEOUT_MS, err, sizeof(err)));
    assert_non_null(strstr(err, "cannot resolve the name"));
}

/* A socket that listens and never accepts: the kernel completes the TCP
 * handshake, nothing ever answers. */
static void test_nothing_answers(void **state)
{
    struct sl__rlink_conf c = {.password = "x"};
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char err[256];
    struct sl__rlink_sync *s;

    (void)state;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    /* AUTH is not answered: the open fails at its timeout */
    assert_null(sl__rlink_sync_open(&c, "127.0.0.1", ntohs(a.sin_port), 200, err, sizeof(err)));
    assert_non_null(strstr(err, "AUTH: no answer within 200 ms"));
    /* no AUTH: the command is not answered */
    c.password = NULL;
    s = sl__rlink_sync_open(&c, "127.0.0.1", ntohs(a.sin_port), 200, err, sizeof(err));
    assert_non_null(s);
    assert_null(cmd(s, "PING", err, sizeof(err)));
    assert_non_null(strstr(err, "PING: no answer within 200 ms"));
    /* the link is broken now: no reply could be taken for the next one's */
    assert_null(cmd(s, "PING", err, sizeof(err)));
    assert_non_null(strstr(err, "broken"));
    sl__rlink_sync_close(s);
    close(fd);
}

/* TLS settings of the test's files ("" for none); *t built from them. */
static void tls_of(struct sl__rlink_tls *t, const char *ca, const char *cert, const char *key)
{
    struct sl__redis_tls set = {.on = true, .verify = true};

    snprintf(set.ca_file, sizeof(set.ca_file), "%s/%s", dir, ca);
    if (cert[0] != '\0') {
        snprintf(set.cert_file, sizeof(set.cert_file), "%s/%s", dir, cert);
        snprintf(set.key_file, sizeof(set.key_file), "%s/%s", dir, key);
    }
    if (sl__rlink_tls_init(t, &set) != SL_OK)
        fail_msg("%s", t->why);
}

static void test_tls_with_client_certificate(void **state)
{
    struct sl__rlink_tls t;
    struct sl__rlink_conf c = {0};
    char err[256];
    struct sl__rlink_sync *s;

    (void)state;
    tls_of(&t, "ca.pem", "client.pem", "client.key");
    c.tls = &t;
    s = sl__rlink_sync_open(&c, "127.0.0.1", tls.port, TIMEOUT_MS, err, sizeof(err));
    if (s == NULL)
        fail_msg("%s", err);
    exercise(s);
    sl__rlink_sync_close(s);
    sl__rlink_tls_close(&t);
}

static void test_tls_without_client_certificate(void **state)
{
    struct sl__rlink_tls t;
    struct sl__rlink_conf c = {0};
    char err[256];

    (void)state;
    tls_of(&t, "ca.pem", "", "");
    c.tls = &t;
    assert_null(sl__rlink_sync_open(&c, "127.0.0.1", tls.port, TIMEOUT_MS, err, sizeof(err)));
    if (strstr(err, "TLS") == NULL)
        fail_msg("%s", err);
    sl__rlink_tls_close(&t);
}

static void test_tls_wrong_ca(void **state)
{
    struct sl__rlink_tls t;
    struct sl__rlink_conf c = {0};
    char err[256], want[128];

    (void)state;
    tls_of(&t, "other_ca.pem", "client.pem", "client.key");
    c.tls = &t;
    assert_null(sl__rlink_sync_open(&c, "127.0.0.1", tls.port, TIMEOUT_MS, err, sizeof(err)));
    snprintf(want, sizeof(want),
             "redis 127.0.0.1:%d: TLS handshake failed: certificate not trusted", tls.port);
    assert_string_equal(err, want);
    sl__rlink_tls_close(&t);
}

/* Clear text to a TLS port: the server closes, the link says so. */
static void test_clear_text_to_tls(void **state)
{
    struct sl__rlink_conf c = {0};
    char err[256];
    struct sl__rlink_sync *s;

    (void)state;
    s = sl__rlink_sync_open(&c, "127.0.0.1", tls.port, TIMEOUT_MS, err, sizeof(err));
    assert_non_null(s); /* nothing said before the first command */
    assert_null(cmd(s, "PING", err, sizeof(err)));
    sl__rlink_sync_close(s);
}

/* The rules sync's push and pull (rules_sync.c) over TLS; refused
 * without the client certificate, as unreachable. */
static void test_rules_sync_over_tls(void **state)
{
    static const char yaml[] = "domain: d1\n"
                               "descriptors:\n"
                               "  - key: user\n"
                               "    rate_limit: {unit: minute, requests_per_unit: 10}\n";
    struct sl__rsync_config c;
    struct sl__rsync_known k = {0};
    char db[1100];
    unsigned changed = 0;
    uint64_t v = 0;

    (void)state;
    sl__rsync_config_init(&c);
    snprintf(c.seeds[0].host, sizeof(c.seeds[0].host), "127.0.0.1");
    c.seeds[0].port = tls.port;
    c.n_seeds = 1;
    c.tls.on = c.tls.verify = true;
    snprintf(c.tls.ca_file, sizeof(c.tls.ca_file), "%s/ca.pem", dir);
    snprintf(c.tls.cert_file, sizeof(c.tls.cert_file), "%s/client.pem", dir);
    snprintf(c.tls.key_file, sizeof(c.tls.key_file), "%s/client.key", dir);
    snprintf(db, sizeof(db), "%s/rules.db", dir);
    assert_int_equal(sl__rsync_push(&c, "r1", yaml, strlen(yaml), &v), SL_OK);
    assert_true(v >= 1);
    assert_int_equal(sl__rsync_pull(&c, db, &k, &changed), SL_OK);
    assert_int_equal(changed, 1);
    sl__rsync_known_free(&k);
    c.tls.cert_file[0] = c.tls.key_file[0] = '\0';
    assert_int_equal(sl__rsync_push(&c, "r2", yaml, strlen(yaml), &v), SL_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clear_text_commands),
        cmocka_unit_test(test_select_db),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_nothing_listens),
        cmocka_unit_test(test_nothing_answers),
        cmocka_unit_test(test_tls_with_client_certificate),
        cmocka_unit_test(test_tls_without_client_certificate),
        cmocka_unit_test(test_tls_wrong_ca),
        cmocka_unit_test(test_clear_text_to_tls),
        cmocka_unit_test(test_rules_sync_over_tls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
