# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# embed.cmake - write the dashboard's assets (IN: paths joined by '|') as C
# arrays in OUT (cmake -P): for each file NAME.EXT, `sl__ui_NAME_EXT` and
# `sl__ui_NAME_EXT_len`. Hex bytes, so no quoting can go wrong; the page
# is in the binary, nothing is read from disk at run time.
string(REPLACE "|" ";" files "${IN}")
set(text "/* Generated from server/admin/ui/ by server/admin/ui/embed.cmake; do not edit. */
#include <stddef.h>
")
foreach(f ${files})
  get_filename_component(name ${f} NAME)
  string(REGEX REPLACE "[^A-Za-z0-9]" "_" sym "${name}")
  file(READ ${f} hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR len "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
  string(APPEND text "const char sl__ui_${sym}[] = {
${bytes}0};
const size_t sl__ui_${sym}_len = ${len};
")
endforeach()
file(WRITE ${OUT} "${text}")
