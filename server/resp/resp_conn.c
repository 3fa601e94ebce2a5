/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp_conn.c - the connection commands that Redis clients send on connect
 * or for housekeeping: PING, ECHO, HELLO, AUTH, CLIENT, SELECT, COMMAND,
 * INFO, CONFIG GET, QUIT. Only what redis-cli, redis-py, hiredis and
 * redis-benchmark need; it does not pretend to be a database (no keys, one
 * database, RESP2 only).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "guard.h"
#include "privilege.h"
#include "resp.h"
#include "resp_write.h"
#include "server-t.h"
#include "worker-t.h"

int sl__resp_ping(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                  struct sl__buf *out)
{
    if (cmd->argc > 2)
        sl__resp_w_error(out, "ERR wrong number of arguments for 'ping' command");
    else if (cmd->argc == 2)
        sl__resp_w_bulk(out, cmd->argv[1].p, cmd->argv[1].len);
    else
        sl__resp_w_simple(out, "PONG");
    return 0;
}

int sl__resp_echo(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                  struct sl__buf *out)
{
    sl__resp_w_bulk(out, cmd->argv[1].p, cmd->argv[1].len);
    return 0;
}

static void set_name(struct sl__resp_state *st, struct sl_str name)
{
    size_t n = name.len < sizeof(st->name) - 1 ? name.len : sizeof(st->name) - 1;
    memcpy(st->name, name.p, n);
    st->name[n] = '\0';
}

/* AUTH TOKEN or AUTH USER TOKEN (any user name): the admin token gives the
 * connection the admin privilege (privilege.h); nothing else is a password
 * here, so anything else is refused as Redis refuses a wrong password. */
static int auth(struct sl__conn *c, struct sl__resp_state *st, struct sl_str secret,
                struct sl__buf *out)
{
    const struct sl__config *cfg = &c->w->srv->cfg;
    int64_t wait_s;

    if (cfg->admin_token == NULL) {
        sl__resp_w_error(out, "ERR AUTH <password> called without any password configured for "
                              "the default user. Are you sure your configuration is correct?");
        return -1;
    }
    if ((wait_s = sl__guard_wait_s(c)) > 0) {
        st->admin = false;
        sl__resp_w_error(out,
                         "ERR too many wrong AUTH from this address (admin.max_failures): try "
                         "again in %lld s",
                         (long long)wait_s);
        return -1;
    }
    if (!sl__admin_token_equal(cfg, secret.p, secret.len)) {
        st->admin = false;
        sl__guard_failed(c);
        sl__resp_w_error(out, "WRONGPASS invalid username-password pair or user is disabled.");
        return -1;
    }
    st->admin = true;
    return 0;
}

/* HELLO [protover [AUTH user pass] [SETNAME name]]: RESP2 only. */
int sl__resp_hello(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                   struct sl__buf *out)
{
    size_t i = 2;

    if (cmd->argc >= 2 && !sl__resp_eq(cmd->argv[1], "2")) {
        sl__resp_w_error(out, "NOPROTO sorry, this protocol version is not supported");
        return 0;
    }
    while (i < cmd->argc) {
        if (sl__resp_eq(cmd->argv[i], "AUTH") && i + 2 < cmd->argc) {
            /* no users: the password is the admin token, or nothing */
            if (c->w->srv->cfg.admin_token != NULL && auth(c, st, cmd->argv[i + 2], out) != 0)
                return 0;
            i += 3;
        } else if (sl__resp_eq(cmd->argv[i], "SETNAME") && i + 1 < cmd->argc) {
            set_name(st, cmd->argv[i + 1]);
            i += 2;
        } else {
            sl__resp_w_error(out, "ERR Syntax error in HELLO option '%.*s'",
                             (int)(cmd->argv[i].len > 32 ? 32 : cmd->argv[i].len), cmd->argv[i].p);
            return 0;
        }
    }
    sl__resp_w_array(out, 14);
    sl__resp_w_cstr(out, "server");
    sl__resp_w_cstr(out, "sluice");
    sl__resp_w_cstr(out, "version");
    sl__resp_w_cstr(out, SLUICE_VERSION);
    sl__resp_w_cstr(out, "proto");
    sl__resp_w_int(out, 2);
    sl__resp_w_cstr(out, "id");
    sl__resp_w_int(out, (int64_t)st->id);
    sl__resp_w_cstr(out, "mode");
    sl__resp_w_cstr(out, "standalone");
    sl__resp_w_cstr(out, "role");
    sl__resp_w_cstr(out, "master");
    sl__resp_w_cstr(out, "modules");
    sl__resp_w_array(out, 0);
    return 0;
}

int sl__resp_auth(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                  struct sl__buf *out)
{
    if (cmd->argc > 3) {
        sl__resp_w_error(out, "ERR syntax error");
        return 0;
    }
    if (auth(c, st, cmd->argv[cmd->argc - 1], out) == 0)
        sl__resp_w_simple(out, "OK");
    return 0;
}

int sl__resp_client(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                    struct sl__buf *out)
{
    struct sl_str sub = cmd->argv[1];

    if (sl__resp_eq(sub, "SETNAME") && cmd->argc == 3) {
        set_name(st, cmd->argv[2]);
        sl__resp_w_simple(out, "OK");
    } else if (sl__resp_eq(sub, "GETNAME") && cmd->argc == 2) {
        if (st->name[0])
            sl__resp_w_cstr(out, st->name);
        else
            sl__resp_w_nil(out);
    } else if (sl__resp_eq(sub, "ID") && cmd->argc == 2) {
        sl__resp_w_int(out, (int64_t)st->id);
    } else if ((sl__resp_eq(sub, "SETINFO") && cmd->argc == 4) ||
               ((sl__resp_eq(sub, "NO-EVICT") || sl__resp_eq(sub, "NO-TOUCH")) && cmd->argc == 3)) {
        sl__resp_w_simple(out, "OK"); /* accepted and ignored: nothing to evict or touch */
    } else {
        sl__resp_w_error(out,
                         "ERR unknown subcommand or wrong number of arguments for '%.*s'. "
                         "Try CLIENT SETNAME|GETNAME|ID|SETINFO.",
                         (int)(sub.len > 32 ? 32 : sub.len), sub.p);
    }
    return 0;
}

int sl__resp_select(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                    struct sl__buf *out)
{
    if (sl__resp_eq(cmd->argv[1], "0"))
        sl__resp_w_simple(out, "OK");
    else
        sl__resp_w_error(out, "ERR DB index is out of range");
    return 0;
}

static void command_info(struct sl__buf *out, const struct sl__resp_command *k)
{
    char lower[32];
    size_t n = strlen(k->name), nflags = 1;

    for (size_t i = 0; i < n && i < sizeof(lower); i++)
        lower[i] = (char)(k->name[i] >= 'A' && k->name[i] <= 'Z' ? k->name[i] + 32 : k->name[i]);
    for (const char *f = k->flags; *f; f++)
        nflags += *f == ' ';
    sl__resp_w_array(out, 6);
    sl__resp_w_bulk(out, lower, n);
    sl__resp_w_int(out, k->arity);
    sl__resp_w_array(out, nflags);
    for (const char *f = k->flags; *f;) {
        const char *e = strchr(f, ' ');
        size_t len = e ? (size_t)(e - f) : strlen(f);
        sl__buf_append(out, "+", 1);
        sl__buf_append(out, f, len);
        sl__buf_append(out, "\r\n", 2);
        f += len + (e != NULL);
    }
    /* first key, last key, step: CL.THROTTLE's and DEL's key is argument 1 */
    bool keyed = strcmp(k->name, "CL.THROTTLE") == 0 || strcmp(k->name, "DEL") == 0;
    sl__resp_w_int(out, keyed);
    sl__resp_w_int(out, keyed);
    sl__resp_w_int(out, keyed);
}

/* COMMAND, COMMAND COUNT, COMMAND DOCS (empty: no docs served), COMMAND
 * INFO name... */
int sl__resp_command(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                     struct sl__buf *out)
{
    if (cmd->argc == 1) {
        sl__resp_w_array(out, sl__resp_ncommands());
        for (size_t i = 0; i < sl__resp_ncommands(); i++)
            command_info(out, &sl__resp_commands[i]);
    } else if (sl__resp_eq(cmd->argv[1], "COUNT")) {
        sl__resp_w_int(out, (int64_t)sl__resp_ncommands());
    } else if (sl__resp_eq(cmd->argv[1], "DOCS")) {
        sl__resp_w_array(out, 0);
    } else if (sl__resp_eq(cmd->argv[1], "INFO")) {
        sl__resp_w_array(out, cmd->argc - 2);
        for (size_t i = 2; i < cmd->argc; i++) {
            const struct sl__resp_command *k = NULL;
            for (size_t j = 0; j < sl__resp_ncommands(); j++)
                if (sl__resp_eq(cmd->argv[i], sl__resp_commands[j].name))
                    k = &sl__resp_commands[j];
            if (k)
                command_info(out, k);
            else
                sl__buf_append(out, "*-1\r\n", 5);
        }
    } else {
        sl__resp_w_error(out, "ERR unknown subcommand '%.*s'. Try COMMAND COUNT|DOCS|INFO.",
                         (int)(cmd->argv[1].len > 32 ? 32 : cmd->argv[1].len), cmd->argv[1].p);
    }
    return 0;
}

int sl__resp_info(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                  struct sl__buf *out)
{
    char text[512];
    int n = snprintf(text, sizeof(text),
                     "# Server\r\n"
                     "redis_version:7.0.0\r\n" /* what clients parse; the real one below */
                     "sluice_version:%s\r\n"
                     "redis_mode:standalone\r\n"
                     "process_id:%ld\r\n"
                     "\r\n# Clients\r\n"
                     "connected_clients:%u\r\n",
                     SLUICE_VERSION, (long)getpid(), atomic_load(&c->w->srv->n_conns));
    sl__resp_w_bulk(out, text, n > 0 && (size_t)n < sizeof(text) ? (size_t)n : 0);
    return 0;
}

/* CONFIG GET: redis-benchmark asks for "save" and "appendonly" to describe
 * the server; answer as a Redis without persistence. Nothing can be set. */
int sl__resp_config(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                    struct sl__buf *out)
{
    static const char *const known[][2] = {{"save", ""}, {"appendonly", "no"}};
    size_t hits = 0;

    if (!sl__resp_eq(cmd->argv[1], "GET") || cmd->argc < 3) {
        sl__resp_w_error(out, "ERR sluiced supports only CONFIG GET save|appendonly");
        return 0;
    }
    for (size_t i = 2; i < cmd->argc; i++)
        for (size_t j = 0; j < 2; j++)
            hits += sl__resp_eq(cmd->argv[i], known[j][0]);
    sl__resp_w_array(out, hits * 2);
    for (size_t i = 2; i < cmd->argc; i++)
        for (size_t j = 0; j < 2; j++)
            if (sl__resp_eq(cmd->argv[i], known[j][0])) {
                sl__resp_w_cstr(out, known[j][0]);
                sl__resp_w_cstr(out, known[j][1]);
            }
    return 0;
}

int sl__resp_quit(struct sl__conn *c, struct sl__resp_state *st, const struct sl__resp_cmd *cmd,
                  struct sl__buf *out)
{
    sl__resp_w_simple(out, "OK");
    return 1;
}
