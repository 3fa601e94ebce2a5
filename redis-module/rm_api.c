/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rm_api.c - fill the module's table of Redis functions (rm_api.h) by name
 * through the GetApi pointer Redis puts first in every context.
 *
 * One row per function: the name Redis exports and where it goes. It does
 * nothing else; a missing function fails the load (the module needs Redis
 * 7.0 or later: RedisModule_SetCommandInfo and RedisModule_SetAbsExpire).
 */
#include <stddef.h>

#include "rm_api.h"

struct sl__rm_api sl__rm;

static const struct {
    const char *name;
    size_t offset;
} rows[] = {
#define R(name, field)                                                                             \
    {                                                                                              \
        "RedisModule_" name, offsetof(struct sl__rm_api, field)                                    \
    }
    R("SetModuleAttribs", set_module_attribs),
    R("IsModuleNameBusy", is_module_name_busy),
    R("SetModuleOptions", set_module_options),
    R("CreateCommand", create_command),
    R("GetCommand", get_command),
    R("SetCommandInfo", set_command_info),
    R("Log", log),
    R("Alloc", alloc),
    R("Realloc", realloc),
    R("Free", free),
    R("OpenKey", open_key),
    R("CloseKey", close_key),
    R("KeyType", key_type),
    R("DeleteKey", delete_key),
    R("StringDMA", string_dma),
    R("StringTruncate", string_truncate),
    R("SetAbsExpire", set_abs_expire),
    R("CreateString", create_string),
    R("FreeString", free_string),
    R("StringPtrLen", string_ptr_len),
    R("StringToLongLong", string_to_long_long),
    R("ReplyWithArray", reply_with_array),
    R("ReplyWithLongLong", reply_with_long_long),
    R("ReplyWithStringBuffer", reply_with_string_buffer),
    R("ReplyWithError", reply_with_error),
    R("WrongArity", wrong_arity),
    R("IsKeysPositionRequest", is_keys_position_request),
    R("KeyAtPos", key_at_pos),
    R("Replicate", replicate),
    R("ReplicateVerbatim", replicate_verbatim),
    R("PublishMessage", publish_message),
    R("Milliseconds", milliseconds),
#undef R
};

int sl__rm_load(RedisModuleCtx *ctx, const char *name, int ver)
{
    /* The context's first word: Redis's int GetApi(const char *, void *). */
    int (*get_api)(const char *, void *) = (int (*)(const char *, void *))((void **)ctx)[0];

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        void **slot = (void **)((char *)&sl__rm + rows[i].offset);
        if (get_api(rows[i].name, slot) != SL__RM_OK || *slot == NULL)
            return SL__RM_ERR;
    }
    if (sl__rm.is_module_name_busy(name))
        return SL__RM_ERR;
    sl__rm.set_module_attribs(ctx, name, ver, SL__RM_APIVER_1);
    return SL__RM_OK;
}
