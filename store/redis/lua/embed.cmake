# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# embed.cmake - join the script's parts and write them as C arrays in OUT
# (cmake -P). IN: the body's parts, joined by '|', in order; EVAL_TAIL and
# FN_TAIL: the tails of the EVALSHA script and of the Redis Functions
# library; VERSION: the project's version. The two texts are also written
# beside OUT (OUT.eval.lua, OUT.fn.lua), for the benchmarks and for reading.
#
# Written: sl__redis_lua[] (the script) with sl__redis_lua_sha (its SHA-1,
# as SCRIPT LOAD computes it), and sl__redis_fn[] (the library, whose first
# line names it) with sl__redis_fn_name: "sluice_<version>_<12 hex of the
# SHA-1 of the body and both tails>", so two builds whose code differs
# never load a library, or call a function, of the same name. The arrays
# are hex bytes, so no quoting can go wrong.
string(REPLACE "|" ";" parts "${IN}")
set(body "")
foreach(part ${parts})
  file(READ "${part}" text)
  string(APPEND body "${text}")
endforeach()
file(READ "${EVAL_TAIL}" eval_tail)
file(READ "${FN_TAIL}" fn_tail)
string(SHA1 tag "${body}${eval_tail}${fn_tail}")
string(SUBSTRING "${tag}" 0 12 tag)
string(REPLACE "." "_" ver "${VERSION}")
set(name "sluice_${ver}_${tag}")
string(REPLACE "@NAME@" "${name}" fn_tail "${fn_tail}")

file(WRITE "${OUT}.eval.lua" "${body}${eval_tail}")
file(WRITE "${OUT}.fn.lua" "#!lua name=${name}\n${body}${fn_tail}")
file(SHA1 "${OUT}.eval.lua" sha)

# The bytes of a file as a C array body and its length.
function(c_bytes path var)
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR len "${n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
         bytes "${bytes}")
  set(${var}_bytes "${bytes}" PARENT_SCOPE)
  set(${var}_len ${len} PARENT_SCOPE)
endfunction()
c_bytes("${OUT}.eval.lua" lua)
c_bytes("${OUT}.fn.lua" fn)

file(WRITE ${OUT} "/* Generated from store/redis/lua/NN_name.lua by store/redis/lua/embed.cmake; do not edit. */
#include <stddef.h>
const char sl__redis_lua[] = {
${lua_bytes}0};
const size_t sl__redis_lua_len = ${lua_len};
const char sl__redis_lua_sha[] = \"${sha}\";
const char sl__redis_fn[] = {
${fn_bytes}0};
const size_t sl__redis_fn_len = ${fn_len};
const char sl__redis_fn_name[] = \"${name}\";
")
