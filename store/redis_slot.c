/*
 * redis_slot.c - Redis Cluster key slots: CRC16-XMODEM of the key, or of its
 * hash tag, modulo 16384, exactly as the Redis Cluster specification's
 * keyHashSlot() computes them (the tests compare with CLUSTER KEYSLOT of a
 * real redis-server).
 *
 * It does not build keys (redis_plan.c puts each descriptor's tag in
 * braces) and does not route (redis_cluster.c).
 */
#include "redis_cluster.h"

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
