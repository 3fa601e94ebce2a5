/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_reflect.c - grpc.reflection.v1.ServerReflection and its v1alpha
 * twin (the same messages, field for field): each request on the stream
 * is answered by one response, in order, for as long as the client keeps
 * the stream open.
 *
 *  - list_services: the services of grpc.c's table;
 *  - file_by_filename, file_containing_symbol: the file and every file it
 *    imports (grpc_descr.h), so a client needs no second round;
 *  - file_containing_extension, all_extension_numbers_of_type: none of
 *    the files served declares an extension (NOT_FOUND, or an empty list
 *    for a message);
 * what is not found is an error_response (NOT_FOUND, or INVALID_ARGUMENT
 * for a request with none of the fields set) and the stream goes on, as
 * the protocol has it. A request that is no ServerReflectionRequest ends
 * the stream INTERNAL.
 *
 * Reflection is for people debugging: its messages are unpacked and packed
 * with the heap, never on the decision path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc.h"
#include "grpc/reflection/v1/reflection.pb-c.h"
#include "grpc_descr.h"

typedef Grpc__Reflection__V1__ServerReflectionRequest Request;
typedef Grpc__Reflection__V1__ServerReflectionResponse Response;

#define MAX_SERVICES 16
#define MAX_EXT      64

/* Pack and send `r`; false when the stream was ended. */
static bool send_response(struct sl__grpc_op *op, const Response *r)
{
    size_t len = grpc__reflection__v1__server_reflection_response__get_packed_size(r);
    uint8_t *buf = malloc(len + 1);
    bool ok;

    if (buf == NULL) {
        sl__grpc_fail(op, SL__GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return false;
    }
    grpc__reflection__v1__server_reflection_response__pack(r, buf);
    ok = sl__grpc_send(op, buf, len);
    free(buf);
    if (!ok)
        sl__grpc_fail(op, SL__GRPC_RESOURCE_EXHAUSTED,
                      "the client reads no reflection responses (server.max_buffer_bytes)");
    return ok;
}

static void error_response(Response *r, Grpc__Reflection__V1__ErrorResponse *e,
                           enum sl__grpc_status code, const char *message)
{
    e->error_code = (int32_t)code;
    e->error_message = (char *)message;
    r->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    r->error_response = e;
}

/* The file descriptor response for `file`, or NOT_FOUND saying `what`. */
static bool files_response(struct sl__grpc_op *op, Response *r, int file, const char *what)
{
    Grpc__Reflection__V1__FileDescriptorResponse fr =
        GRPC__REFLECTION__V1__FILE_DESCRIPTOR_RESPONSE__INIT;
    Grpc__Reflection__V1__ErrorResponse e = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;
    size_t cap = sl__grpc_descr_count(), n;
    struct sl__grpc_file *files = calloc(cap + 1, sizeof(*files));
    ProtobufCBinaryData *bins = calloc(cap + 1, sizeof(*bins));
    bool ok;

    if (files == NULL || bins == NULL) {
        free(files);
        free(bins);
        sl__grpc_fail(op, SL__GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return false;
    }
    n = file >= 0 ? sl__grpc_descr_closure(file, files, cap) : 0;
    if (n == 0) {
        error_response(r, &e, SL__GRPC_NOT_FOUND, what);
    } else {
        for (size_t i = 0; i < n; i++)
            bins[i] = (ProtobufCBinaryData){files[i].len, (uint8_t *)files[i].data};
        fr.n_file_descriptor_proto = n;
        fr.file_descriptor_proto = bins;
        r->message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
        r->file_descriptor_response = &fr;
    }
    ok = send_response(op, r);
    free(files);
    free(bins);
    return ok;
}

static bool list_services(struct sl__grpc_op *op, Response *r)
{
    Grpc__Reflection__V1__ListServiceResponse lr =
        GRPC__REFLECTION__V1__LIST_SERVICE_RESPONSE__INIT;
    Grpc__Reflection__V1__ServiceResponse svc[MAX_SERVICES], *ptrs[MAX_SERVICES];
    char names[MAX_SERVICES][128];
    size_t n = 0;

    while (n < MAX_SERVICES && sl__grpc_service(n, names[n], sizeof(names[n])) > 0) {
        svc[n] =
            (Grpc__Reflection__V1__ServiceResponse)GRPC__REFLECTION__V1__SERVICE_RESPONSE__INIT;
        svc[n].name = names[n];
        ptrs[n] = &svc[n];
        n++;
    }
    lr.n_service = n;
    lr.service = ptrs;
    r->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
    r->list_services_response = &lr;
    return send_response(op, r);
}

static bool extension_numbers(struct sl__grpc_op *op, Response *r, const char *type)
{
    Grpc__Reflection__V1__ExtensionNumberResponse xr =
        GRPC__REFLECTION__V1__EXTENSION_NUMBER_RESPONSE__INIT;
    Grpc__Reflection__V1__ErrorResponse e = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;
    int32_t numbers[MAX_EXT];

    if (!sl__grpc_descr_message(type)) {
        error_response(r, &e, SL__GRPC_NOT_FOUND, "no such message type");
        return send_response(op, r);
    }
    xr.base_type_name = (char *)(type[0] == '.' ? type + 1 : type);
    xr.n_extension_number = sl__grpc_descr_extension_numbers(type, numbers, MAX_EXT);
    xr.extension_number = numbers;
    r->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
    r->all_extension_numbers_response = &xr;
    return send_response(op, r);
}

/* One request: one response. */
static void answer(struct sl__grpc_op *op, Request *q)
{
    Response r = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT;
    Grpc__Reflection__V1__ErrorResponse e = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;

    r.valid_host = q->host;
    r.original_request = q;
    switch (q->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        list_services(op, &r);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        files_response(op, &r, sl__grpc_descr_file(q->file_by_filename), "no such file");
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        files_response(op, &r, sl__grpc_descr_symbol(q->file_containing_symbol), "no such symbol");
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
        files_response(
            op, &r,
            q->file_containing_extension == NULL
                ? -1
                : sl__grpc_descr_extension(q->file_containing_extension->containing_type,
                                           q->file_containing_extension->extension_number),
            "no such extension");
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        extension_numbers(op, &r, q->all_extension_numbers_of_type);
        break;
    default:
        error_response(&r, &e, SL__GRPC_INVALID_ARGUMENT, "the request asks for nothing");
        send_response(op, &r);
        break;
    }
}

static void reflect_message(struct sl__grpc_op *op, const uint8_t *msg, size_t len)
{
    Request *q;

    if (msg == NULL) { /* the client is done asking: so are we */
        sl__grpc_fail(op, SL__GRPC_OK, "");
        return;
    }
    q = grpc__reflection__v1__server_reflection_request__unpack(NULL, len, msg);
    if (q == NULL) {
        sl__grpc_fail(op, SL__GRPC_INTERNAL, "message: not a valid ServerReflectionRequest");
        return;
    }
    answer(op, q);
    grpc__reflection__v1__server_reflection_request__free_unpacked(q, NULL);
}

const struct sl__grpc_streamer sl__grpc_reflect = {reflect_message, NULL, NULL, NULL};
