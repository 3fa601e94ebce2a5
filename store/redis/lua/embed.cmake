# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# embed.cmake - concatenate the script's parts (IN: paths joined by '|', in
# order) and write the bytes as a C array in OUT (cmake -P). Used for
# store/redis/lua/NN_*.lua; hex bytes, so no quoting can go wrong.
string(REPLACE "|" ";" parts "${IN}")
set(hex "")
foreach(part ${parts})
  file(READ ${part} h HEX)
  string(APPEND hex "${h}")
endforeach()
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from store/redis/lua/NN_name.lua by store/redis/lua/embed.cmake; do not edit. */
#include <stddef.h>
const char sl__redis_lua[] = {
${bytes}0};
const size_t sl__redis_lua_len = ${len};
")
