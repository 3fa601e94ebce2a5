/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_descr.h - the protobuf descriptors of the services sluiced serves
 * (internal), for server reflection: the files (as protoc serialized them
 * at build time, embedded in the binary), the symbols each defines and
 * what each imports.
 *
 * The index is built once, on first use, and then only read: any thread
 * may ask. A file is named by its path ("grpc/health/v1/health.proto"), a
 * symbol by its full name without the leading dot
 * ("grpc.health.v1.Health", "grpc.health.v1.Health.Check").
 */
#ifndef SL_SERVER_GRPC_DESCR_H
#define SL_SERVER_GRPC_DESCR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One serialized FileDescriptorProto. */
struct sl__grpc_file {
    const uint8_t *data;
    size_t len;
};

/* The file with this name, or -1. */
int sl__grpc_descr_file(const char *name);

/* The file defining this symbol (a message, enum, enum value, field,
 * service or method), or -1. */
int sl__grpc_descr_symbol(const char *symbol);

/* Whether `type` names a message (extensions extend messages only). */
bool sl__grpc_descr_message(const char *type);

/* The file defining extension `number` of message `type`, or -1. */
int sl__grpc_descr_extension(const char *type, int32_t number);

/* The extension numbers of message `type` into out[0..cap): how many
 * there are (none of the files served declares one). */
size_t sl__grpc_descr_extension_numbers(const char *type, int32_t *out, size_t cap);

/*
 * File `file` and every file it imports, directly or not, each once (the
 * file first) into out[0..cap): how many. Enough for a client to build
 * the file's descriptors without asking again.
 */
size_t sl__grpc_descr_closure(int file, struct sl__grpc_file *out, size_t cap);

/* How many files there are (the bound of sl__grpc_descr_closure). */
size_t sl__grpc_descr_count(void);

#endif /* SL_SERVER_GRPC_DESCR_H */
