/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * resp.c - the RESP2 protocol: sniffing, the loop over pipelined commands,
 * and dispatch through the command table (valkey's command table, not a
 * switch ladder). A bad argument gets an -ERR reply and the connection
 * lives on; a malformed or oversized frame gets one "-ERR Protocol error"
 * line and closes that connection only.
 *
 * It does not implement commands (resp_conn.c, resp_sl.c) or parse bytes
 * (resp_parse.c).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "config-t.h"
#include "conn.h"
#include "decide.h"
#include "privilege.h"
#include "proto.h"
#include "resp.h"
#include "resp_write.h"
#include "server-t.h"
#include "worker-t.h"
#include "xalloc.h"

/* Sorted by nothing in particular: the table is short and lookups compare
 * the length first. */
const struct sl__resp_command sl__resp_commands[] = {
    {"CL.THROTTLE", -1, sl__resp_throttle, "write fast", false},
    {"SL.CHECK", -5, sl__resp_check, "write fast", false},
    {"SL.CHECKM", -6, sl__resp_checkm, "write fast", false},
    {"SL.ACQUIRE", -4, sl__resp_acquire, "write fast", false},
    {"SL.RELEASE", -2, sl__resp_release, "write fast", false},
    {"SL.PEEK", -4, sl__resp_peek, "readonly fast", false},
    {"SL.RESET", -4, sl__resp_reset, "write", true},
    {"SL.DEBUG", -2, sl__resp_debug, "admin", true},
    {"DEL", -2, sl__resp_del, "write", true},
    {"PING", -1, sl__resp_ping, "fast", false},
    {"ECHO", 2, sl__resp_echo, "fast", false},
    {"HELLO", -1, sl__resp_hello, "fast", false},
    {"AUTH", -2, sl__resp_auth, "fast", false},
    {"CLIENT", -2, sl__resp_client, "fast", false},
    {"SELECT", 2, sl__resp_select, "fast", false},
    {"COMMAND", -1, sl__resp_command, "loading", false},
    {"INFO", -1, sl__resp_info, "loading", false},
    {"CONFIG", -2, sl__resp_config, "admin", false},
    {"QUIT", -1, sl__resp_quit, "fast", false},
    {NULL, 0, NULL, NULL, false},
};

size_t sl__resp_ncommands(void)
{
    return sizeof(sl__resp_commands) / sizeof(sl__resp_commands[0]) - 1;
}

bool sl__resp_eq(struct sl_str arg, const char *s)
{
    size_t i;

    for (i = 0; i < arg.len; i++) {
        char a = arg.p[i];
        if (s[i] == '\0')
            return false;
        if (a >= 'a' && a <= 'z')
            a = (char)(a - 'a' + 'A');
        if (a != (s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]))
            return false;
    }
    return s[i] == '\0';
}

static const struct sl__resp_command *lookup(struct sl_str name)
{
    for (const struct sl__resp_command *k = sl__resp_commands; k->name; k++)
        if (sl__resp_eq(name, k->name))
            return k;
    return NULL;
}

/* Redis's message for an unknown command, quoting a bounded prefix. */
static void unknown(const struct sl__resp_cmd *cmd, struct sl__buf *out)
{
    char args[200];
    size_t n = 0;

    args[0] = '\0';
    for (size_t i = 1; i < cmd->argc && n < sizeof(args) - 40; i++) {
        int k = snprintf(args + n, sizeof(args) - n, "'%.*s' ",
                         (int)(cmd->argv[i].len > 32 ? 32 : cmd->argv[i].len), cmd->argv[i].p);
        if (k > 0)
            n += (size_t)k;
    }
    sl__resp_w_error(out, "ERR unknown command '%.*s', with args beginning with: %s",
                     (int)(cmd->argv[0].len > 64 ? 64 : cmd->argv[0].len), cmd->argv[0].p, args);
}

static _Thread_local struct sl__resp_cmd cmd;

/* The commands whose decisions go into the read's batch (decide.h); any
 * other command first lets the queued ones be decided. */
static bool batched(const struct sl__resp_command *k)
{
    return k != NULL &&
           (k->fn == sl__resp_throttle || k->fn == sl__resp_check || k->fn == sl__resp_checkm);
}

/* Run one command; 1 to close after its reply. */
static int dispatch(struct sl__conn *c, struct sl__resp_state *st)
{
    const struct sl__resp_command *k = lookup(cmd.argv[0]);
    struct sl__buf *reply = &c->w->reply;
    int r = 0;

    reply->len = 0;
    if (!batched(k))
        sl__decide_flush(c->w);
    if (k == NULL) {
        unknown(&cmd, reply);
    } else if ((k->arity > 0 && cmd.argc != (size_t)k->arity) ||
               (k->arity < 0 && cmd.argc < (size_t)-k->arity)) {
        sl__resp_w_error(reply, "ERR wrong number of arguments for '%s' command", k->name);
    } else if (k->privileged &&
               !sl__admin_allowed(&c->w->srv->cfg, c->ls, st->admin || sl__conn_cert_admin(c))) {
        sl__resp_w_error(reply,
                         "NOPERM %s needs the admin privilege: a listener that serves the admin "
                         "endpoints and AUTH with the admin token, or a client certificate "
                         "named in admin.client_cert_names (docs/protocol.md)",
                         k->name);
    } else {
        r = k->fn(c, st, &cmd, reply);
    }
    if (reply->len > 0)
        sl__conn_write(c, reply->p, reply->len);
    return r;
}

static ssize_t read_commands(struct sl__conn *c, const char *buf, size_t len)
{
    struct sl__resp_state *st = c->proto_state;
    size_t off = 0;

    while (off < len) {
        if (off > 0 && sl__conn_out_full(c))
            break; /* the peer reads too slowly: the rest waits for it */
        size_t scanned = st->rs.scanned;
        ssize_t n =
            sl__resp_parse_resume(buf + off, len - off, c->ls->max_frame_bytes, &cmd, &st->rs);
        sl__conn_scanned(c, st->rs.scanned - scanned);
        if (n == -2)
            break;
        if (n < 0) {
            struct sl__buf *reply = &c->w->reply;
            reply->len = 0;
            sl__resp_w_error(reply, "ERR Protocol error: %s",
                             sl__resp_parse_error(buf + off, len - off, c->ls->max_frame_bytes));
            sl__conn_write(c, reply->p, reply->len);
            return -1;
        }
        if (cmd.argc > 0 && c->slot_n == SL__CONN_MAX_SLOTS)
            break; /* every reply slot waits on the store: read no further */
        off += (size_t)n;
        if (cmd.argc > 0 && dispatch(c, st) != 0)
            return -1;
    }
    return (ssize_t)off;
}

/* Every check read at once is decided as one batch when the read is
 * consumed (or earlier, before a command that is not a check); the replies
 * keep their order through the reply slots and leave in one write. */
static ssize_t on_read(struct sl__conn *c, const char *buf, size_t len)
{
    ssize_t n;

    sl__decide_batch_begin(c->w);
    n = read_commands(c, buf, len);
    sl__decide_batch_end(c->w);
    return n;
}

static int sniff(const char *buf, size_t len)
{
    unsigned char b = (unsigned char)buf[0];

    /* a multibulk array or an inline command word; other RESP type bytes
     * too, so that a confused client gets a protocol error, not silence */
    return b == '*' || b == '$' || b == '+' || b == '-' || b == ':' || (b >= 'A' && b <= 'Z') ||
                   (b >= 'a' && b <= 'z')
               ? 1
               : 0;
}

static atomic_uint_fast64_t next_id = 1;

static int on_open(struct sl__conn *c)
{
    struct sl__resp_state *st = sl__xzalloc(sizeof(*st));

    st->id = atomic_fetch_add(&next_id, 1);
    c->proto_state = st;
    return 0;
}

static void on_close(struct sl__conn *c)
{
    struct sl__resp_state *st = c->proto_state;

    if (st != NULL)
        sl__resp_resume_free(&st->rs);
    free(c->proto_state);
    c->proto_state = NULL;
}

const struct sl__proto sl__proto_resp = {
    .name = "resp",
    .sniff = sniff,
    .on_open = on_open,
    .on_read = on_read,
    .on_close = on_close,
};
