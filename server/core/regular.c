/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * regular.c - opening the operator's files, refusing anything that is not
 * a regular file (regular.h). The open itself is non-blocking (O_NONBLOCK
 * makes opening a FIFO return at once instead of waiting for a writer),
 * the descriptor is checked with fstat, so what was checked is what is
 * read, and the flag is then cleared. It reads nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "regular.h"

#define NOT_REGULAR "not a regular file (a FIFO, a device, a socket or a directory)"

int sl__open_regular(const char *path, struct stat *st, const char **why)
{
    struct stat own;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), flags, e;

    st = st != NULL ? st : &own;
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    if (fstat(fd, st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
        (S_ISREG(st->st_mode) && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) {
        e = errno;
        *why = strerror(e);
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        *why = NOT_REGULAR;
        errno = EINVAL;
        return -1;
    }
    return fd;
}

bool sl__regular_or_absent(const char *path, const char **why)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        *why = strerror(errno);
        return errno == ENOENT;
    }
    *why = NOT_REGULAR;
    return S_ISREG(st.st_mode);
}
