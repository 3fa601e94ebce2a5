/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * embed.c - libsluice inside your own program: rules from YAML, one
 * limiter, a check per request. Build it against the installed library
 * (cc embed.c $(pkg-config --cflags --libs sluice)) or, in the source
 * tree, against the built one:
 *
 *     cc -I include examples/embed.c build/lib/libsluice.a -lyaml -lm -o build/embed
 *     build/embed
 */
#include <sluice.h>
#include <stdio.h>
#include <string.h>

static const char rules_yaml[] = "domain: api\n"
                                 "descriptors:\n"
                                 "  - key: user\n"
                                 "    rate_limit: {unit: minute, requests_per_unit: 3}\n";

int main(void)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *rules = NULL;
    sl_limiter *lim = NULL;
    struct sl_limiter_config lc;

    if (b == NULL ||
        sl_rules_builder_add_yaml(b, rules_yaml, strlen(rules_yaml), "embed.yaml", SL_SRC_FILE) !=
            SL_OK ||
        sl_rules_build(b, &rules) != SL_OK) {
        fprintf(stderr, "embed: the rules do not build\n");
        return 1;
    }
    sl_rules_builder_free(b);
    sl_limiter_config_init(&lc);
    memcpy(lc.table.secret, "my 16-byte key!!", 16); /* use random bytes */
    if (sl_limiter_new(&lc, &lim) != SL_OK)
        return 1;

    struct sl_entry entry = {{"user", 4}, {"alice", 5}};
    struct sl_descriptor desc = {&entry, 1, -1, NULL};
    for (int i = 1; i <= 4; i++) {
        /* the time is the caller's: here one request a second */
        struct sl_request req = {{"api", 3}, &desc, 1, 1, (1700000000 + i) * SL_NS_PER_S};
        struct sl_result res;
        if (sl_limiter_check(lim, rules, &req, &res) != SL_OK)
            return 1;
        printf("request %d: %s, %lld remaining\n", i, sl_verdict_name(res.verdict),
               (long long)res.statuses[0].d.remaining);
    }
    sl_limiter_free(lim);
    sl_rules_unref(rules);
    return 0;
}
