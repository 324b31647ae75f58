#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_hostile_files.sh: dlpar-train (the CPU path, one
# process) on a training year made hostile after dlpar-gen-data wrote it
# gzip'ed (h5py patches its bytes; tests/unit/test_loader_corpus has the
# whole corpus at the loader's level):
#  - a chunk claiming 4 GiB in the B-tree: refused at start, one line naming
#    the file and the chunk, exit 1;
#  - every chunk's deflate stream overwritten with garbage: refused at the
#    first read, one line naming the file, the sample and the time step,
#    exit 1;
#  - the year's fields an external link to the real data beside a file of
#    padding: read through HDF5, the losses those of the unlinked run;
# and, refused, nothing half-written: no checkpoint, no temporary file.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
/usr/bin/python3 -c 'import h5py' 2>/dev/null || skip "no h5py for /usr/bin/python3 (apt install python3-h5py)"
export OMP_NUM_THREADS=1
d=$TEST_TMP/data
make_data --layout=gzip
mv "$d/train/2016.h5" "$TEST_TMP/2016-good.h5"

# train RUN: a short run on the data as it is now; its exit status
train() {
  env -u PMIX_NAMESPACE "$B/trainer/dlpar-train" --config=test "$DLPAR_SRCDIR/etc/vit.yaml" $(data_args) \
    --num_iters=4 --checkpoint_every=2 --progress=off --run="$1" >"$TEST_TMP/$1.out" 2>"$TEST_TMP/$1.err"
}

# hostile NAME HOW: 2016.h5 a copy of the good year, patched by HOW (python, on `path`)
hostile() {
  cp "$TEST_TMP/2016-good.h5" "$d/train/2016.h5"
  /usr/bin/python3 - "$d/train/2016.h5" <<PY
import struct, sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    chunks = [f["fields"].id.get_chunk_info(i) for i in range(f["fields"].id.get_num_chunks())]
data = bytearray(open(path, "rb").read())
$2
open(path, "wb").write(bytes(data))
PY
}

# refused NAME PATTERN: the run exits 1 with one line matching PATTERN, nothing half-written
refused() {
  local dir=$TEST_TMP/runs/test/1x1/$1
  train "$1"
  expect_rc "$1: the run is refused" $? 1
  expect_eq "$1: one line on stderr" "$(wc -l <"$TEST_TMP/$1.err")" 1
  expect_eq "$1: it names the problem: $(cat "$TEST_TMP/$1.err")" "$(grep -cE "$2" "$TEST_TMP/$1.err")" 1
  expect_eq "$1: no checkpoint, no temporary file" "$(ls -a "$dir" 2>/dev/null | grep -cE 'checkpoint|tmp')" 0
}

hostile claims-4gib '
c = chunks[0]
key = struct.pack("<II", c.size, c.filter_mask) + struct.pack("<5Q", *c.chunk_offset, 0)
at = bytes(data).index(key)
data[at:at + 4] = struct.pack("<I", 0xFFFFFFF0)'
refused claims-4gib "^dlpar-train: $d/train/2016\.h5: the chunk at fields\[0, 0, 0, 0\] claims 4294967280 bytes at byte [0-9]+, .*\(the file is damaged: copy or regenerate it\)$"

hostile garbage '
for c in chunks:
    data[c.byte_offset:c.byte_offset + c.size] = bytes((7 * i) % 251 for i in range(c.size))'
refused garbage "^dlpar-train: $d/train/2016\.h5: sample [0-9]+, reading fields\[[0-9]+\]: the chunk at byte [0-9]+ does not inflate to its [0-9]+ bytes with a sound checksum \(the file is damaged: copy or regenerate it\)$"

rm -f "$d/train/2016.h5"
cp "$TEST_TMP/2016-good.h5" "$TEST_TMP/linked.h5"
/usr/bin/python3 - "$d/train/2016.h5" "$TEST_TMP/linked.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("padding", data=np.full(1 << 16, 7, "<f4"))
    f["fields"] = h5py.ExternalLink(sys.argv[2], "fields")
PY
train linked
expect_rc "linked: trains" $? 0
cp "$TEST_TMP/2016-good.h5" "$d/train/2016.h5"
train unlinked
expect_rc "unlinked: trains" $? 0
expect_eq "linked: the losses of the unlinked run" \
  "$(step_losses "$TEST_TMP/runs/test/1x1/linked/metrics.jsonl")" \
  "$(step_losses "$TEST_TMP/runs/test/1x1/unlinked/metrics.jsonl")"
expect_eq "linked: losses logged" "$(step_losses "$TEST_TMP/runs/test/1x1/linked/metrics.jsonl" | grep -c .)" 12
finish
