/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * privdrop.c - giving up root once the listening sockets are bound: a
 * sluiced started as root (to bind a port below 1024, say) switches to
 * server.user, its primary group and no supplementary groups, for good;
 * one left running as root says so loudly.
 *
 * It does not chroot or drop capabilities one by one (a service manager
 * does that better: see the systemd unit); it only stops a parser bug from
 * running as root.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"

int sl__drop_privileges(const char *user)
{
    struct passwd *pw;

    if (geteuid() != 0) {
        if (user != NULL)
            sl__warn("server.user_ignored",
                     "server.user is %s, but sluiced does not run as root: it stays uid %u", user,
                     (unsigned)geteuid());
        return SL_OK;
    }
    if (user == NULL) {
        sl__warn("server.running_as_root",
                 "RUNNING AS ROOT: set server.user (e.g. sluice) so that sluiced gives up root "
                 "once its listeners are bound");
        return SL_OK;
    }
    errno = 0;
    pw = getpwnam(user);
    if (pw == NULL) {
        sl__err("server.user_failed", "server.user: no user '%s'%s%s", user, errno ? ": " : "",
                errno ? strerror(errno) : "");
        return SL_EINVAL;
    }
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
        sl__err("server.user_failed", "server.user: cannot switch to %s: %s", user,
                strerror(errno));
        return SL_EINVAL;
    }
    if (setuid(0) == 0) { /* must fail now, or root was not given up */
        sl__err("server.user_failed",
                "server.user: root could be taken back after switching to %s; stopping", user);
        return SL_EINVAL;
    }
    sl__info("server.user_switched", "running as %s (uid %u, gid %u)", user, (unsigned)pw->pw_uid,
             (unsigned)pw->pw_gid);
    return SL_OK;
}
