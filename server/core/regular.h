/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * regular.h - opening a file the operator named (configuration, rules,
 * admin token) without ever blocking on it (internal). A FIFO, a device
 * or a socket put where a file was expected would hang an open() or a
 * read() forever, and with it a reload and the shutdown that waits for
 * it; a directory would read as an error. Only regular files are read,
 * after following symbolic links (a Kubernetes ConfigMap is a symlink to
 * a symlink to the file).
 */
#ifndef SL_SERVER_REGULAR_H
#define SL_SERVER_REGULAR_H

#include <stdbool.h>
#include <sys/stat.h>

/*
 * Open `path` read-only (close-on-exec, blocking reads) if it names a
 * regular file. Returns the descriptor, with *st filled (may be NULL), or
 * -1 with errno set (ENOENT when absent) and *why a static sentence for
 * the log: strerror(errno), or "not a regular file (a FIFO, a device, a
 * socket or a directory)". Never waits: the open is non-blocking.
 */
int sl__open_regular(const char *path, struct stat *st, const char **why);

/*
 * Is `path` absent (ENOENT) or a regular file, after symbolic links?
 * For files opened by another library (the SQLite rules database): false
 * with *why as above.
 */
bool sl__regular_or_absent(const char *path, const char **why);

#endif /* SL_SERVER_REGULAR_H */
