/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * privdrop.h - giving up root after binding (internal).
 */
#ifndef SL_SERVER_PRIVDROP_H
#define SL_SERVER_PRIVDROP_H

#include "sluice.h"

/* As root: switch to `user` for good (SL_EINVAL, logged, when it cannot),
 * or warn loudly when `user` is NULL. Not root: nothing to do (a warning
 * when `user` is set). Call once, on the main thread, before the workers
 * start. */
int sl__drop_privileges(const char *user);

#endif /* SL_SERVER_PRIVDROP_H */
