# embed.cmake - write the bytes of IN as a C array in OUT (cmake -P).
# Used for store/lua/sluice.lua; hex bytes, so no quoting can go wrong.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from store/lua/sluice.lua by store/lua/embed.cmake; do not edit. */
#include <stddef.h>
const char sl__redis_lua[] = {
${bytes}0};
const size_t sl__redis_lua_len = ${len};
")
