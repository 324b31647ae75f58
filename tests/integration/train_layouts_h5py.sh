#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/train_layouts_h5py.sh: dlpar-gen-data's layouts
# (--layout=) stored as asked, as h5py sees them: the chunk shape as h5py's
# chunks=True guesses it, gzip level 4, shuffle. SKIPs without python3-h5py;
# train_layouts.sh checks the layouts' values and training on each.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
/usr/bin/python3 -c 'import h5py' 2>/dev/null || skip "no h5py for /usr/bin/python3 (apt-get install python3-h5py)"
layouts="steps contiguous chunked gzip shuffle-gzip"
for layout in $layouts; do
  "$B/trainer/dlpar-gen-data" --dir="$TEST_TMP/$layout" --channels=4 --height=16 --width=32 --steps=24 --years=2 \
    --layout=$layout >/dev/null
  expect_rc "dlpar-gen-data --layout=$layout" $? 0
done
for layout in $layouts; do
  expect_eq "$layout: stored as h5py would" "$(/usr/bin/python3 - "$TEST_TMP/$layout/train/2016.h5" <<'PY'
import sys, h5py
from h5py._hl.filters import guess_chunk
d = h5py.File(sys.argv[1], "r")["fields"]
kind = ("contiguous" if d.chunks is None else "one step a chunk" if d.chunks == (1,) + d.shape[1:]
        else "chunks=True" if d.chunks == guess_chunk(d.shape, None, 4) else str(d.chunks))
print(kind, d.compression, d.compression_opts, d.shuffle)
PY
)" "$(case $layout in
      steps) echo "one step a chunk None None False" ;;
      contiguous) echo "contiguous None None False" ;;
      chunked) echo "chunks=True None None False" ;;
      gzip) echo "chunks=True gzip 4 False" ;;
      shuffle-gzip) echo "chunks=True gzip 4 True" ;;
    esac)"
done
finish
