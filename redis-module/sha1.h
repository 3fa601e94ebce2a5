/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * sha1.h - SHA-1 (FIPS 180-4), for one purpose: the lease index key of a
 * concurrency lease is named after the first 16 hex digits of the SHA-1 of
 * its state key, as the scripts name it with redis.sha1hex
 * (store/redis/lua/90_main.lua), so that a lease taken through the module
 * is released through a script and the other way round. Not for security.
 */
#ifndef SL_SHA1_H
#define SL_SHA1_H

#include <stddef.h>
#include <stdint.h>

/* The digest of data[0..len) as 40 lowercase hex digits and a NUL. */
void sl__sha1_hex(const void *data, size_t len, char out[41]);

#endif /* SL_SHA1_H */
