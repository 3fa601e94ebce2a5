/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_decide_contract.c - the decision path's one contract with its
 * callers (decide.h): a decision made inside the call is returned, and
 * `done` is never called inside the call that registered it - only later,
 * exactly once. Against a fake store that answers either inside its start
 * call (as the memory store does) or later (as a remote store does), for
 * sl__decide, sl__decide_matched and sl__decide_release, an error from the
 * store's start, and checks queued in a batch (answered when it ends).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "decide.h"
#include "server-t.h"
#include "store.h"
#include "worker-t.h"

/* ------------------------------------------------------- a fake store */

struct fake {
    struct sl__store base;
    bool later;      /* answer after the start call returns */
    int start_err;   /* the start call fails with this */
    sl__store_cb cb; /* an answer owed (later) */
    void *arg;
    struct sl_result res;
};

static int answer(struct fake *f, sl__store_cb cb, void *arg)
{
    struct sl_result on_stack; /* as the memory store's: gone when this returns */

    if (f->start_err != SL_OK)
        return f->start_err;
    if (f->later) {
        f->cb = cb;
        f->arg = arg;
        return SL_OK;
    }
    on_stack = f->res;
    cb(arg, SL_OK, &on_stack, SL__BY_STATE);
    memset(&on_stack, 0xa5, sizeof(on_stack)); /* what a later frame leaves there */
    return SL_OK;
}

static int f_check(struct sl__store *s, const struct sl__store_req *q, sl__store_cb cb, void *arg)
{
    (void)q;
    return answer((struct fake *)s, cb, arg);
}

static int f_release(struct sl__store *s, const struct sl__store_lease *l, sl__store_cb cb,
                     void *arg)
{
    (void)l;
    return answer((struct fake *)s, cb, arg);
}

static void f_batch(struct sl__store *s, const struct sl__store_req *q, size_t n, sl__store_cb cb,
                    void *const *args)
{
    (void)q;
    for (size_t i = 0; i < n; i++)
        cb(args[i], SL_OK, &((struct fake *)s)->res, SL__BY_STATE);
}

static const struct sl__store_ops fake_ops = {
    .name = "fake",
    .check = f_check,
    .peek = f_check,
    .reset = f_check,
    .release = f_release,
    .check_batch = f_batch,
};

/* ------------------------------------------------------------ fixture */

struct fixture {
    struct sl__server srv;
    struct sl__worker w;
    struct fake store;
    sl_rules_slot *slot;
};

struct op {
    struct sl__decide_op d;
    int calls;    /* done called this often */
    bool in_call; /* the test is inside an sl__decide* call */
    bool inside;  /* done was called while in_call */
    int err;
};

static void done(struct sl__decide_op *d, int err, const struct sl_result *res)
{
    struct op *op = (struct op *)(void *)d;

    (void)res;
    op->calls++;
    op->err = err;
    op->inside |= op->in_call;
}

static int setup(void **state)
{
    struct fixture *f = test_calloc(1, sizeof(*f));
    sl_rules_builder *b = sl_rules_builder_new();
    sl_rules *r = NULL;

    assert_int_equal(sl_rules_build(b, &r), SL_OK);
    sl_rules_builder_free(b);
    f->slot = sl_rules_slot_new(r);
    f->w.rules = sl_rules_reader_new(f->slot);
    f->w.srv = &f->srv;
    f->store.base.ops = &fake_ops;
    f->store.res.verdict = SL_ALLOW;
    f->store.res.n_statuses = 1;
    f->store.res.statuses[0].d.remaining = 7;
    memcpy(f->store.res.lease, "L1", 3);
    f->w.store = &f->store.base;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    sl__decide_batch_free(&f->w);
    sl_rules_reader_free(f->w.rules);
    sl_rules_slot_free(f->slot);
    test_free(f);
    return 0;
}

static struct sl_request request(void)
{
    static struct sl_entry e = {{"k", 1}, {"v", 1}};
    static struct sl_descriptor d = {.entries = &e, .n_entries = 1, .hits = -1};
    struct sl_request req;

    memset(&req, 0, sizeof(req));
    req.domain = (struct sl_str){"api", 3};
    req.descriptors = &d;
    req.n_descriptors = 1;
    req.hits = 1;
    return req;
}

/* ------------------------------------------------------------- tests */

/* The memory store's case: answered inside, returned, done never called. */
static void test_inline_answer_is_returned(void **state)
{
    struct fixture *f = *state;
    struct sl_request req = request();
    struct sl__decided now = {.err = 1};
    struct op op = {0};

    op.in_call = true;
    assert_true(sl__decide(&f->w, &op.d, SL__DECIDE_CHECK, &req, done, &now));
    op.in_call = false;
    assert_int_equal(op.calls, 0);
    assert_int_equal(now.err, SL_OK);
    /* a copy the worker owns, not the store's frame (gone by now) */
    assert_ptr_equal(now.res, &f->w.answer);
    assert_int_equal(now.res->verdict, SL_ALLOW);
    assert_int_equal(now.res->n_statuses, 1);
    assert_int_equal(now.res->statuses[0].d.remaining, 7);
    assert_string_equal(now.res->lease, "L1");

    op.in_call = true;
    assert_true(sl__decide_release(&f->w, &op.d, "x", 1, done, &now));
    op.in_call = false;
    assert_int_equal(op.calls, 0);
}

/* A remote store's case: false, then done exactly once, later. */
static void test_later_answer_calls_done_after_the_call(void **state)
{
    struct fixture *f = *state;
    struct sl_request req = request();
    struct sl__decided now;
    struct op op = {0};

    f->store.later = true;
    op.in_call = true;
    assert_false(sl__decide(&f->w, &op.d, SL__DECIDE_PEEK, &req, done, &now));
    op.in_call = false;
    assert_int_equal(op.calls, 0);
    f->store.cb(f->store.arg, SL_OK, &f->store.res, SL__BY_STATE);
    assert_int_equal(op.calls, 1);
    assert_false(op.inside);
    assert_int_equal(op.err, SL_OK);
}

/* A store that refuses to start: the error is returned, done never runs. */
static void test_start_error_is_returned(void **state)
{
    struct fixture *f = *state;
    struct sl_request req = request();
    struct sl__decided now;
    struct op op = {0};
    struct sl_match m;

    f->store.start_err = SL_ENOMEM;
    op.in_call = true;
    assert_true(sl__decide(&f->w, &op.d, SL__DECIDE_RESET, &req, done, &now));
    assert_int_equal(now.err, SL_ENOMEM);
    assert_null(now.res);
    memset(&m, 0, sizeof(m));
    m.key_len = 1;
    assert_true(sl__decide_matched(&f->w, &op.d, &req, &m, 1, done, &now));
    assert_int_equal(now.err, SL_ENOMEM);
    assert_true(sl__decide_release(&f->w, &op.d, "x", 1, done, &now));
    assert_int_equal(now.err, SL_EINVAL);
    op.in_call = false;
    assert_int_equal(op.calls, 0);
}

/* Queued in a batch: not answered inside the call (false), answered when
 * the batch ends, in order; a later decision that flushes the batch calls
 * the earlier ones' done, never its own. */
static void test_batched_checks_answer_at_the_end(void **state)
{
    struct fixture *f = *state;
    struct sl_request req = request();
    struct sl__decided now;
    struct op a = {0}, b = {0}, c = {0};

    sl__decide_batch_begin(&f->w);
    a.in_call = true;
    assert_false(sl__decide(&f->w, &a.d, SL__DECIDE_CHECK, &req, done, &now));
    a.in_call = false;
    b.in_call = true;
    assert_false(sl__decide(&f->w, &b.d, SL__DECIDE_CHECK, &req, done, &now));
    b.in_call = false;
    assert_int_equal(a.calls + b.calls, 0);
    /* a peek is not queued: what is queued goes first, then it is answered
     * inside its own call */
    c.in_call = true;
    assert_true(sl__decide(&f->w, &c.d, SL__DECIDE_PEEK, &req, done, &now));
    c.in_call = false;
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(c.calls, 0);
    assert_false(a.inside || b.inside);
    sl__decide_batch_end(&f->w);
    assert_int_equal(a.calls + b.calls + c.calls, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inline_answer_is_returned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_later_answer_calls_done_after_the_call, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_start_error_is_returned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batched_checks_answer_at_the_end, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
