#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""grpc_check.py HOST:PORT DOMAIN KEY VALUE - one check over gRPC, as Envoy
asks it: envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit with
one descriptor (KEY, VALUE), printed as OK or OVER_LIMIT. Debian's
python3-grpcio only: the two messages are encoded and read by hand here
(a real client uses the generated code of Envoy's rls.proto, docs/grpc.md).
"""
import sys

import grpc


def field(num, payload):  # a length-delimited protobuf field
    out, n = bytearray([num << 3 | 2]), len(payload)
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]) + payload)


def request(domain, key, value):
    entry = field(1, key.encode()) + field(2, value.encode())
    return field(1, domain.encode()) + field(2, field(1, entry))


def overall_code(reply):  # field 1, a varint: 1 OK, 2 OVER_LIMIT
    return reply[1] if len(reply) >= 2 and reply[0] == 0x08 else 0


def main():
    target, domain, key, value = sys.argv[1:5]
    with grpc.insecure_channel(target) as ch:
        call = ch.unary_unary("/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")
        reply = call(request(domain, key, value), timeout=5)
    print({1: "OK", 2: "OVER_LIMIT"}.get(overall_code(reply), "UNKNOWN"))


if __name__ == "__main__":
    main()
