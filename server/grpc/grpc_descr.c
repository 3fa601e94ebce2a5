/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_descr.c - the descriptors server reflection serves (grpc_descr.h):
 * the FileDescriptorSet protoc wrote at build time (embed.cmake), unpacked
 * once with protobuf-c's own descriptor.proto, each file packed again on
 * its own, and an index of the symbols each defines.
 *
 * Lookups walk the index: a few hundred names, asked by debugging tools,
 * never by the decision path.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/descriptor.pb-c.h"
#include "grpc_descr.h"
#include "log.h"
#include "xalloc.h"

extern const unsigned char sl__grpc_descriptor_set[];
extern const size_t sl__grpc_descriptor_set_len;

typedef Google__Protobuf__FileDescriptorProto FileProto;
typedef Google__Protobuf__DescriptorProto MsgProto;
typedef Google__Protobuf__EnumDescriptorProto EnumProto;
typedef Google__Protobuf__FieldDescriptorProto FieldProto;

struct symbol {
    char *name;
    int file;
    bool message;
};

static struct {
    Google__Protobuf__FileDescriptorSet *set;
    struct sl__grpc_file *files;
    size_t n_files;
    struct symbol *syms;
    size_t n_syms, cap_syms;
} idx;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void add(const char *scope, const char *name, int file, bool message)
{
    size_t len = strlen(scope) + 1 + strlen(name) + 1;
    char *full = sl__xzalloc(len);

    snprintf(full, len, "%s%s%s", scope, scope[0] ? "." : "", name);
    if (idx.n_syms == idx.cap_syms) {
        idx.cap_syms = idx.cap_syms ? 2 * idx.cap_syms : 64;
        idx.syms = sl__xrealloc(idx.syms, idx.cap_syms * sizeof(*idx.syms));
    }
    idx.syms[idx.n_syms++] = (struct symbol){full, file, message};
}

/* Enum values are scoped beside their enum, as protobuf scopes them. */
static void add_enum(const char *scope, const EnumProto *e, int file)
{
    add(scope, e->name, file, false);
    for (size_t v = 0; v < e->n_value; v++)
        add(scope, e->value[v]->name, file, false);
}

static void add_message(const char *scope, const MsgProto *m, int file)
{
    size_t len = strlen(scope) + 1 + strlen(m->name) + 1;
    char *inner = sl__xzalloc(len);

    add(scope, m->name, file, true);
    snprintf(inner, len, "%s%s%s", scope, scope[0] ? "." : "", m->name);
    for (size_t i = 0; i < m->n_field; i++)
        add(inner, m->field[i]->name, file, false);
    for (size_t i = 0; i < m->n_nested_type; i++)
        add_message(inner, m->nested_type[i], file);
    for (size_t i = 0; i < m->n_enum_type; i++)
        add_enum(inner, m->enum_type[i], file);
    free(inner);
}

static void add_file(const FileProto *f, int file)
{
    const char *pkg = f->package != NULL ? f->package : "";

    for (size_t i = 0; i < f->n_message_type; i++)
        add_message(pkg, f->message_type[i], file);
    for (size_t i = 0; i < f->n_enum_type; i++)
        add_enum(pkg, f->enum_type[i], file);
    for (size_t i = 0; i < f->n_service; i++) {
        size_t len = strlen(pkg) + 1 + strlen(f->service[i]->name) + 1;
        char *svc = sl__xzalloc(len);

        add(pkg, f->service[i]->name, file, false);
        snprintf(svc, len, "%s%s%s", pkg, pkg[0] ? "." : "", f->service[i]->name);
        for (size_t m = 0; m < f->service[i]->n_method; m++)
            add(svc, f->service[i]->method[m]->name, file, false);
        free(svc);
    }
}

static void build(void)
{
    idx.set = google__protobuf__file_descriptor_set__unpack(NULL, sl__grpc_descriptor_set_len,
                                                            sl__grpc_descriptor_set);
    if (idx.set == NULL) { /* the build wrote it: cannot happen but by a broken build */
        sl__warn("grpc.reflection", "grpc: the embedded descriptors do not parse; reflection "
                                    "knows no file");
        return;
    }
    idx.n_files = idx.set->n_file;
    idx.files = sl__xzalloc(idx.n_files * sizeof(*idx.files) + 1);
    for (size_t i = 0; i < idx.n_files; i++) {
        const FileProto *f = idx.set->file[i];
        size_t len = google__protobuf__file_descriptor_proto__get_packed_size(f);
        uint8_t *buf = sl__xzalloc(len + 1);

        google__protobuf__file_descriptor_proto__pack(f, buf);
        idx.files[i] = (struct sl__grpc_file){buf, len};
        add_file(f, (int)i);
    }
}

static void ready(void)
{
    pthread_once(&once, build);
}

size_t sl__grpc_descr_count(void)
{
    ready();
    return idx.n_files;
}

int sl__grpc_descr_file(const char *name)
{
    ready();
    for (size_t i = 0; i < idx.n_files; i++)
        if (strcmp(idx.set->file[i]->name, name) == 0)
            return (int)i;
    return -1;
}

static const struct symbol *find(const char *symbol)
{
    ready();
    if (symbol[0] == '.')
        symbol++;
    for (size_t i = 0; i < idx.n_syms; i++)
        if (strcmp(idx.syms[i].name, symbol) == 0)
            return &idx.syms[i];
    return NULL;
}

int sl__grpc_descr_symbol(const char *symbol)
{
    const struct symbol *s = find(symbol);

    return s != NULL ? s->file : -1;
}

bool sl__grpc_descr_message(const char *type)
{
    const struct symbol *s = find(type);

    return s != NULL && s->message;
}

/* Whether extension field `x` extends `type` (its extendee is fully
 * qualified with a leading dot, as protoc writes it). */
static bool extends(const FieldProto *x, const char *type)
{
    const char *e = x->extendee != NULL ? x->extendee : "";

    if (type[0] == '.')
        type++;
    return e[0] == '.' && strcmp(e + 1, type) == 0;
}

int sl__grpc_descr_extension(const char *type, int32_t number)
{
    ready();
    for (size_t i = 0; i < idx.n_files; i++) {
        const FileProto *f = idx.set->file[i];

        for (size_t x = 0; x < f->n_extension; x++)
            if (f->extension[x]->number == number && extends(f->extension[x], type))
                return (int)i;
    }
    return -1;
}

size_t sl__grpc_descr_extension_numbers(const char *type, int32_t *out, size_t cap)
{
    size_t n = 0;

    ready();
    for (size_t i = 0; i < idx.n_files; i++) {
        const FileProto *f = idx.set->file[i];

        for (size_t x = 0; x < f->n_extension; x++)
            if (extends(f->extension[x], type) && n < cap)
                out[n++] = f->extension[x]->number;
    }
    return n;
}

size_t sl__grpc_descr_closure(int file, struct sl__grpc_file *out, size_t cap)
{
    bool seen[64] = {false};
    int todo[64];
    size_t n = 0, t = 0;

    ready();
    if (file < 0 || (size_t)file >= idx.n_files || idx.n_files > 64)
        return 0;
    todo[t++] = file;
    seen[file] = true;
    while (t > 0 && n < cap) {
        const FileProto *f = idx.set->file[todo[--t]];

        out[n++] = idx.files[todo[t]];
        for (size_t d = 0; d < f->n_dependency; d++) {
            int dep = sl__grpc_descr_file(f->dependency[d]);

            if (dep >= 0 && !seen[dep] && t < 64) {
                seen[dep] = true;
                todo[t++] = dep;
            }
        }
    }
    return n;
}
