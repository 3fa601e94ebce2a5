/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * watch.c - reloading the rules when a rules file changes: a uv_fs_event on
 * every rules file and on its directory (editors and config managers
 * replace files by renaming, which a watch on the old inode misses), on
 * every rules directory (and the directory that holds it), and a short
 * debounce so one save triggers one reload.
 *
 * In a rules directory, a change to a rules file's name (*.yaml, *.yml,
 * not hidden) counts, and so does "..data": a Kubernetes ConfigMap update
 * writes a new hidden timestamped directory, then renames a new "..data"
 * link over the old one, then removes the old directory - only the rename
 * changes what the directory's files say, so one update is one reload.
 * The watches of a rules directory and its parent are set again after
 * each reload, so a directory removed and created anew (or reached through
 * a swapped link) is watched again.
 *
 * It does not compare contents: any event asks for a reload (coalesced with
 * one already running), and a reload that builds the same rules is
 * harmless (unchanged limits keep their state). Nor does it read the files
 * (the reload does, once they hold still: rules_read.c, rules_load.c).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rules_dir.h"
#include "rules_load.h"
#include "server.h"
#include "xalloc.h"

static void on_event(uv_fs_event_t *h, const char *filename, int events, int status);

/* Is `path` one of the rules directories? */
static bool is_rules_dir(const struct sl__server *srv, const char *path)
{
    for (size_t i = 0; i < srv->cfg.n_rules_dirs; i++)
        if (strcmp(srv->cfg.rules_dirs[i], path) == 0)
            return true;
    return false;
}

static void on_debounce(uv_timer_t *t)
{
    struct sl__server *srv = t->data;

    srv->rules_changed(srv, "file change");
}

/* Does `name` end the path `f` (as a whole component)? */
static bool names(const char *f, const char *name)
{
    size_t n = strlen(name), len = strlen(f);

    while (len > 1 && f[len - 1] == '/') /* a directory written "dir/" */
        len--;
    return len >= n && strncmp(f + len - n, name, n) == 0 && (len == n || f[len - n - 1] == '/');
}

/* Is `name` (a basename from inotify, seen by the watch of `dir`) about
 * the rules? Directory watches see every file of the directory, the log
 * file included. */
static bool is_about_rules(const struct sl__server *srv, const char *dir, const char *name)
{
    if (is_rules_dir(srv, dir) && (sl__rules_dir_wanted(name) || strcmp(name, "..data") == 0))
        return true;
    for (size_t i = 0; i < srv->cfg.n_rules_files; i++)
        if (names(srv->cfg.rules_files[i], name))
            return true;
    for (size_t i = 0; i < srv->cfg.n_rules_dirs; i++)
        if (names(srv->cfg.rules_dirs[i], name))
            return true;
    return false;
}

static void on_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
    struct sl__server *srv = h->data;
    char dir[4096];
    size_t len = sizeof(dir);

    (void)events;
    if (status < 0 || filename == NULL || uv_fs_event_getpath(h, dir, &len) != 0 ||
        !is_about_rules(srv, dir, filename))
        return;
    sl__dbg("rules.file_changed", "watch: %s changed", filename);
    /* the first event of a burst arms the timer; later ones ride along */
    if (!uv_is_active((uv_handle_t *)&srv->debounce))
        uv_timer_start(&srv->debounce, on_debounce, (uint64_t)srv->cfg.rules_debounce_ms, 0);
}

/* The directory that holds `f` (malloc'd). */
static char *parent_of(const char *f)
{
    size_t len = strlen(f);
    const char *slash = NULL;

    while (len > 1 && f[len - 1] == '/')
        len--;
    for (size_t i = 0; i < len; i++)
        if (f[i] == '/')
            slash = f + i;
    return slash ? sl__xstrndup(f, (size_t)(slash - f) + (slash == f)) : sl__xstrndup(".", 1);
}

/* Watch `path` (once: several files share a directory). The index of its
 * handle in srv->watch, or -1. */
static int watch_path(struct sl__server *srv, const char *path)
{
    uv_fs_event_t *h;

    for (size_t i = 0; i < srv->n_watch; i++)
        if (strcmp(srv->watch[i].path ? srv->watch[i].path : "", path) == 0)
            return (int)i;
    if (srv->n_watch == sizeof(srv->watch) / sizeof(srv->watch[0]))
        return -1;
    h = &srv->watch[srv->n_watch];
    uv_fs_event_init(srv->loop, h);
    h->data = srv;
    if (uv_fs_event_start(h, on_event, path, 0) != 0) {
        sl__warn("rules.watch_failed", "watch: cannot watch %s; reload it with SIGHUP", path);
        uv_close((uv_handle_t *)h, NULL);
        return -1;
    }
    return (int)srv->n_watch++;
}

/* Set the watch of handle `i` on `path` again (a directory removed and
 * created anew, or reached through a swapped link, is a new inode the old
 * watch no longer sees). */
static void rewatch(struct sl__server *srv, int i, const char *path)
{
    uv_fs_event_t *h = &srv->watch[i];

    uv_fs_event_stop(h);
    if (uv_fs_event_start(h, on_event, path, 0) != 0)
        sl__warn("rules.watch_failed", "watch: cannot watch %s; reload it with SIGHUP", path);
}

void sl__watch_refresh(struct sl__server *srv)
{
    for (size_t i = 0; i < srv->cfg.n_rules_dirs && srv->n_watch > 0; i++) {
        char *parent = parent_of(srv->cfg.rules_dirs[i]);
        if (srv->dir_watch[i][0] >= 0)
            rewatch(srv, srv->dir_watch[i][0], srv->cfg.rules_dirs[i]);
        if (srv->dir_watch[i][1] >= 0)
            rewatch(srv, srv->dir_watch[i][1], parent);
        free(parent);
    }
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
        char *dir = parent_of(srv->cfg.rules_files[i]);
        watch_path(srv, srv->cfg.rules_files[i]);
        watch_path(srv, dir);
        free(dir);
    }
    for (size_t i = 0; i < srv->cfg.n_rules_dirs; i++) {
        char *dir = parent_of(srv->cfg.rules_dirs[i]);
        srv->dir_watch[i][0] = watch_path(srv, srv->cfg.rules_dirs[i]);
        srv->dir_watch[i][1] = watch_path(srv, dir);
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
