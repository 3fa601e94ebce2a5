/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * cmd_top.c - `sluice top --server URL [--token-file F] [--interval S]
 * [--once] [--json]`: the dashboard's view in a terminal, from a running
 * sluiced's GET /v1/stats - per (domain, limit) the current rates, the top
 * limited keys, the store's health and round trip, the kill switches -
 * redrawn every interval; --once draws once, --json prints the view as
 * one JSON document for scripts (docs/operations.md lists its fields).
 *
 * It changes nothing on the server and keeps no state between refreshes.
 */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "cli.h"
#include "http_client.h"
#include "rules_remote.h"

static const char *const outcomes[] = {"allow", "delay", "deny", "shadow_deny"};

struct opts {
    const char *server;
    const char *token_file;
    double interval_s;
    unsigned top;
    bool once;
    bool json;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void help(FILE *out)
{
    fprintf(out,
            "usage: sluice top --server URL [--token-file FILE] [--interval SECONDS] [--top N]\n"
            "                  [--once] [--json]\n\n"
            "Show what a running sluiced limits now, from its admin listener's GET /v1/stats:\n"
            "per domain and limit the decisions per second (over the last 10 s), the top\n"
            "limited keys (the last one to two stats.top_window), the store's health and\n"
            "round trip, the kill switches. Redrawn every --interval (1 s) until Ctrl-C;\n"
            "--once draws once; --json prints the view as JSON (with --once, for scripts).\n"
            "--token-file holds the admin token (admin.token) on its first line.\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        {"server", required_argument, NULL, 's'},   {"token-file", required_argument, NULL, 't'},
        {"interval", required_argument, NULL, 'i'}, {"top", required_argument, NULL, 'n'},
        {"once", no_argument, NULL, '1'},           {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        char *end = NULL;
        if (c == 's')
            o->server = optarg;
        else if (c == 't')
            o->token_file = optarg;
        else if (c == 'i') {
            o->interval_s = strtod(optarg, &end);
            if (*end != '\0' || !(o->interval_s >= 0.1 && o->interval_s <= 3600))
                return 2;
        } else if (c == 'n') {
            unsigned long n = strtoul(optarg, &end, 10);
            if (*end != '\0' || n < 1 || n > 100)
                return 2;
            o->top = (unsigned)n;
        } else if (c == '1')
            o->once = true;
        else if (c == 'j')
            o->json = true;
        else if (c == 'h')
            return -1;
        else
            return 2;
    }
    return o->server != NULL && optind == argc ? 0 : 2;
}

/* ------------------------------------------------------------ the view as JSON */

static double num(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static cJSON *item(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* The sum of the last `n` numbers of array a, per second. */
static double recent(const cJSON *a, int n)
{
    int size = cJSON_GetArraySize(a);
    double sum = 0;

    for (int i = size > n ? size - n : 0; i < size; i++)
        sum += cJSON_GetArrayItem(a, i)->valuedouble;
    return sum / n;
}

/* What `sluice top --json` prints: the view without the per-second arrays. */
static cJSON *summary(const cJSON *doc, const char *server)
{
    cJSON *out = cJSON_CreateObject(), *limits = cJSON_AddArrayToObject(out, "limits");
    const cJSON *st = item(doc, "store"), *s;
    cJSON *store = cJSON_AddObjectToObject(out, "store");

    cJSON_AddStringToObject(out, "server", server);
    cJSON_AddNumberToObject(out, "now", num(doc, "now"));
    cJSON_AddNumberToObject(out, "top_window_ms", num(doc, "top_window_ms"));
    cJSON_AddItemToObject(out, "keys", cJSON_Duplicate(item(doc, "keys"), true));
    cJSON_AddItemToObject(store, "type", cJSON_Duplicate(item(st, "type"), true));
    cJSON_AddItemToObject(store, "ready", cJSON_Duplicate(item(st, "ready"), true));
    cJSON_AddNumberToObject(store, "p50_ns", num(st, "p50_ns_recent"));
    cJSON_AddNumberToObject(store, "p99_ns", num(st, "p99_ns_recent"));
    cJSON_AddNumberToObject(store, "calls_per_s", recent(item(st, "calls"), 10));
    cJSON_AddNumberToObject(store, "failures_per_s", recent(item(st, "failures"), 10));
    cJSON_AddItemToObject(store, "state", cJSON_Duplicate(item(st, "state"), true));
    cJSON_ArrayForEach(s, item(doc, "series"))
    {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddItemToObject(l, "domain", cJSON_Duplicate(item(s, "domain"), true));
        cJSON_AddItemToObject(l, "limit", cJSON_Duplicate(item(s, "limit"), true));
        cJSON_AddItemToObject(l, "rate", cJSON_Duplicate(item(s, "rate"), true));
        cJSON_AddItemToObject(l, "total", cJSON_Duplicate(item(s, "total"), true));
        cJSON_AddItemToObject(l, "top", cJSON_Duplicate(item(s, "top"), true));
        cJSON_AddItemToArray(limits, l);
    }
    cJSON_AddItemToObject(out, "killswitches", cJSON_Duplicate(item(doc, "killswitches"), true));
    cJSON_AddNumberToObject(out, "dropped", num(doc, "dropped"));
    return out;
}

/* ------------------------------------------------------------ the terminal */

static const char *str(const cJSON *o, const char *name)
{
    const cJSON *v = item(o, name);

    return cJSON_IsString(v) ? v->valuestring : "";
}

static void fmt_ns(char *buf, size_t n, double ns)
{
    if (ns <= 0)
        snprintf(buf, n, "-");
    else if (ns >= 1e6)
        snprintf(buf, n, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, n, "%.1f us", ns / 1e3);
}

/* The terminal's size: stdout's when it is one, else $COLUMNS and $LINES,
 * else 80 x 24; at least 40 x 12. */
struct term {
    int cols, rows;
};

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    long n = v != NULL ? strtol(v, NULL, 10) : 0;

    return n > 0 && n < 10000 ? (int)n : dflt;
}

static struct term term_size(void)
{
    struct term t = {env_int("COLUMNS", 80), env_int("LINES", 24)};
    struct winsize ws;

    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
        ws.ws_row > 0) {
        t.cols = ws.ws_col;
        t.rows = ws.ws_row;
    }
    t.cols = t.cols < 40 ? 40 : t.cols;
    t.rows = t.rows < 12 ? 12 : t.rows;
    return t;
}

/* One line, cut to the width (a line one column short of it: a terminal
 * that wraps at the last column would scroll). */
static void line(FILE *out, const struct term *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void line(FILE *out, const struct term *t, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int max = t->cols - 1 < (int)sizeof(buf) - 1 ? t->cols - 1 : (int)sizeof(buf) - 1;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(out, "%.*s\n", max, buf);
}

/* The view in t's size: the heading (3 lines), the limits (one each), the
 * top limited keys, the kill switches (1): rows beyond the height are left
 * out and counted ("... and 4 more"), the limits given at most half of
 * what is left when keys are waiting; names cut to the width. */
static void draw(FILE *out, const cJSON *v, bool clear, struct term t)
{
    const cJSON *st = item(v, "store"), *l, *k, *sw;
    char p50[32], p99[32], when[32], sws[512];
    time_t now = (time_t)num(v, "now");
    struct tm tm;
    int name_w = t.cols - 1 - 4 * 9, n_limits = 0, n_keys = 0, room, lim_room, key_room, shown;
    size_t at = 0;

    name_w = name_w < 16 ? 16 : name_w > 60 ? 60 : name_w;
    cJSON_ArrayForEach(l, item(v, "limits"))
    {
        n_limits++;
        n_keys += cJSON_GetArraySize(item(l, "top"));
    }
    /* 3 heading, 1 limits' heading, blank + 2 keys' heading, blank + switches */
    room = t.rows - 1 - 3 - 1 - 3 - 2;
    room = room < 2 ? 2 : room;
    lim_room = n_keys > 0 && n_limits > room / 2 ? room / 2 : room;
    lim_room = lim_room > n_limits ? n_limits : lim_room;
    key_room = room - lim_room;

    fmt_ns(p50, sizeof(p50), num(st, "p50_ns"));
    fmt_ns(p99, sizeof(p99), num(st, "p99_ns"));
    strftime(when, sizeof(when), "%H:%M:%S", gmtime_r(&now, &tm));
    if (clear)
        fputs("\x1b[H\x1b[2J", out);
    line(out, &t, "sluice top - %s - %s UTC", str(v, "server"), when);
    line(out, &t, "store %s %s: round trip p50 %s p99 %s, %.1f calls/s, %.1f failures/s",
         str(st, "type"), cJSON_IsTrue(item(st, "ready")) ? "ready" : "NOT READY", p50, p99,
         num(st, "calls_per_s"), num(st, "failures_per_s"));
    line(out, &t, "%s", "");
    line(out, &t, "%-*s %8s %8s %8s %8s", name_w, "DOMAIN / LIMIT", "ALLOW/s", "DELAY/s", "DENY/s",
         "SHADOW/s");
    shown = 0;
    cJSON_ArrayForEach(l, item(v, "limits"))
    {
        char name[256];
        const cJSON *r = item(l, "rate");
        if (shown == lim_room - (n_limits > lim_room))
            break;
        snprintf(name, sizeof(name), "%s / %s", str(l, "domain"), str(l, "limit"));
        line(out, &t, "%-*.*s %8.1f %8.1f %8.1f %8.1f", name_w, name_w, name, num(r, outcomes[0]),
             num(r, outcomes[1]), num(r, outcomes[2]), num(r, outcomes[3]));
        shown++;
    }
    if (shown < n_limits)
        line(out, &t, "... and %d more limits (a taller terminal, or --json)", n_limits - shown);
    line(out, &t, "%s", "");
    line(out, &t, "TOP LIMITED KEYS (the last %.0f-%.0f s)", num(v, "top_window_ms") / 1000,
         2 * num(v, "top_window_ms") / 1000);
    line(out, &t, "%8s %6s  %-*s %s", "LIMITED", "+-", name_w / 2, "DOMAIN / LIMIT", "KEY");
    shown = 0;
    cJSON_ArrayForEach(l, item(v, "limits"))
    {
        char name[256];
        snprintf(name, sizeof(name), "%s / %s", str(l, "domain"), str(l, "limit"));
        cJSON_ArrayForEach(k, item(l, "top"))
        {
            if (shown < key_room - (n_keys > key_room))
                line(out, &t, "%8.0f %6.0f  %-*.*s %s", num(k, "count"), num(k, "error"),
                     name_w / 2, name_w / 2, name, str(k, "key"));
            shown++;
        }
    }
    if (n_keys > key_room)
        line(out, &t, "... and %d more keys", n_keys - (key_room - 1));
    line(out, &t, "%s", "");
    sws[0] = '\0';
    cJSON_ArrayForEach(sw, item(v, "killswitches"))
    {
        int n = snprintf(sws + at, sizeof(sws) - at, " %s=%s", str(sw, "domain"), str(sw, "mode"));
        if (n < 0 || (size_t)n >= sizeof(sws) - at)
            break;
        at += (size_t)n;
    }
    line(out, &t, "kill switches:%s", at > 0 ? sws : " none");
    fflush(out);
}

/* ------------------------------------------------------------ the loop */

/* The daemon asked: its admin listener and, when given, the token. */
struct top_client {
    const char *server;
    const char *token; /* NULL: none */
};

static int fetch(const struct top_client *h, const struct opts *o, cJSON **view)
{
    struct sl__http_answer a;
    char url[1024], err[256];
    cJSON *doc;

    *view = NULL;
    snprintf(url, sizeof(url), "%s/v1/stats?seconds=60&top=%u", h->server, o->top);
    if (sl__http_call("GET", url, h->token, NULL, &a, err, sizeof(err)) != 0) {
        fprintf(stderr, "sluice: %s: %s\n", h->server, err);
        return 1;
    }
    doc = cJSON_Parse(a.body);
    if (a.status != 200 || doc == NULL) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
        fprintf(stderr, "sluice: %s/v1/stats: %ld %s\n", o->server, a.status,
                cJSON_IsString(e) ? e->valuestring : "(not the stats of a sluiced)");
        cJSON_Delete(doc);
        free(a.body);
        return 1;
    }
    *view = summary(doc, o->server);
    cJSON_Delete(doc);
    free(a.body);
    return 0;
}

static int show(const struct top_client *h, const struct opts *o)
{
    int rc = 0;

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    while (!stop) {
        cJSON *view;
        rc = fetch(h, o, &view);
        if (rc == 0 && o->json) {
            char *text = cJSON_PrintUnformatted(view);
            if (text != NULL)
                puts(text);
            cJSON_free(text);
        } else if (rc == 0) {
            draw(stdout, view, !o->once, term_size());
        }
        cJSON_Delete(view);
        if (o->once || (rc != 0 && o->json))
            break;
        struct timespec ts = {(time_t)o->interval_s,
                              (long)((o->interval_s - (double)(time_t)o->interval_s) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return rc;
}

static int run(int argc, char **argv)
{
    struct opts o = {.interval_s = 1, .top = 10};
    struct top_client h = {0};
    char token[512];
    int r = parse_opts(argc, argv, &o);

    if (r != 0) {
        help(r < 0 ? stdout : stderr);
        return r < 0 ? 0 : 2;
    }
    if (o.token_file != NULL) {
        if (sl__remote_token(o.token_file, token, sizeof(token)) != 0)
            return 1;
        h.token = token;
    }
    h.server = o.server;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    r = show(&h, &o);
    curl_global_cleanup();
    return r;
}

const struct sl__cli_cmd sl__cmd_top = {"top", "watch what a running sluiced limits now", run,
                                        help};
