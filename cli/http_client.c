/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_client.c - sl__http_call() over libcurl's easy interface: one
 * handle per call, the body collected in memory up to a cap.
 *
 * libcurl rather than a socket of our own: it is a well-kept Debian
 * library that already does what an admin client needs and is easy to get
 * wrong (name resolution, IPv6, https to a terminating proxy in front of
 * the admin listener, proxies from the environment, timeouts on every
 * phase, chunked answers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "http_client.h"
#include "sluice.h"

#define ANSWER_MAX         (16u << 20) /* a rules listing of a large database */
#define CONNECT_TIMEOUT_MS 5000L
#define TIMEOUT_MS         60000L /* the server stores, publishes to the fleet and reloads first */

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct sl__http_answer *a = arg;
    size_t len = size * n;
    char *b;

    if (a->len + len > ANSWER_MAX)
        return 0; /* curl then fails the transfer */
    b = realloc(a->body, a->len + len + 1);
    if (b == NULL)
        return 0;
    memcpy(b + a->len, p, len);
    a->len += len;
    b[a->len] = '\0';
    a->body = b;
    return len;
}

int sl__http_call(const char *method, const char *url, const char *token, const char *json,
                  struct sl__http_answer *out, char *err, size_t errlen)
{
    char curl_err[CURL_ERROR_SIZE] = "", *auth = NULL;
    struct curl_slist *hdrs = NULL;
    CURL *h = curl_easy_init();
    CURLcode rc = CURLE_OUT_OF_MEMORY;

    memset(out, 0, sizeof(*out));
    if (h == NULL)
        goto out;
    if (token != NULL) {
        size_t n = strlen(token) + 32;
        auth = malloc(n);
        if (auth == NULL)
            goto out;
        snprintf(auth, n, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, auth);
    }
    if (json != NULL)
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "sluice/" SLUICE_VERSION);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    if (json != NULL) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json));
    }
    rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
out:
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s: %s", url, curl_err[0] ? curl_err : curl_easy_strerror(rc));
        free(out->body);
        memset(out, 0, sizeof(*out));
    } else if (out->body == NULL) {
        out->body = calloc(1, 1); /* an empty body */
    }
    curl_slist_free_all(hdrs);
    free(auth);
    curl_easy_cleanup(h);
    return rc == CURLE_OK && out->body != NULL ? 0 : -1;
}
