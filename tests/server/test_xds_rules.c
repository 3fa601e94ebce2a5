/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_xds_rules.c - RateLimitConfig resources rendered as rules YAML
 * (server/grpc/xds_rules.c) and read by the library's loader: every field
 * arrives, strings with quotes, backslashes, newlines and YAML syntax stay
 * the strings they were (no value changes the document's shape), and what
 * is not a RateLimitConfig is refused with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "google/protobuf/any.pb-c.h"
#include "ratelimit/config/ratelimit/v3/rls_conf.pb-c.h"
#include "sluice.h"
#include "xds.h"

typedef Ratelimit__Config__Ratelimit__V3__RateLimitConfig Config;
typedef Ratelimit__Config__Ratelimit__V3__RateLimitDescriptor Descr;
typedef Ratelimit__Config__Ratelimit__V3__RateLimitPolicy Policy;

/* One packed config as the Any a DiscoveryResponse holds. */
static Google__Protobuf__Any *pack(const Config *c, const char *type_url)
{
    Google__Protobuf__Any *a = calloc(1, sizeof(*a));
    google__protobuf__any__init(a);
    a->type_url = (char *)type_url;
    a->value.len = ratelimit__config__ratelimit__v3__rate_limit_config__get_packed_size(c);
    a->value.data = malloc(a->value.len + 1);
    ratelimit__config__ratelimit__v3__rate_limit_config__pack(c, a->value.data);
    return a;
}

static void unpack_free(Google__Protobuf__Any *a)
{
    free(a->value.data);
    free(a);
}

struct seen {
    char paths[8][256];
    uint64_t requests[8];
    bool unlimited[8];
    int n;
};

static void on_limit(void *arg, const char *path, const struct sl_limit *l, bool quota_mode,
                     bool unlimited)
{
    struct seen *s = arg;

    (void)quota_mode;
    if (s->n < 8) {
        snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", path);
        s->requests[s->n] = l != NULL ? l->requests : 0;
        s->unlimited[s->n] = unlimited;
    }
    s->n++;
}

static sl_rules *load(const struct sl__xds_text *t, size_t n)
{
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    for (size_t i = 0; i < n; i++)
        sl_rules_builder_add_yaml(b, t[i].yaml, t[i].len, t[i].name, SL_SRC_FILE);
    for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
        fprintf(stderr, "%s\n", sl_rules_builder_diag(b, i));
    assert_int_equal(sl_rules_builder_ndiags(b), 0);
    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    sl_rules_builder_free(b);
    return r;
}

static void test_fields_and_hostile_strings(void **state)
{
    Policy p1 = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_POLICY__INIT;
    Policy p2 = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_POLICY__INIT;
    Descr child = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_DESCRIPTOR__INIT;
    Descr top = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_DESCRIPTOR__INIT;
    Descr *children[] = {&child}, *tops[] = {&top};
    Config c = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_CONFIG__INIT;
    const char *dom = "we\"b\\\n- key: evil";
    Google__Protobuf__Any *any;
    struct sl__xds_text *t = NULL;
    size_t n = 0;
    char err[256];
    struct seen s = {0};
    sl_rules *r;

    (void)state;
    p1.unit = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_UNIT__WEEK;
    p1.requests_per_unit = 7;
    p1.name = "weekly";
    p2.unlimited = true;
    child.key = "path";
    child.value = "/a: {b}\n# c";
    child.rate_limit = &p2;
    top.key = "user";
    top.value = "'x'";
    top.rate_limit = &p1;
    top.shadow_mode = true;
    top.n_descriptors = 1;
    top.descriptors = children;
    c.name = "cfg";
    c.domain = (char *)dom;
    c.n_descriptors = 1;
    c.descriptors = tops;
    any = pack(&c, SL__XDS_TYPE_URL);
    assert_int_equal(sl__xds_render(&any, 1, &t, &n, err, sizeof(err)), SL_OK);
    assert_int_equal(n, 1);
    assert_string_equal(t[0].name, "cfg");
    r = load(t, n);
    assert_true(sl_rules_has_domain(r, (struct sl_str){dom, strlen(dom)}));
    assert_false(sl_rules_has_domain(r, (struct sl_str){"evil", 4}));
    sl_rules_foreach_limit(r, on_limit, &s);
    assert_int_equal(s.n, 2); /* the weekly limit, and the unlimited child */
    assert_int_equal(s.requests[0], 7);
    assert_true(s.unlimited[1]);
    sl_rules_unref(r);
    sl__xds_texts_free(t, n);
    unpack_free(any);
}

static void test_no_unit_and_bad_type_are_refused(void **state)
{
    Policy p = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_POLICY__INIT;
    Descr d = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_DESCRIPTOR__INIT;
    Descr *ds[] = {&d};
    Config c = RATELIMIT__CONFIG__RATELIMIT__V3__RATE_LIMIT_CONFIG__INIT;
    Google__Protobuf__Any *any;
    struct sl__xds_text *t = NULL;
    size_t n = 0;
    char err[256];
    sl_rules_builder *b;

    (void)state;
    p.requests_per_unit = 3; /* unit left UNKNOWN */
    d.key = "k";
    d.rate_limit = &p;
    c.domain = "web";
    c.n_descriptors = 1;
    c.descriptors = ds;
    any = pack(&c, SL__XDS_TYPE_URL);
    assert_int_equal(sl__xds_render(&any, 1, &t, &n, err, sizeof(err)), SL_OK);
    assert_string_equal(t[0].name, "web"); /* no name: the domain names it */
    b = sl_rules_builder_new();
    sl_rules_builder_add_yaml(b, t[0].yaml, t[0].len, "xds:web", SL_SRC_FILE);
    assert_true(sl_rules_builder_ndiags(b) > 0);
    assert_non_null(strstr(sl_rules_builder_diag(b, 0), "rate_limit needs a unit"));
    sl_rules_builder_free(b);
    sl__xds_texts_free(t, n);
    unpack_free(any);

    any = pack(&c, "type.googleapis.com/envoy.config.cluster.v3.Cluster");
    assert_int_equal(sl__xds_render(&any, 1, &t, &n, err, sizeof(err)), SL_EPARSE);
    assert_null(t);
    assert_non_null(strstr(err, "not a type.googleapis.com/ratelimit.config.ratelimit.v3"));
    unpack_free(any);

    any = pack(&c, SL__XDS_TYPE_URL);
    any->value.data[0] = 0xff; /* not a message any more */
    any->value.len = 1;
    assert_int_equal(sl__xds_render(&any, 1, &t, &n, err, sizeof(err)), SL_EPARSE);
    assert_non_null(strstr(err, "not a valid RateLimitConfig"));
    unpack_free(any);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_and_hostile_strings),
        cmocka_unit_test(test_no_unit_and_bad_type_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
