/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rules_remote.c - the rules commands against a running sluiced's admin
 * API (rules_remote.h): the request, then the answer turned into the words
 * the same command prints on a database file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http_client.h"
#include "cli.h"
#include "rules_remote.h"

int sl__remote_token(const char *path, char *token, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n;

    if (f == NULL) {
        fprintf(stderr, "sluice: --token-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    n = fgets(token, (int)cap, f) != NULL ? strcspn(token, "\r\n") : 0;
    fclose(f);
    token[n] = '\0';
    if (n == 0) {
        fprintf(stderr, "sluice: --token-file %s: the first line is empty\n", path);
        return -1;
    }
    return 0;
}

/* base URL + path, without a doubled '/'; malloc'd. */
static char *url_of(const struct sl__remote *r, const char *path, const char *id)
{
    size_t n = strlen(r->url);
    char *u;

    while (n > 0 && r->url[n - 1] == '/')
        n--;
    size_t cap = n + strlen(path) + (id ? strlen(id) : 0) + 1;

    u = malloc(cap);
    if (u != NULL)
        snprintf(u, cap, "%.*s%s%s", (int)n, r->url, path, id ? id : "");
    return u;
}

/* One call: 0 with *a and its parsed body (*doc, may be NULL), or -1 with
 * stderr saying why nothing came back. */
static int call(const struct sl__remote *r, const char *method, const char *path, const char *id,
                const char *json, struct sl__http_answer *a, cJSON **doc)
{
    char err[512];
    char *url = url_of(r, path, id);
    int rc = url != NULL ? sl__http_call(method, url, r->token, json, a, err, sizeof(err)) : -1;

    if (url == NULL)
        snprintf(err, sizeof(err), "out of memory");
    free(url);
    if (rc != 0) {
        fprintf(stderr, "sluice: %s %s: %s\n", method, r->url, err);
        return -1;
    }
    *doc = cJSON_ParseWithLength(a->body, a->len);
    return 0;
}

/* An answer that is not a success: what went wrong, in the server's words
 * when it gave some, and what to do for the usual ones. */
static void print_failure(const struct sl__remote *r, const struct sl__http_answer *a,
                          const cJSON *doc)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    const cJSON *diags = cJSON_GetObjectItemCaseSensitive(doc, "diagnostics"), *d;
    const char *why = cJSON_IsString(e) ? e->valuestring : "no explanation";

    cJSON_ArrayForEach(d, diags)
    {
        if (cJSON_IsString(d))
            fprintf(stderr, "%s\n", d->valuestring);
    }
    if (a->status == 401 || a->status == 403)
        fprintf(stderr,
                "sluice: %s refused the admin token (%ld %s); give the right one with "
                "--token-file\n",
                r->url, a->status, why);
    else if (a->status == 404 && e == NULL)
        fprintf(stderr,
                "sluice: %s has no admin API here (404): use the URL of the listener "
                "that serves it (admin: true, or a loopback one)\n",
                r->url);
    else
        fprintf(stderr, "sluice: %s answered %ld: %s\n", r->url, a->status, why);
}

/* "stored, applied; published or not" from a 200's body. */
static void print_applied(const cJSON *doc)
{
    const cJSON *pub = cJSON_GetObjectItemCaseSensitive(doc, "published");

    if (cJSON_IsBool(pub) && cJSON_IsFalse(pub))
        fprintf(stderr, "sluice: warning: the server applied it but could not publish it to the "
                        "other nodes (see its log: rules.publish_failed)\n");
    else if (cJSON_IsBool(pub))
        printf("published to the other nodes\n");
}

int sl__remote_add(const struct sl__remote *r, const char *id, const char *domain, const char *yaml,
                   bool replace)
{
    struct sl__http_answer a;
    cJSON *body = cJSON_CreateObject(), *doc = NULL;
    char *json;
    int rc = 1;

    if (!replace)
        cJSON_AddStringToObject(body, "id", id);
    cJSON_AddStringToObject(body, "yaml", yaml);
    json = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (json == NULL)
        return 1;
    if (call(r, replace ? "PUT" : "POST", replace ? "/v1/rules/" : "/v1/rules", replace ? id : NULL,
             json, &a, &doc) != 0)
        goto out;
    if (a.status == 200) {
        printf("stored rule '%s' (domain %s) on %s, applied\n", id, domain, r->url);
        print_applied(doc);
        rc = 0;
    } else if (a.status == 409 && !replace && strstr(a.body, "exists") != NULL) {
        fprintf(stderr, "sluice: rule '%s' already exists on %s; add --replace to replace it\n", id,
                r->url);
    } else {
        print_failure(r, &a, doc);
    }
    free(a.body);
out:
    cJSON_Delete(doc);
    cJSON_free(json);
    return rc;
}

int sl__remote_rm(const struct sl__remote *r, const char *id)
{
    struct sl__http_answer a;
    cJSON *doc = NULL;
    int rc = 1;

    if (call(r, "DELETE", "/v1/rules/", id, NULL, &a, &doc) != 0)
        return 1;
    if (a.status == 200) {
        printf("removed rule '%s' on %s, applied\n", id, r->url);
        print_applied(doc);
        rc = 0;
    } else if (a.status == 404 && cJSON_GetObjectItemCaseSensitive(doc, "error") != NULL &&
               strstr(a.body, "no rule") != NULL) {
        fprintf(stderr, "sluice: %s has no rule '%s'\n", r->url, id);
    } else {
        print_failure(r, &a, doc);
    }
    free(a.body);
    cJSON_Delete(doc);
    return rc;
}

int sl__remote_ls(const struct sl__remote *r, bool full)
{
    struct sl__http_answer a;
    cJSON *doc = NULL, *row;
    int rc = 1;

    if (call(r, "GET", "/v1/rules", NULL, NULL, &a, &doc) != 0)
        return 1;
    if (a.status != 200 || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "rules"))) {
        print_failure(r, &a, doc);
        goto out;
    }
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "rules"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(row, "id");
        const cJSON *dom = cJSON_GetObjectItemCaseSensitive(row, "domain");
        const cJSON *yaml = cJSON_GetObjectItemCaseSensitive(row, "yaml");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(row, "updated_ms");
        if (!cJSON_IsString(id) || !cJSON_IsString(dom) || !cJSON_IsString(yaml) ||
            !cJSON_IsNumber(ms))
            continue;
        char when[32];
        sl__cli_iso_ms((int64_t)ms->valuedouble, when, sizeof(when));
        printf("%s\t%s\t%s\n", id->valuestring, dom->valuestring, when);
        if (full) {
            size_t n = strlen(yaml->valuestring);
            printf("%s%s---\n", yaml->valuestring,
                   n > 0 && yaml->valuestring[n - 1] == '\n' ? "" : "\n");
        }
    }
    rc = 0;
out:
    free(a.body);
    cJSON_Delete(doc);
    return rc;
}
