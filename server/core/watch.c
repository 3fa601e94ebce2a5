/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * watch.c - reloading the rules when a rules file changes: a uv_fs_event on
 * every rules file and on its directory (editors and config managers
 * replace files by renaming, which a watch on the old inode misses), and a
 * short debounce so one save triggers one reload.
 *
 * It does not compare contents: any event asks for a reload (coalesced with
 * one already running), and a reload that builds the same rules is
 * harmless (unchanged limits keep their state). Nor does it read the files
 * (the reload does, once they hold still: rules_read.c).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rules_load.h"
#include "server.h"
#include "xalloc.h"

static void on_debounce(uv_timer_t *t)
{
    struct sl__server *srv = t->data;

    srv->rules_changed(srv, "file change");
}

/* Is `name` (a basename from inotify) one of the rules files? Directory
 * watches see every file of the directory, the log file included. */
static bool is_rules_file(const struct sl__server *srv, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < srv->cfg.n_rules_files; i++) {
        const char *f = srv->cfg.rules_files[i];
        size_t len = strlen(f);
        if (len >= n && strcmp(f + len - n, name) == 0 && (len == n || f[len - n - 1] == '/'))
            return true;
    }
    return false;
}

static void on_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
    struct sl__server *srv = h->data;

    if (status < 0 || filename == NULL || !is_rules_file(srv, filename))
        return;
    sl__dbg("rules.file_changed", "watch: %s changed", filename);
    /* the first event of a burst arms the timer; later ones ride along */
    if (!uv_is_active((uv_handle_t *)&srv->debounce))
        uv_timer_start(&srv->debounce, on_debounce, (uint64_t)srv->cfg.rules_debounce_ms, 0);
}

static void watch_path(struct sl__server *srv, const char *path)
{
    uv_fs_event_t *h;

    for (size_t i = 0; i < srv->n_watch; i++)
        if (strcmp(srv->watch[i].path ? srv->watch[i].path : "", path) == 0)
            return; /* several files in one directory */
    if (srv->n_watch == sizeof(srv->watch) / sizeof(srv->watch[0]))
        return;
    h = &srv->watch[srv->n_watch];
    uv_fs_event_init(srv->loop, h);
    h->data = srv;
    if (uv_fs_event_start(h, on_event, path, 0) != 0) {
        sl__warn("rules.watch_failed", "watch: cannot watch %s; reload it with SIGHUP", path);
        uv_close((uv_handle_t *)h, NULL);
        return;
    }
    srv->n_watch++;
}

void sl__watch_start(struct sl__server *srv,
                     void (*changed)(struct sl__server *srv, const char *why))
{
    srv->rules_changed = changed;
    uv_timer_init(srv->loop, &srv->debounce);
    srv->debounce.data = srv;
    if (!srv->cfg.rules_watch)
        return;
    for (size_t i = 0; i < srv->cfg.n_rules_files; i++) {
        const char *f = srv->cfg.rules_files[i];
        const char *slash = strrchr(f, '/');
        char *dir =
            slash ? sl__xstrndup(f, (size_t)(slash - f) + (slash == f)) : sl__xstrndup(".", 1);
        watch_path(srv, f);
        watch_path(srv, dir);
        free(dir);
    }
}

void sl__watch_stop(struct sl__server *srv)
{
    for (size_t i = 0; i < srv->n_watch; i++)
        uv_close((uv_handle_t *)&srv->watch[i], NULL);
    srv->n_watch = 0;
    uv_close((uv_handle_t *)&srv->debounce, NULL);
}
