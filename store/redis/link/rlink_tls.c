/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlink_tls.c - the Redis link's TLS settings and context (rlink.h): the
 * context is built from store.redis.tls at start, and again when a link
 * connects after one of its files changed (a certificate rotated by an
 * operator, cert-manager or a Kubernetes Secret's symlink swap), so that
 * a new client certificate or CA is used without a restart. A file that
 * changed but does not make a context keeps the last good one in use:
 * the connections that work go on working.
 *
 * Checking costs three stat() calls per connection made, never per
 * command. It is linked with the configuration check too (sluiced -t and
 * `sluice check -c` build the context once to report bad files).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "rlink.h"
#include "sluice.h"

static void stamp_of(const char *path, struct sl__rlink_stamp *s)
{
    struct stat sb;

    memset(s, 0, sizeof(*s));
    if (path[0] == '\0' || stat(path, &sb) != 0)
        return;
    s->dev = sb.st_dev;
    s->ino = sb.st_ino;
    s->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    s->size = sb.st_size;
}

static const char *path_of(const struct sl__redis_tls *s, int i)
{
    return i == 0 ? s->ca_file : i == 1 ? s->cert_file : s->key_file;
}

static struct sl__tlsc_ctx *build(const struct sl__redis_tls *s, char *why, size_t cap)
{
    static const char *const names[] = {"", ".ca_file", ".cert_file", ".key_file"};
    const struct sl__tlsc_conf c = {
        .ca_file = s->ca_file[0] != '\0' ? s->ca_file : NULL,
        .cert_file = s->cert_file[0] != '\0' ? s->cert_file : NULL,
        .key_file = s->key_file[0] != '\0' ? s->key_file : NULL,
        .server_name = s->server_name[0] != '\0' ? s->server_name : NULL,
        .verify = s->verify,
    };
    enum sl__tlsc_field f;
    char msg[200];
    struct sl__tlsc_ctx *x = sl__tlsc_ctx_new(&c, msg, sizeof(msg), &f);
    const char *m = msg;

    if (x != NULL)
        return x;
    /* the message starts with the setting's name when it is about one */
    if (f != SL__TLSC_F_NONE && strchr(msg, ':') != NULL)
        m = strchr(msg, ':') + 2;
    snprintf(why, cap, "store.redis.tls%s: %s", f == SL__TLSC_F_NONE ? "" : names[f], m);
    return NULL;
}

int sl__rlink_tls_init(struct sl__rlink_tls *t, const struct sl__redis_tls *set)
{
    memset(t, 0, sizeof(*t));
    t->set = *set;
    for (int i = 0; i < 3; i++)
        stamp_of(path_of(set, i), &t->stamp[i]);
    t->ctx = build(set, t->why, sizeof(t->why));
    return t->ctx != NULL ? SL_OK : SL_EINVAL;
}

void sl__rlink_tls_close(struct sl__rlink_tls *t)
{
    sl__tlsc_ctx_free(t->ctx);
    t->ctx = NULL;
}

const struct sl__tlsc_ctx *sl__rlink_tls_current(struct sl__rlink_tls *t)
{
    struct sl__rlink_stamp now[3];
    struct sl__tlsc_ctx *x;
    bool changed = false;

    for (int i = 0; i < 3; i++) {
        stamp_of(path_of(&t->set, i), &now[i]);
        changed |= memcmp(&now[i], &t->stamp[i], sizeof(now[i])) != 0;
    }
    if (!changed)
        return t->ctx;
    /* A half-written rotation (the certificate new, the key not yet)
     * does not build: the stamps stay old, so the next connection tries
     * again. */
    x = build(&t->set, t->why, sizeof(t->why));
    if (x == NULL)
        return t->ctx;
    memcpy(t->stamp, now, sizeof(now));
    t->why[0] = '\0';
    sl__tlsc_ctx_free(t->ctx); /* connections made from it keep their reference */
    t->ctx = x;
    return x;
}
