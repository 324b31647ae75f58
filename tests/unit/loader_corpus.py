# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/loader_corpus.py OUT: the corpus of unusual and hostile HDF5
# files the loader (trainer/data/data.c) is replayed over, by
# tests/unit/test_loader_corpus (make check, and under ASan + UBSan in
# check-unit) and as the seeds of tests/fuzz/fuzz_loader. Each case is a
# directory OUT/NAME holding one year, 2016.h5, of fields[6, 2, 4, 8]
# (whole numbers, so every lossless filter and float type holds them
# exactly), and a file `expect`: "same" (it must read as OUT/plain does),
# "refuse" (one line naming the file, and the sample where one is being
# read), or "either" (unusual, valid, but readable only where this HDF5 has
# the filter). What a case's file needs besides (external storage, linked
# and source files) lies in OUT/aux. Files libhdf5 will not write are made
# by patching a valid one's bytes: the chunk dimensions in the layout
# message, a chunk's size, address or filter mask in the v1 B-tree (h5py's
# default, the earliest file format, has no metadata checksums), a
# contiguous dataset's address and size, a filter's id or parameter, the
# dataspace's dimensions.
import os
import shutil
import struct
import sys
import zlib

import h5py
import numpy as np

T, C, H, W = 6, 2, 4, 8
out = sys.argv[1]
aux = os.path.join(out, "aux")
os.makedirs(aux, exist_ok=True)
t, c, h, w = np.meshgrid(np.arange(T), np.arange(C), np.arange(H), np.arange(W), indexing="ij")
fields = (((t * 7 + c * 5 + h * 3 + w) % 23) - 11).astype("<f4")


def case(name, expect):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "expect"), "w") as f:
        f.write(expect + "\n")
    return os.path.join(d, "2016.h5")


def write(name, expect, **kw):
    path = case(name, expect)
    dtype = kw.pop("dtype", "<f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("fields", data=fields.astype(dtype), **kw)
    return path


def patch(path, old, new, count=1):
    data = open(path, "rb").read()
    assert data.count(old) >= 1, (path, old)
    data = data.replace(old, new, count)
    open(path, "wb").write(data)


def chunk_info(path, i):
    with h5py.File(path, "r") as f:
        return f["fields"].id.get_chunk_info(i)


def btree_key(info):
    """A chunk's key in the v1 B-tree: size, filter mask, offsets (elements, and 0)."""
    return struct.pack("<II", info.size, info.filter_mask) + struct.pack("<5Q", *info.chunk_offset, 0)


def patch_chunk(path, i, size=None, mask=None, addr=None):
    info = chunk_info(path, i)
    key = btree_key(info)
    new = struct.pack("<II", info.size if size is None else size, info.filter_mask if mask is None else mask) + key[8:]
    old_addr = struct.pack("<Q", info.byte_offset)
    new_addr = struct.pack("<Q", info.byte_offset if addr is None else addr)
    patch(path, key + old_addr, new + new_addr)


def contiguous_place(path):
    with h5py.File(path, "r") as f:
        return f["fields"].id.get_offset(), f["fields"].id.get_storage_size()


# Valid layouts, each read as plain is.
write("plain", "same")
write("chunk-steps", "same", chunks=(1, C, H, W))
write("chunk-two-steps", "same", chunks=(2, C, H, W))
write("chunk-parts", "same", chunks=(4, 1, 3, 5))
write("gzip", "same", chunks=(2, 1, 4, 8), compression="gzip")
write("shuffle", "same", chunks=(2, 1, 4, 8), shuffle=True)
write("shuffle-gzip", "same", chunks=(4, 2, 3, 5), shuffle=True, compression="gzip")
write("fletcher32", "same", chunks=(2, 1, 4, 8), fletcher32=True)
write("fletcher32-gzip", "same", chunks=(2, 1, 4, 8), fletcher32=True, compression="gzip")
write("scaleoffset", "same", chunks=(2, 1, 4, 8), scaleoffset=0)
write("lzf", "either", chunks=(2, 1, 4, 8), compression="lzf")
write("szip", "either", chunks=(2, 1, 4, 8), compression="szip")
write("nbit", "same", chunks=(2, 1, 4, 8), compression=h5py.h5z.FILTER_NBIT)
write("f16", "same", dtype="<f2")
write("f16-shuffle", "same", dtype="<f2", chunks=(2, 1, 4, 8), shuffle=True, compression="gzip")
write("f64", "same", dtype="<f8")
write("big-endian", "same", dtype=">f4")
write("big-endian-chunks", "same", dtype=">f4", chunks=(3, 2, 2, 8), compression="gzip")
path = case("compact", "same")
with h5py.File(path, "w") as f:
    space = h5py.h5s.create_simple(fields.shape)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    h5py.h5d.create(f.id, b"fields", h5py.h5t.IEEE_F32LE, space, dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL, fields)
write("unlimited", "same", chunks=(8, 2, 4, 8), maxshape=(None, C, H, W))
with h5py.File(os.path.join(aux, "linked.h5"), "w") as f:
    f.create_dataset("data", data=fields)
path = case("external-link", "same")
with h5py.File(path, "w") as f:
    f.create_dataset("padding", data=np.full(512, 7, "<f4"))
    f["fields"] = h5py.ExternalLink(os.path.join(aux, "linked.h5"), "data")
raw = os.path.join(aux, "external.raw")
fields.tofile(raw)
path = case("external", "same")
with h5py.File(path, "w") as f:
    f.create_dataset("fields", shape=fields.shape, dtype="<f4", external=[(raw, 0, fields.nbytes)])
with h5py.File(os.path.join(aux, "source.h5"), "w") as f:
    f.create_dataset("data", data=fields, chunks=(1, 2, 4, 8), compression="gzip")
path = case("virtual", "same")
layout = h5py.VirtualLayout(shape=fields.shape, dtype="<f4")
layout[:] = h5py.VirtualSource(os.path.join(aux, "source.h5"), "data", shape=fields.shape)
with h5py.File(path, "w", libver="latest") as f:
    f.create_virtual_dataset("fields", layout)

# Where the bytes are not: refused.
path = case("external-link-missing", "refuse")
with h5py.File(path, "w") as f:
    f["fields"] = h5py.ExternalLink(os.path.join(aux, "no-such.h5"), "data")
path = case("external-missing", "refuse")
with h5py.File(path, "w") as f:
    f.create_dataset("fields", shape=fields.shape, dtype="<f4",
                     external=[(os.path.join(aux, "no-such.raw"), 0, fields.nbytes)])
short = os.path.join(aux, "short.raw")
fields.ravel()[: fields.size // 2].tofile(short)
path = case("external-short", "refuse")
with h5py.File(path, "w") as f:
    f.create_dataset("fields", shape=fields.shape, dtype="<f4", external=[(short, 0, fields.nbytes)])
path = case("virtual-missing", "refuse")
layout = h5py.VirtualLayout(shape=fields.shape, dtype="<f4")
layout[:] = h5py.VirtualSource(os.path.join(aux, "no-such.h5"), "data", shape=fields.shape)
with h5py.File(path, "w", libver="latest") as f:
    f.create_virtual_dataset("fields", layout)
path = case("virtual-partial", "refuse")
layout = h5py.VirtualLayout(shape=fields.shape, dtype="<f4")
layout[:3] = h5py.VirtualSource(os.path.join(aux, "source.h5"), "data", shape=fields.shape)[:3]
with h5py.File(path, "w", libver="latest") as f:
    f.create_virtual_dataset("fields", layout, fillvalue=0)
# Two mappings that overlap on steps 2-3 and leave step 5 unmapped: as
# many elements mapped as the dataset holds, yet step 5 would be the fill
# value. The same overlap with every step mapped reads right.
source = h5py.VirtualSource(os.path.join(aux, "source.h5"), "data", shape=fields.shape)
path = case("virtual-overlap-gap", "refuse")
layout = h5py.VirtualLayout(shape=fields.shape, dtype="<f4")
layout[:3] = source[:3]
layout[2:5] = source[2:5]
with h5py.File(path, "w", libver="latest") as f:
    f.create_virtual_dataset("fields", layout, fillvalue=0)
path = case("virtual-overlap", "same")
layout = h5py.VirtualLayout(shape=fields.shape, dtype="<f4")
layout[:4] = source[:4]
layout[2:] = source[2:]
with h5py.File(path, "w", libver="latest") as f:
    f.create_virtual_dataset("fields", layout, fillvalue=0)
# The global-heap entry that holds the mappings claims a size 2^30 larger
# than it is (its fourth byte; the collection is "GCOL", version, 3
# reserved bytes and its size, then the entry's index, reference count, 4
# reserved bytes and its size). libhdf5 1.10.8 reads past the heap and
# crashes inside H5Dopen2, before the loader can check anything.
path = case("virtual-heap-size", "refuse")
shutil.copy(os.path.join(out, "virtual", "2016.h5"), path)
data = bytearray(open(path, "rb").read())
heap = data.index(b"GCOL")
data[heap + 16 + 8 + 3] ^= 0x40
open(path, "wb").write(data)
path = case("unwritten-chunk", "refuse")
with h5py.File(path, "w") as f:
    d = f.create_dataset("fields", shape=fields.shape, dtype="<f4", chunks=(2, 2, 4, 8), compression="gzip")
    d[:4] = fields[:4]
path = case("unwritten-contiguous", "refuse")
with h5py.File(path, "w") as f:
    f.create_dataset("fields", shape=fields.shape, dtype="<f4")
write("integers", "refuse", dtype="<i4")

# Chunk dimensions patched in the layout message (rank 4 + the element's size).
for name, dims in [("chunk-dims-wrap", (3, 536872960, 246241, 279073)), ("chunk-dim-zero", (2, 0, 4, 8)),
                   ("chunk-dim-past-fixed", (2, 3, 4, 8)), ("chunk-dims-huge", (0xFFFFFFFF, 1, 4, 8))]:
    path = write(name, "refuse", chunks=(2, 1, 4, 8))
    patch(path, struct.pack("<5I", 2, 1, 4, 8, 4), struct.pack("<5I", *dims, 4))
# The dataspace's T patched: huge (a chunked file with far more chunks than bytes; a contiguous one too short).
for name, kw in [("huge-t-chunks", dict(chunks=(2, 1, 4, 8))), ("huge-t-contiguous", {})]:
    path = write(name, "refuse", **kw)
    patch(path, struct.pack("<4Q", T, C, H, W), struct.pack("<4Q", 1 << 40, C, H, W))

# Chunks' places patched in the B-tree.
path = write("chunk-size-unfiltered", "refuse", chunks=(2, 1, 4, 8))
patch_chunk(path, 1, size=2 * 4 * 8 * 4 - 16)
path = write("chunk-size-large-unfiltered", "refuse", chunks=(2, 1, 4, 8))
patch_chunk(path, 1, size=2 * 4 * 8 * 4 + 64)
path = write("chunk-filter-skipped-size", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
patch_chunk(path, 2, mask=1)
path = write("chunk-claims-4gib", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
patch_chunk(path, 0, size=0xFFFFFFF0)
path = write("chunk-past-eof", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
patch_chunk(path, 3, addr=os.path.getsize(path) - 8)
path = write("chunk-offset-2^63", "refuse", chunks=(2, 1, 4, 8))
patch_chunk(path, 3, addr=(1 << 63) - 1)
path = write("chunk-offset-2^64-2", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
patch_chunk(path, 0, addr=(1 << 64) - 2)
path = write("chunks-overlap", "refuse", chunks=(2, 1, 4, 8))
patch_chunk(path, 1, addr=chunk_info(path, 0).byte_offset + 16)
path = write("chunk-mask-unknown", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
patch_chunk(path, 1, mask=0x10)

# Deflate streams: garbage, truncated, a wrong checksum, over-long and a bomb appended and pointed to.
path = write("deflate-garbage", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
info = chunk_info(path, 1)
with open(path, "r+b") as f:
    f.seek(info.byte_offset)
    f.write(bytes(range(7, 7 + info.size)))
path = write("deflate-truncated", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
patch_chunk(path, 1, size=chunk_info(path, 1).size - 6)
path = write("deflate-checksum", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
info = chunk_info(path, 2)
with open(path, "r+b") as f:
    f.seek(info.byte_offset + info.size - 1)
    last = f.read(1)
    f.seek(info.byte_offset + info.size - 1)
    f.write(bytes([last[0] ^ 0x55]))


def append_stream(path, i, payload):
    stream = zlib.compress(payload)
    addr = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(stream)
    patch_chunk(path, i, size=len(stream), addr=addr)


path = write("deflate-over-long", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
append_stream(path, 1, fields[2:4, 0:1].tobytes() + b"\0" * 64)
path = write("deflate-short", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
append_stream(path, 1, fields[2:4, 0:1].tobytes()[:-4])
path = write("deflate-bomb-last", "refuse", chunks=(4, 2, 4, 8), compression="gzip")
append_stream(path, 1, b"\0" * (1 << 20))

# Filters patched in the pipeline message (version 1: id, name length, flags, values, name).
path = write("filter-unknown", "refuse", chunks=(2, 1, 4, 8), compression="gzip")
patch(path, struct.pack("<HHHH", 1, 8, 1, 1) + b"deflate\0", struct.pack("<HHHH", 31000, 8, 0, 1) + b"deflate\0")
for name, size in [("shuffle-size-3", 3), ("shuffle-size-0", 0), ("shuffle-size-huge", 0xFFFFFFF)]:
    path = write(name, "refuse", chunks=(2, 1, 4, 8), shuffle=True, compression="gzip")
    patch(path, b"shuffle\0" + struct.pack("<I", 4), b"shuffle\0" + struct.pack("<I", size))

# A contiguous dataset's place patched in its layout message.
for name, how in [("contiguous-offset-2^63", lambda a, s: ((1 << 63) - 1, s)),
                  ("contiguous-past-eof", lambda a, s: (a + 64, s)),
                  ("contiguous-size-short", lambda a, s: (a, s - 4)),
                  ("contiguous-size-long", lambda a, s: (a, s + 4096))]:
    # HDF5 1.10 sizes contiguous storage by the dataspace, not by the message's size: a longer one reads right.
    path = write(name, "either" if name == "contiguous-size-long" else "refuse")
    addr, size = contiguous_place(path)
    patch(path, struct.pack("<QQ", addr, size), struct.pack("<QQ", *how(addr, size)))

# Truncated files.
for name, kw in [("truncated-contiguous", {}), ("truncated-gzip", dict(chunks=(2, 1, 4, 8), compression="gzip"))]:
    path = write(name, "refuse", **kw)
    os.truncate(path, os.path.getsize(path) - 200)

# A user block before the HDF5 data (h5py's userblock_size): addresses are then relative to its end.
for name, kw in [("userblock-contiguous", {}), ("userblock-chunk-steps", dict(chunks=(1, C, H, W))),
                 ("userblock-gzip", dict(chunks=(2, 1, 4, 8), compression="gzip"))]:
    path = case(name, "same")
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("fields", data=fields, **kw)
