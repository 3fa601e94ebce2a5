/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_pki.c - test certificates made with the openssl command (tls_pki.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls_pki.h"

#define EC "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"

const char *tls_pki_path(const char *dir, const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", dir, name);
    return buf;
}

/* One shell command in dir; 0 when it succeeded. */
static int run(const char *dir, const char *what)
{
    char cmd[2048];
    int n = snprintf(cmd, sizeof(cmd), "cd '%s' && { %s; } >/dev/null 2>&1", dir, what);

    if (n < 0 || (size_t)n >= sizeof(cmd) || system(cmd) != 0) {
        fprintf(stderr, "tls_pki: failed in %s: %s\n", dir, what);
        return -1;
    }
    return 0;
}

static int ca(const char *dir, const char *name)
{
    char what[512];

    snprintf(what, sizeof(what),
             "openssl req -x509 " EC " -days 2 -subj /CN=%s -keyout %s.key -out %s.pem", name, name,
             name);
    return run(dir, what);
}

static int leaf(const char *dir, const char *name, const char *cn, const char *san,
                const char *issuer)
{
    char what[1024];

    snprintf(what, sizeof(what),
             "printf 'subjectAltName=%s\\n' > %s.ext && "
             "openssl req " EC " -subj /CN=%s -keyout %s.key -out %s.csr && "
             "openssl x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial -days 2 "
             "-extfile %s.ext -out %s.pem",
             san, name, cn, name, name, name, issuer, issuer, name, name);
    return run(dir, what);
}

int tls_pki_make(char *dir, size_t cap)
{
    char tmpl[] = "/tmp/sl-pki-XXXXXX";

    if (mkdtemp(tmpl) == NULL || strlen(tmpl) >= cap) {
        perror("tls_pki: mkdtemp");
        return -1;
    }
    memcpy(dir, tmpl, sizeof(tmpl));
    if (ca(dir, "ca") != 0 || ca(dir, "other_ca") != 0 ||
        leaf(dir, "server", "localhost", "DNS:localhost,IP:127.0.0.1", "ca") != 0 ||
        leaf(dir, "client", "sluice-client", "DNS:sluice-client", "ca") != 0 ||
        leaf(dir, "stranger", "sluice-client", "DNS:sluice-client", "other_ca") != 0) {
        tls_pki_remove(dir);
        return -1;
    }
    return 0;
}

void tls_pki_remove(const char *dir)
{
    char cmd[512];

    if (dir[0] == '\0' || strncmp(dir, "/tmp/sl-pki-", 12) != 0)
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "tls_pki: could not remove %s\n", dir);
}
