/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * token.c - the admin token (token.h): where its file is, reading it, and
 * creating it with a random token at first start, so that the admin
 * endpoints never run open, not even on loopback (a web page in the
 * operator's browser can reach loopback).
 *
 * It does not check requests (the HTTP gate does) and never logs the
 * token itself, only where it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "regular.h"
#include "token.h"
#include "xalloc.h"

/* Shorter tokens are taken with a warning: they can be guessed. */
#define SHORT_TOKEN 16
#define TOKEN_MAX   512

int sl__token_path(const struct sl__config *c, char *out, size_t cap)
{
    const char *beside = c->rules_db != NULL ? c->rules_db : c->path;
    const char *slash = beside != NULL ? strrchr(beside, '/') : NULL;
    int n;

    if (c->admin_token_file != NULL)
        n = snprintf(out, cap, "%s", c->admin_token_file);
    else
        n = snprintf(out, cap, "%.*sadmin.token", slash ? (int)(slash - beside + 1) : 0,
                     slash ? beside : "");
    return n < 0 || (size_t)n >= cap ? SL_ETOOBIG : SL_OK;
}

/* A token is visible ASCII (what a header carries unchanged). */
static int check_token(const char *t, size_t n, const char *where, char *err, size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "%s: the admin token is empty", where);
        return SL_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i] <= 0x20 || t[i] >= 0x7f) {
            snprintf(err, errlen,
                     "%s: the admin token must be printable ASCII without spaces (it is sent "
                     "as Authorization: Bearer TOKEN)",
                     where);
            return SL_EINVAL;
        }
    }
    if (n < SHORT_TOKEN)
        sl__warn("admin.token_short",
                 "%s: the admin token has fewer than %d characters: it can be guessed", where,
                 SHORT_TOKEN);
    return SL_OK;
}

/* Read the first line of `path` into c->admin_token. SL_ENOENT when the
 * file does not exist. */
static int read_token(struct sl__config *c, const char *path, char *err, size_t errlen)
{
    char buf[TOKEN_MAX + 2];
    struct stat st;
    size_t len = 0, n;
    ssize_t got;
    const char *why;
    int fd = sl__open_regular(path, &st, &why), r;

    if (fd < 0 && errno == ENOENT)
        return SL_ENOENT;
    if (fd < 0) {
        snprintf(err, errlen, "%s: admin.token_file: %s", path, why);
        return SL_EINVAL;
    }
    if (st.st_mode & 077)
        sl__warn("admin.token_readable",
                 "%s: the admin token file can be read by others (mode %03o): chmod 600 it", path,
                 (unsigned)(st.st_mode & 0777));
    while (len < sizeof(buf) - 1 && (got = read(fd, buf + len, sizeof(buf) - 1 - len)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            break;
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    n = strcspn(buf, "\r\n");
    if (n > TOKEN_MAX) {
        snprintf(err, errlen, "%s: the admin token is longer than %d bytes", path, TOKEN_MAX);
        return SL_EINVAL;
    }
    r = check_token(buf, n, path, err, errlen);
    if (r == SL_OK) {
        free(c->admin_token);
        c->admin_token = sl__xstrndup(buf, n);
    }
    return r;
}

static int random_hex(char *out, char *err, size_t errlen)
{
    static const char digits[] = "0123456789abcdef";
    uint8_t raw[SL__TOKEN_BYTES];
    size_t got = 0;

    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno != EINTR) {
            snprintf(err, errlen, "admin token: getrandom: %s", strerror(errno));
            return SL_EINVAL;
        }
        got += n > 0 ? (size_t)n : 0;
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = digits[raw[i] >> 4];
        out[2 * i + 1] = digits[raw[i] & 15];
    }
    out[2 * sizeof(raw)] = '\n';
    return SL_OK;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Write a new token to a temporary file beside `path` and link it into
 * place: SL_OK, or SL_ENOENT when `path` appeared meanwhile (then it is
 * read, not replaced), or SL_EINVAL. */
static int create_token(const char *path, char *err, size_t errlen)
{
    char tmp[PATH_MAX], text[2 * SL__TOKEN_BYTES + 1];
    int fd, r = SL_EINVAL, e = 0;

    if (random_hex(text, err, errlen) != SL_OK)
        return SL_EINVAL;
    if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "%s: admin.token_file: the path is too long", path);
        return SL_EINVAL;
    }
    fd = mkstemp(tmp); /* mode 0600 */
    if (fd < 0) {
        snprintf(err, errlen,
                 "%s: cannot create the admin token file: %s; set admin.token_file to a "
                 "writable place, or admin.token",
                 path, strerror(errno));
        return SL_EINVAL;
    }
    if (fchmod(fd, 0600) != 0 || write_all(fd, text, sizeof(text)) != 0 || fsync(fd) != 0)
        e = errno;
    close(fd);
    if (e == 0 && link(tmp, path) != 0)
        e = errno;
    unlink(tmp);
    if (e == 0)
        r = SL_OK;
    else if (e == EEXIST)
        r = SL_ENOENT;
    else
        snprintf(err, errlen, "%s: cannot create the admin token file: %s", path, strerror(e));
    explicit_bzero(text, sizeof(text));
    return r;
}

int sl__token_load(struct sl__config *c, bool create, char *err, size_t errlen)
{
    char path[PATH_MAX], *abs;
    bool created = false;
    int r;

    if (c->admin_token != NULL)
        return check_token(c->admin_token, strlen(c->admin_token), "admin.token", err, errlen);
    if (sl__token_path(c, path, sizeof(path)) != SL_OK) {
        snprintf(err, errlen, "admin.token_file: the path is too long");
        return SL_EINVAL;
    }
    r = read_token(c, path, err, errlen);
    if (r == SL_ENOENT && !create) {
        sl__info("admin.token_missing",
                 "admin token: %s does not exist yet; the first start creates it", path);
        return SL_OK;
    }
    if (r == SL_ENOENT) {
        r = create_token(path, err, errlen);
        created = r == SL_OK;
        if (r == SL_OK || r == SL_ENOENT)
            r = read_token(c, path, err, errlen);
    }
    if (r == SL_ENOENT)
        snprintf(err, errlen, "%s: the admin token file vanished as it was created", path);
    if (r != SL_OK)
        return SL_EINVAL;
    abs = realpath(path, NULL);
    sl__info("admin.token_loaded", "admin token: %s %s (send it as Authorization: Bearer TOKEN)",
             created ? "created in" : "read from", abs != NULL ? abs : path);
    free(abs);
    return SL_OK;
}
