/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * check.c - sluiced's configuration checked as a start would check it
 * (check.h): the file read with every error, the rules built and dropped,
 * the listeners' addresses tried.
 *
 * It writes nothing on disk: the rules database is opened only if it
 * exists, the admin token file only read (a start creates it, a check
 * does not), and a listener is tried on a port the
 * kernel picks and closed at once.
 */
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "listen.h"
#include "rules_load.h"
#include "token.h"

/* Each listener's address can be bound; the port is not tried (the
 * daemon being checked may hold it). */
static int check_listeners(const struct sl__config *cfg, FILE *out)
{
    char err[256];
    int r = 0;

    for (size_t l = 0; l < cfg->n_listeners; l++) {
        uint16_t port = 0;
        int fd = sl__listen_socket(cfg->listeners[l].address, &port, err, sizeof(err));
        if (fd < 0) {
            fprintf(out, "%s: listen: %s\n", cfg->path ? cfg->path : "(defaults)", err);
            r = 1;
            continue;
        }
        close(fd);
    }
    return r;
}

int sl__check_config(const char *path, FILE *out, FILE *list)
{
    char err[SL__CONFIG_ERR_MAX];
    struct sl__config cfg;
    int r = 0;

    sl__config_init(&cfg);
    if (path != NULL && sl__config_load(&cfg, path, err, sizeof(err)) != SL_OK) {
        fprintf(out, "%s\n", err);
        r = 1; /* the rules' paths may be wrong too: the file comes first */
    } else {
        if (path == NULL)
            sl__config_finish(&cfg);
        if (sl__token_load(&cfg, false, err, sizeof(err)) != SL_OK) { /* read, never created */
            fprintf(out, "%s\n", err);
            r = 1;
        }
        r |= check_listeners(&cfg, out);
        r |= sl__rules_check(&cfg, out, list) != SL_OK;
    }
    sl__config_free(&cfg);
    return r;
}
