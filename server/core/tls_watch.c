/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_watch.c - rotating the listeners' certificates without a restart: on
 * SIGHUP (server.c) and when a certificate, key or CA file changes, each
 * TLS listener's contexts are built anew (sl__tls_reload, tls.c), on the
 * main loop, never on a worker's.
 *
 * It watches each such file and its directory, as watch.c does the rules:
 * tools replace files by renaming, and a Kubernetes Secret volume swaps a
 * `..data` symlink in the directory, the files being symlinks through it,
 * so a directory event naming one of the files or any `..` entry counts. A
 * short debounce (rules.debounce) makes one rotation of a burst. After
 * each rotation the watches are set again, as the files' inodes may have
 * changed under their names.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"
#include "tls.h"
#include "xalloc.h"

/* Files and directories watched at most (a path watched once). */
#define MAX_WATCH 64

struct sl__tls_watch {
    struct sl__server *srv;
    uv_timer_t debounce;
    uv_fs_event_t *h[MAX_WATCH];
    char *path[MAX_WATCH];
    size_t n;
    bool warned;
};

static void on_closed(uv_handle_t *h)
{
    free(h);
}

static void unwatch(struct sl__tls_watch *w)
{
    for (size_t i = 0; i < w->n; i++) {
        uv_close((uv_handle_t *)w->h[i], on_closed);
        free(w->path[i]);
    }
    w->n = 0;
}

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Is `name` (a basename from inotify) one the listeners' TLS reads? */
static bool is_tls_name(const struct sl__server *srv, const char *name)
{
    if (strncmp(name, "..", 2) == 0)
        return true; /* a Secret volume's ..data and its timestamped directories */
    for (size_t i = 0; i < srv->cfg.n_listeners; i++) {
        const struct sl__tls *t = srv->cfg.listeners[i].tls;
        if (t == NULL)
            continue;
        if (t->ca_file != NULL && strcmp(base_of(t->ca_file), name) == 0)
            return true;
        for (size_t j = 0; j < t->n_certs; j++)
            if (strcmp(base_of(t->certs[j].cert_file), name) == 0 ||
                strcmp(base_of(t->certs[j].key_file), name) == 0)
                return true;
    }
    return false;
}

static void rewatch(struct sl__tls_watch *w);

static void on_debounce(uv_timer_t *t)
{
    struct sl__tls_watch *w = t->data;

    sl__tls_reload_all(w->srv, "file change");
    rewatch(w);
}

static void on_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
    struct sl__tls_watch *w = h->data;

    (void)events;
    if (status < 0)
        return;
    /* A file's own watch names the file; a directory's, its entry. */
    if (filename != NULL && !is_tls_name(w->srv, filename))
        return;
    sl__dbg("tls.file_changed", "watch: %s changed", filename ? filename : "a TLS file");
    if (!uv_is_active((uv_handle_t *)&w->debounce))
        uv_timer_start(&w->debounce, on_debounce, (uint64_t)w->srv->cfg.rules_debounce_ms, 0);
}

static void watch_path(struct sl__tls_watch *w, const char *path)
{
    uv_fs_event_t *h;

    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->path[i], path) == 0)
            return;
    if (w->n == MAX_WATCH) {
        if (!w->warned)
            sl__warn("tls.watch_failed",
                     "watch: more than %d TLS files and directories; rotate the others with "
                     "SIGHUP",
                     MAX_WATCH);
        w->warned = true;
        return;
    }
    h = sl__xzalloc(sizeof(*h));
    uv_fs_event_init(w->srv->loop, h);
    h->data = w;
    if (uv_fs_event_start(h, on_event, path, 0) != 0) {
        if (!w->warned)
            sl__warn("tls.watch_failed", "watch: cannot watch %s; rotate it with SIGHUP", path);
        w->warned = true;
        uv_close((uv_handle_t *)h, on_closed);
        return;
    }
    w->h[w->n] = h;
    w->path[w->n] = sl__xstrndup(path, strlen(path));
    w->n++;
}

static void watch_file(struct sl__tls_watch *w, const char *f)
{
    const char *slash = strrchr(f, '/');
    char *dir = slash ? sl__xstrndup(f, (size_t)(slash - f) + (slash == f)) : sl__xstrndup(".", 1);

    watch_path(w, f);
    watch_path(w, dir);
    free(dir);
}

static void rewatch(struct sl__tls_watch *w)
{
    const struct sl__config *cfg = &w->srv->cfg;

    unwatch(w);
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const struct sl__tls *t = cfg->listeners[i].tls;
        if (t == NULL)
            continue;
        for (size_t j = 0; j < t->n_certs; j++) {
            watch_file(w, t->certs[j].cert_file);
            watch_file(w, t->certs[j].key_file);
        }
        if (t->ca_file != NULL)
            watch_file(w, t->ca_file);
    }
}

void sl__tls_reload_all(struct sl__server *srv, const char *why)
{
    for (size_t i = 0; i < srv->cfg.n_listeners; i++) {
        const struct sl__listener *l = &srv->cfg.listeners[i];
        char name[96];
        if (l->tls == NULL)
            continue;
        snprintf(name, sizeof(name), strchr(l->address, ':') ? "[%s]:%u" : "%s:%u", l->address,
                 (unsigned)srv->ports[i]);
        sl__tls_reload(l->tls, name, why);
    }
}

void sl__tls_watch_start(struct sl__server *srv)
{
    bool any = false;

    for (size_t i = 0; i < srv->cfg.n_listeners; i++)
        any |= srv->cfg.listeners[i].tls != NULL;
    if (!any)
        return;
    srv->tls_watch = sl__xzalloc(sizeof(*srv->tls_watch));
    srv->tls_watch->srv = srv;
    uv_timer_init(srv->loop, &srv->tls_watch->debounce);
    srv->tls_watch->debounce.data = srv->tls_watch;
    rewatch(srv->tls_watch);
}

static void on_timer_closed(uv_handle_t *h)
{
    free(h->data);
}

void sl__tls_watch_stop(struct sl__server *srv)
{
    struct sl__tls_watch *w = srv->tls_watch;

    if (w == NULL)
        return;
    unwatch(w);
    uv_close((uv_handle_t *)&w->debounce, on_timer_closed);
    srv->tls_watch = NULL;
}
