/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_rules.c - libFuzzer driver for the rules parser and compiler: any
 * bytes as a rules file (YAML), then as a database rule; a build succeeds
 * only without diagnostics and every diagnostic names its origin.
 * It does not check what the rules decide.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"

#define CHECK(c) ((c) ? (void)0 : abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int src = SL_SRC_FILE; src <= SL_SRC_DB; src++) {
        sl_rules_builder *b = sl_rules_builder_new();
        sl_rules *r = NULL;
        int rc;

        CHECK(b != NULL);
        sl_rules_builder_add_yaml(b, (const char *)data, size, "f", (enum sl_rules_source)src);
        rc = sl_rules_build(b, &r);
        CHECK((rc == SL_OK) == (r != NULL));
        CHECK(rc != SL_OK || sl_rules_builder_ndiags(b) == 0);
        for (size_t i = 0; i < sl_rules_builder_ndiags(b); i++)
            CHECK(strncmp(sl_rules_builder_diag(b, i), "f:", 2) == 0);
        sl_rules_unref(r);
        sl_rules_builder_free(b);
    }
    return 0;
}
