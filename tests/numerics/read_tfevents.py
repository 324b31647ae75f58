#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/numerics/read_tfevents.py EVENTS_FILE: decodes a TensorBoard event
file with nothing but the standard library (an implementation independent
of dlpar's writer): checks each record's framing (uint64 length, masked
CRC32C of the length, data, masked CRC32C of the data), decodes the Event
protobuf (wall_time 1, step 2, file_version 3, summary 5 -> value 1 ->
tag 1, simple_value 2) and prints "step tag value" per scalar. Exit 1 on
any corrupt record."""
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, pos):
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def fields(buf):
    """(field number, wire type, value) of a protobuf message"""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, value


def main():
    data = open(sys.argv[1], "rb").read()
    pos, records, version = 0, 0, None
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        payload = data[pos + 12:pos + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if masked(crc32c(header)) != length_crc or masked(crc32c(payload)) != payload_crc:
            print(f"corrupt record {records} at byte {pos}")
            return 1
        pos += 16 + length
        records += 1
        step = 0
        for field, wire, value in fields(payload):
            if field == 2:
                step = value
            elif field == 3:
                version = value.decode()
            elif field == 5:
                for _, _, summary_value in fields(value):
                    tag, scalar = None, None
                    for f, _, v in fields(summary_value):
                        if f == 1:
                            tag = v.decode()
                        elif f == 2:
                            (scalar,) = struct.unpack("<f", v)
                    print(f"{step} {tag} {scalar:.9g}")
    print(f"records {records} version {version}")
    return 0


sys.exit(main())
