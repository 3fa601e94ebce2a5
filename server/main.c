/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * main.c - sluiced's command line: read the configuration, then either test
 * it (-t) or run the server. Everything else lives in server.c and below.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "server.h"
#include "token.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: sluiced [-c FILE] [-t] [--test-clock START_MS]\n"
               "  -c, --config FILE       configuration (YAML); defaults below without it\n"
               "  -t, --test              check the configuration and its rules, then exit\n"
               "                          (0 valid, 1 invalid: every file:line:col on stderr)\n"
               "  --test-clock START_MS   freeze the clock at START_MS (Unix ms); tests move it\n"
               "                          with SL.DEBUG CLOCK ADVANCE ms (refused otherwise)\n"
               "  -h, --help              this text;  -V, --version  the version\n"
               "signals: SIGHUP reloads the rules; SIGTERM/SIGINT stop gracefully (exit 0).\n\n");
    sl__config_help(f);
}

static int parse_ms(const char *s, int64_t *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > INT64_MAX / SL_NS_PER_MS)
        return -1;
    *out = v;
    return 0;
}

/* A start refused for the configuration: each error is a log line
 * (config.invalid), in the format the file asks for when it got that far,
 * so that a log shipper sees why the service did not start. */
static void log_config_errors(const struct sl__config *cfg, char *err)
{
    sl__log_set_format(cfg->log_format);
    for (char *line = strtok(err, "\n"); line != NULL; line = strtok(NULL, "\n"))
        sl__err("config.invalid", "%s", line);
}

int main(int argc, char **argv)
{
    struct sl__config cfg;
    const char *path = NULL;
    bool test = false;
    char err[SL__CONFIG_ERR_MAX];
    int done = -1; /* the exit code once the command line alone has answered */

    sl__config_init(&cfg);
    for (int i = 1; i < argc && done < 0; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(a, "-t") || !strcmp(a, "--test")) {
            test = true;
        } else if (!strcmp(a, "--test-clock") && i + 1 < argc) {
            if (parse_ms(argv[++i], &cfg.test_clock_start_ms) != 0) {
                fprintf(stderr, "sluiced: --test-clock takes Unix milliseconds (got '%s')\n",
                        argv[i]);
                done = 2;
            }
            cfg.test_clock = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            done = 0;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("sluiced %s\n", SLUICE_VERSION);
            done = 0;
        } else {
            fprintf(stderr, "sluiced: unknown or incomplete option '%s'\n", a);
            fprintf(stderr, "Try 'sluiced --help' for the options.\n");
            done = 2;
        }
    }
    if (done >= 0) { /* answered from the command line alone */
        sl__config_free(&cfg);
        return done;
    }
    if (test) { /* the check sluice check -c makes too: nothing started, nothing written */
        int r = sl__check_config(path, stderr, NULL);
        fprintf(stderr, "sluiced: configuration %s %s\n", path ? path : "(defaults)",
                r == 0 ? "is valid" : "is NOT valid");
        sl__config_free(&cfg);
        return r;
    }
    if (path != NULL && sl__config_load(&cfg, path, err, sizeof(err)) != 0) {
        log_config_errors(&cfg, err);
        sl__config_free(&cfg);
        return 1;
    }
    if (path == NULL)
        sl__config_finish(&cfg);
    sl__log_set_level(cfg.log_level);
    sl__log_set_format(cfg.log_format);
    if (sl__token_load(&cfg, true, err, sizeof(err)) != SL_OK) {
        sl__err("admin.token_failed", "%s", err);
        sl__config_free(&cfg);
        return 1;
    }
    if (cfg.test_clock) {
        sl__clock_set_test(cfg.test_clock_start_ms);
        sl__warn("server.test_clock", "test clock frozen at %lld ms: for tests only",
                 (long long)cfg.test_clock_start_ms);
    }
    return sl__server_run(&cfg);
}
