/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * tls_config.c - a listener's `tls:` mapping read into a struct sl__tls:
 * its keys, their defaults (the same strings --help prints and
 * docs/configuration.md shows) and the checks of each value alone.
 *
 * It opens no file and builds no OpenSSL context (tls.c does, once the
 * listener is read): a missing file or a key that does not match its
 * certificate is reported there.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "tls.h"
#include "xalloc.h"

/* The defaults, and why: TLS 1.2 still has clients; below it nothing is
 * safe to offer. The TLS 1.2 list is forward-secret AEAD suites only
 * (ECDHE with AES-GCM or ChaCha20-Poly1305); TLS 1.3's three suites are
 * all sound. */
#define DEF_MIN_VERSION "1.2"
#define DEF_CIPHERS     "ECDHE+AESGCM:ECDHE+CHACHA20"
/* Resumption: a ticket lives 2 hours (tls.c: its key encrypts for 1 and
 * decrypts for 3), long enough to spare most reconnecting clients a full
 * handshake, short enough that a stolen ticket is soon worthless. */
#define DEF_SESSION_TIMEOUT    "2h"
#define DEF_SESSION_TIMEOUT_MS (2 * 3600 * 1000LL)
#define DEF_CIPHERSUITES                                                                           \
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

static const char *const verify_names[] = {"none", "optional", "require", NULL};

static char *path_in(const char *dir, const char *p)
{
    size_t dl = dir != NULL ? strlen(dir) : 0, pl = strlen(p);
    char *out;

    if (p[0] == '/' || dl == 0)
        return sl__xstrndup(p, pl);
    out = sl__xzalloc(dl + pl + 2);
    memcpy(out, dir, dl);
    out[dl] = '/';
    memcpy(out + dl + 1, p, pl + 1);
    return out;
}

/* A file path value: *dst (replacing what it held). */
static int set_path(struct sl__config_ctx *x, yaml_node_t *v, const char *key, const char *dir,
                    char **dst)
{
    const char *s = sl__config_scalar(v);

    if (s == NULL || *s == '\0')
        return sl__config_fail(x, v, "tls.%s must be a file path", key);
    free(*dst);
    *dst = path_in(dir, s);
    return 0;
}

static int set_str(struct sl__config_ctx *x, yaml_node_t *v, const char *key, char **dst)
{
    const char *s = sl__config_scalar(v);

    if (s == NULL || *s == '\0')
        return sl__config_fail(x, v, "tls.%s must be a non-empty string", key);
    free(*dst);
    *dst = sl__xstrndup(s, strlen(s));
    return 0;
}

static int set_verify(struct sl__config_ctx *x, yaml_node_t *v, struct sl__tls *t)
{
    const char *s = sl__config_scalar(v);

    for (int i = 0; s != NULL && verify_names[i] != NULL; i++) {
        if (strcmp(s, verify_names[i]) == 0) {
            t->verify = (enum sl__tls_verify)i;
            return 0;
        }
    }
    return sl__config_fail(x, v, "tls.verify_client must be none, optional or require (got '%s')",
                           s ? s : "?");
}

static int parse_version(const char *s, int *out)
{
    if (s != NULL && strcmp(s, "1.2") == 0)
        *out = TLS1_2_VERSION;
    else if (s != NULL && strcmp(s, "1.3") == 0)
        *out = TLS1_3_VERSION;
    else
        return -1;
    return 0;
}

static int set_version(struct sl__config_ctx *x, yaml_node_t *v, struct sl__tls *t)
{
    const char *s = sl__config_scalar(v);

    if (parse_version(s, &t->min_version) != 0)
        return sl__config_fail(x, v,
                               "tls.min_version must be \"1.2\" or \"1.3\" (got '%s'); TLS 1.0 "
                               "and 1.1 are not offered",
                               s ? s : "?");
    return 0;
}

static int set_bool(struct sl__config_ctx *x, yaml_node_t *v, const char *key, bool *dst)
{
    const char *s = sl__config_scalar(v);

    if (s != NULL && strcmp(s, "true") == 0)
        *dst = true;
    else if (s != NULL && strcmp(s, "false") == 0)
        *dst = false;
    else
        return sl__config_fail(x, v, "tls.%s must be true or false (got '%s')", key, s ? s : "?");
    return 0;
}

/* tls.session_timeout: a duration with its unit, 1s to 7 days (RFC 8446
 * caps a ticket's lifetime at 7 days). */
static int set_timeout(struct sl__config_ctx *x, yaml_node_t *v, struct sl__tls *t)
{
    const char *s = sl__config_scalar(v);
    int64_t ns = 0;

    if (s == NULL || sl_duration_parse(s, strlen(s), &ns) != SL_OK || ns < 1000000000LL ||
        ns > 7 * 86400 * 1000000000LL)
        return sl__config_fail(x, v,
                               "tls.session_timeout must be a duration with its unit from 1s to "
                               "7d, e.g. 2h (got '%s')",
                               s ? s : "?");
    t->session_timeout_ms = (ns + 999999) / 1000000;
    return 0;
}

/* tls.alpn: a list of protocol ids, in the server's order of preference. */
static int set_alpn(struct sl__config_ctx *x, yaml_node_t *v, struct sl__tls *t)
{
    yaml_document_t *doc = sl__config_doc(x);
    size_t n = 0;

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "tls.alpn must be a list, e.g. [h2, http/1.1]");
    t->alpn_len = 0;
    t->alpn_set = true;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n1 = yaml_document_get_node(doc, *it);
        const char *s = sl__config_scalar(n1);
        size_t len = s != NULL ? strlen(s) : 0;
        if (len == 0 || len > 32 || n == SL__TLS_MAX_ALPN)
            return sl__config_fail(x, n1,
                                   "tls.alpn holds at most %d protocol ids of 1 to 32 bytes, e.g. "
                                   "h2 or http/1.1",
                                   SL__TLS_MAX_ALPN);
        t->alpn[t->alpn_len] = (unsigned char)len;
        memcpy(t->alpn + t->alpn_len + 1, s, len);
        t->alpn_len += len + 1;
        n++;
    }
    return 0;
}

/* server_names: host names, lower-cased; "*.example.com" covers one label. */
static int set_names(struct sl__config_ctx *x, yaml_node_t *v, struct sl__tls_cert *tc)
{
    yaml_document_t *doc = sl__config_doc(x);

    if (v->type != YAML_SEQUENCE_NODE)
        return sl__config_fail(x, v, "server_names must be a list of host names");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        const char *s = sl__config_scalar(n);
        size_t len = s != NULL ? strlen(s) : 0;
        if (len == 0 || len > 253 || strpbrk(s, " \t/:@[]") != NULL)
            return sl__config_fail(x, n, "server_names holds host names, e.g. api.example.com");
        if (tc->n_names == SL__TLS_MAX_NAMES)
            return sl__config_fail(x, n, "at most %d server_names per certificate",
                                   SL__TLS_MAX_NAMES);
        char *name = sl__xstrndup(s, len);
        for (size_t i = 0; i < len; i++)
            name[i] = (char)tolower((unsigned char)name[i]);
        tc->names[tc->n_names++] = name;
    }
    return 0;
}

/* One item of tls.certificates: {cert_file, key_file, server_names}. */
static int load_cert(struct sl__config_ctx *x, yaml_node_t *m, const char *dir, struct sl__tls *t)
{
    yaml_document_t *doc = sl__config_doc(x);
    struct sl__tls_cert *tc;
    int r = 0;

    if (m->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, m,
                               "a certificate is a mapping: {cert_file, key_file, "
                               "server_names}");
    if (t->n_certs == SL__TLS_MAX_CERTS)
        return sl__config_fail(x, m, "at most %d tls.certificates", SL__TLS_MAX_CERTS);
    tc = &t->certs[t->n_certs++];
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *ks = sl__config_scalar(k);
        if (ks != NULL && strcmp(ks, "cert_file") == 0)
            r |= set_path(x, v, "certificates.cert_file", dir, &tc->cert_file);
        else if (ks != NULL && strcmp(ks, "key_file") == 0)
            r |= set_path(x, v, "certificates.key_file", dir, &tc->key_file);
        else if (ks != NULL && strcmp(ks, "server_names") == 0)
            r |= set_names(x, v, tc);
        else
            r |= sl__config_fail(x, k,
                                 "unknown key '%s' of a certificate (cert_file, key_file, "
                                 "server_names)",
                                 ks ? ks : "?");
    }
    if (r == 0 && (tc->cert_file == NULL || tc->key_file == NULL))
        r = sl__config_fail(x, m, "a certificate needs cert_file and key_file");
    return r != 0 ? SL_EINVAL : 0;
}

static int load_certs(struct sl__config_ctx *x, yaml_node_t *v, const char *dir, struct sl__tls *t)
{
    yaml_document_t *doc = sl__config_doc(x);
    int r = 0;

    if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.start == v->data.sequence.items.top)
        return sl__config_fail(x, v,
                               "tls.certificates must be a list of {cert_file, key_file, "
                               "server_names}, the first the default");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
        r |= load_cert(x, yaml_document_get_node(doc, *it), dir, t);
    return r != 0 ? SL_EINVAL : 0;
}

/* One key of the mapping; the one-certificate form fills certs[0]. */
static int load_key(struct sl__config_ctx *x, const char *ks, yaml_node_t *k, yaml_node_t *v,
                    const char *dir, struct sl__tls *t, struct sl__tls_cert *one)
{
    if (strcmp(ks, "cert_file") == 0)
        return set_path(x, v, ks, dir, &one->cert_file);
    if (strcmp(ks, "key_file") == 0)
        return set_path(x, v, ks, dir, &one->key_file);
    if (strcmp(ks, "ca_file") == 0)
        return set_path(x, v, ks, dir, &t->ca_file);
    if (strcmp(ks, "verify_client") == 0)
        return set_verify(x, v, t);
    if (strcmp(ks, "min_version") == 0)
        return set_version(x, v, t);
    if (strcmp(ks, "ciphers") == 0)
        return set_str(x, v, ks, &t->ciphers);
    if (strcmp(ks, "ciphersuites") == 0)
        return set_str(x, v, ks, &t->ciphersuites);
    if (strcmp(ks, "alpn") == 0)
        return set_alpn(x, v, t);
    if (strcmp(ks, "certificates") == 0)
        return load_certs(x, v, dir, t);
    if (strcmp(ks, "session_tickets") == 0)
        return set_bool(x, v, ks, &t->session_tickets);
    if (strcmp(ks, "session_timeout") == 0)
        return set_timeout(x, v, t);
    return sl__config_fail(x, k,
                           "unknown tls key '%s' (cert_file, key_file, ca_file, verify_client, "
                           "min_version, ciphers, ciphersuites, alpn, certificates, "
                           "session_tickets, session_timeout)",
                           ks);
}

/* Both forms at once, or neither: which certificate would be the default? */
static int check_forms(struct sl__config_ctx *x, yaml_node_t *v, struct sl__tls *t,
                       struct sl__tls_cert *one)
{
    bool direct = one->cert_file != NULL || one->key_file != NULL;

    if (direct && t->n_certs > 0)
        return sl__config_fail(x, v,
                               "tls: give cert_file and key_file, or tls.certificates, not both");
    if (t->n_certs > 0)
        return 0;
    if (one->cert_file == NULL || one->key_file == NULL)
        return sl__config_fail(x, v, "tls needs cert_file and key_file (or tls.certificates)");
    t->certs[0] = *one;
    t->n_certs = 1;
    memset(one, 0, sizeof(*one));
    return 0;
}

int sl__tls_config_load(struct sl__config_ctx *x, yaml_node_t *v, const char *dir,
                        struct sl__tls **out)
{
    yaml_document_t *doc = sl__config_doc(x);
    struct sl__tls *t = sl__xzalloc(sizeof(*t));
    struct sl__tls_cert one = {0};
    int r = 0;

    *out = t;
    t->line = v->start_mark.line + 1;
    t->col = v->start_mark.column + 1;
    if (parse_version(DEF_MIN_VERSION, &t->min_version) != 0)
        abort(); /* a default that does not parse is a bug here */
    t->ciphers = sl__xstrndup(DEF_CIPHERS, strlen(DEF_CIPHERS));
    t->session_tickets = true;
    t->session_timeout_ms = DEF_SESSION_TIMEOUT_MS;
    pthread_mutex_init(&t->mu, NULL);
    if (v->type != YAML_MAPPING_NODE)
        return sl__config_fail(x, v, "tls is a mapping: {cert_file, key_file, ...}");
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        const char *ks = sl__config_scalar(k);
        if (ks == NULL)
            r |= sl__config_fail(x, k, "keys are plain words");
        else
            r |= load_key(x, ks, k, yaml_document_get_node(doc, p->value), dir, t, &one);
    }
    if (r == 0)
        r = check_forms(x, v, t, &one);
    if (r == 0 && t->verify != SL__TLS_VERIFY_NONE && t->ca_file == NULL)
        r = sl__config_fail(x, v,
                            "tls.verify_client: %s needs tls.ca_file (the CAs a client "
                            "certificate must chain to)",
                            verify_names[t->verify]);
    free(one.cert_file);
    free(one.key_file);
    return r != 0 ? SL_EINVAL : 0;
}

void sl__tls_free(struct sl__tls *t)
{
    if (t == NULL)
        return;
    sl__tls_release(t);
    for (size_t i = 0; i < t->n_certs; i++) {
        struct sl__tls_cert *tc = &t->certs[i];
        free(tc->cert_file);
        free(tc->key_file);
        for (size_t j = 0; j < tc->n_names; j++)
            free(tc->names[j]);
    }
    free(t->ca_file);
    free(t->ciphers);
    free(t->ciphersuites);
    OPENSSL_cleanse(t->keys, sizeof(t->keys));
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void sl__tls_help(FILE *f)
{
    sl__keytab_help_line(f, "listeners.tls.cert_file", "(none)",
                         "a listener's TLS: its certificate chain (PEM); the listener then "
                         "serves only TLS (docs/tls.md)");
    sl__keytab_help_line(f, "listeners.tls.key_file", "(none)", "its private key (PEM)");
    sl__keytab_help_line(f, "listeners.tls.certificates", "[]",
                         "several certificates chosen by SNI: [{cert_file, key_file, "
                         "server_names}], the first the default");
    sl__keytab_help_line(f, "listeners.tls.ca_file", "(none)",
                         "CAs client certificates must chain to (PEM)");
    sl__keytab_help_line(f, "listeners.tls.verify_client", "none",
                         "none | optional | require: a client certificate");
    sl__keytab_help_line(f, "listeners.tls.min_version", DEF_MIN_VERSION,
                         "\"1.2\" | \"1.3\"; older versions are never offered");
    sl__keytab_help_line(f, "listeners.tls.ciphers", DEF_CIPHERS,
                         "TLS 1.2 cipher list (OpenSSL syntax)");
    sl__keytab_help_line(f, "listeners.tls.ciphersuites", "(openssl)",
                         "TLS 1.3 suites; default: OpenSSL's (AES-256-GCM, ChaCha20-Poly1305, "
                         "AES-128-GCM)");
    sl__keytab_help_line(f, "listeners.tls.alpn", "(computed)",
                         "ALPN ids offered, in order; default: http/1.1 for http1, h2 for grpc");
    sl__keytab_help_line(f, "listeners.tls.session_tickets", "true",
                         "resumption by stateless session tickets (TLS 1.2 and 1.3)");
    sl__keytab_help_line(f, "listeners.tls.session_timeout", DEF_SESSION_TIMEOUT,
                         "a session ticket's lifetime; its key encrypts for half of it");
}
