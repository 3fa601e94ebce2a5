/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * mpack.h - the little of MessagePack the stored states need (internal to
 * the module): arrays of integers and strings, read and written exactly as
 * Redis's Lua cmsgpack library writes them, so the module and the scripts
 * (cmsgpack.pack / cmsgpack.unpack, store/redis/lua/90_main.lua) store the
 * same bytes for the same state.
 *
 * Writing: an integer takes the smallest form (positive fixint, uint 8-64,
 * negative fixint, int 8-64), a string fixstr or str 8/16/32, an array
 * fixarray or array 16/32 - cmsgpack's choices. Reading also takes floats
 * that are whole numbers (cmsgpack writes a Lua number that is not whole as
 * one; no state holds such a number, but a reader should not fail on it).
 * It does not allocate: the writer fills the caller's buffer.
 */
#ifndef SL_MPACK_H
#define SL_MPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl__mp_reader {
    const uint8_t *p, *end;
    bool bad; /* a read failed (truncated or not the expected type) */
};

/* An array header: its element count; false (and bad) otherwise. */
bool sl__mp_array(struct sl__mp_reader *r, uint64_t *n);
/* An integer (or a whole float within int64); false (and bad) otherwise. */
bool sl__mp_int(struct sl__mp_reader *r, int64_t *v);
/* A string: its bytes (borrowed from the buffer); false (and bad) otherwise. */
bool sl__mp_str(struct sl__mp_reader *r, const char **s, size_t *len);

struct sl__mp_writer {
    uint8_t *buf;
    size_t len, cap;
    bool full; /* something did not fit: the result is invalid */
};

void sl__mp_put_array(struct sl__mp_writer *w, uint64_t n);
void sl__mp_put_int(struct sl__mp_writer *w, int64_t v);
void sl__mp_put_str(struct sl__mp_writer *w, const char *s, size_t len);

#endif /* SL_MPACK_H */
