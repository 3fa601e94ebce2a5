/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_client.c - one request to a running sluiced's admin API through
 * libcurl (http_client.h). libcurl brings what a hand-written client would
 * have to grow: IPv6 and host names, chunked answers, https when sluiced
 * sits behind a TLS proxy, and timeouts - from a package Debian maintains.
 *
 * It does not retry, follow redirects or keep connections between calls.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli.h"
#include "http_client.h"

#define ANSWER_MAX (64u << 20) /* a larger answer is refused */

int sl__cli_http_token_file(struct sl__cli_http *h, const char *path)
{
    char *text;
    size_t len;

    if (sl__cli_read_file(path, &text, &len) != 0)
        return -1;
    text[strcspn(text, "\r\n")] = '\0';
    h->token = text;
    return 0;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct sl__cli_answer *a = arg;
    size_t add = size * n;
    char *b;

    if (a->len + add > ANSWER_MAX)
        return 0; /* libcurl stops with CURLE_WRITE_ERROR */
    b = realloc(a->body, a->len + add + 1);
    if (b == NULL)
        return 0;
    memcpy(b + a->len, p, add);
    a->body = b;
    a->len += add;
    b[a->len] = '\0';
    return add;
}

int sl__cli_http(const struct sl__cli_http *h, const char *method, const char *path,
                 const char *body, struct sl__cli_answer *a)
{
    CURL *curl = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    char *url = NULL, *auth = NULL;
    char err[CURL_ERROR_SIZE] = "";
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    size_t ulen = strlen(h->server) + strlen(path) + 1;

    memset(a, 0, sizeof(*a));
    url = malloc(ulen);
    if (curl == NULL || url == NULL)
        goto out;
    snprintf(url, ulen, "%s%s", h->server, path);
    if (h->token != NULL) {
        size_t alen = strlen(h->token) + 32;
        auth = malloc(alen);
        if (auth == NULL)
            goto out;
        snprintf(auth, alen, "Authorization: Bearer %s", h->token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    if (body != NULL)
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, h->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    if (body != NULL)
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    rc = curl_easy_perform(curl);
    if (rc == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a->status);
out:
    if (rc != CURLE_OK) {
        fprintf(stderr, "sluice: %s: %s\n", h->server, err[0] ? err : curl_easy_strerror(rc));
        sl__cli_http_free(a);
    } else if (a->body == NULL) {
        a->body = calloc(1, 1);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(curl);
    free(auth);
    free(url);
    return rc == CURLE_OK && a->body != NULL ? 0 : -1;
}

void sl__cli_http_free(struct sl__cli_answer *a)
{
    free(a->body);
    memset(a, 0, sizeof(*a));
}

void sl__cli_http_done(struct sl__cli_http *h)
{
    free(h->token);
    h->token = NULL;
}
