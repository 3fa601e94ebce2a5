/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rcluster_slot.c - Redis Cluster key slots: CRC16-XMODEM of the key, or of its
 * hash tag, modulo 16384, exactly as the Redis Cluster specification's
 * keyHashSlot() computes them (the tests compare with CLUSTER KEYSLOT of a
 * real redis-server).
 *
 * Also the reverse: a short tag for a given slot (a name that must live in
 * a slot, such as a lease's index key, gets that tag in braces).
 *
 * It does not build keys (redis_plan.c puts each descriptor's tag in
 * braces) and does not route (rcluster_map.c).
 */
#include <string.h>

#include "rcluster_map.h"
#include "sluice.h"

/* Bitwise CRC16-XMODEM: a key is short, so no lookup table is kept. */
uint16_t sl__redis_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint16_t)(unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned sl__redis_keyslot(const char *key, size_t len)
{
    size_t open, close;

    for (open = 0; open < len && key[open] != '{'; open++)
        ;
    if (open == len)
        return sl__redis_crc16(key, len) & (SL__CLUSTER_SLOTS - 1);
    for (close = open + 1; close < len && key[close] != '}'; close++)
        ;
    /* No '}' after the '{', or "{}": Redis hashes the whole key. */
    if (close == len || close == open + 1)
        return sl__redis_crc16(key, len) & (SL__CLUSTER_SLOTS - 1);
    return sl__redis_crc16(key + open + 1, close - open - 1) & (SL__CLUSTER_SLOTS - 1);
}

int sl__redis_slot_tags(char (*tags)[5])
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned left = SL__CLUSTER_SLOTS;
    char t[5];

    for (unsigned s = 0; s < SL__CLUSTER_SLOTS; s++)
        tags[s][0] = '\0';
    for (unsigned len = 1, total = 36; len <= 4 && left > 0; len++, total *= 36) {
        for (unsigned v = 0; v < total && left > 0; v++) {
            unsigned x = v, slot;
            for (unsigned i = 0; i < len; i++, x /= 36)
                t[i] = digits[x % 36];
            slot = sl__redis_keyslot(t, len);
            if (tags[slot][0] == '\0') {
                memcpy(tags[slot], t, len);
                tags[slot][len] = '\0';
                left--;
            }
        }
    }
    return left == 0 ? SL_OK : SL_ENOENT;
}
