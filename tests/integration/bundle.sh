#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/bundle.sh: contrib/dlpar-bundle makes a relocatable
# install (doc/admin.md, "GPU nodes without the build host's libraries"):
# unpacked at a path unlike its prefix, its dlpar-env runs the bundle's
# dlpar-train, which loads libdlpar and the HDF5/yaml/PMIx libraries from
# the bundle (not /usr/lib), and trains one epoch (12 steps) of the `test` config.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
make_data
out=$("$DLPAR_SRCDIR/contrib/dlpar-bundle" "$B" "$TEST_TMP/dlpar.tar.gz" 2>&1)
expect_rc "dlpar-bundle" $? 0
mkdir -p "$TEST_TMP/elsewhere" && tar -xzf "$TEST_TMP/dlpar.tar.gz" -C "$TEST_TMP/elsewhere"
root=$TEST_TMP/elsewhere/dlpar
for lib in libhdf5_serial libyaml libpmix libmpi; do
  TEST_CHECKS=$((TEST_CHECKS + 1))
  ls "$root/lib/bundled/$lib"*.so* >/dev/null 2>&1 || fail "no $lib in the bundle"
done
loaded=$(env -u LD_LIBRARY_PATH "$root/bin/dlpar-env" ldd "$root/bin/dlpar-train")
for lib in libdlpar.so libhdf5_serial.so libyaml; do
  expect_contains "dlpar-train loads $lib from the bundle" "$(grep "$lib" <<<"$loaded")" "=> $root/lib"
done
out=$(env -u LD_LIBRARY_PATH -u PMIX_NAMESPACE OMP_NUM_THREADS=1 "$root/bin/dlpar-env" dlpar-train --config=test \
      "$root/etc/dlpar/vit.yaml" $(data_args) --num_iters=12 2>&1)
expect_rc "the bundle's dlpar-train" $? 0
expect_contains "the bundle's dlpar-train trained" "$out" "done at step 12"
out=$("$DLPAR_SRCDIR/contrib/dlpar-bundle" "$TEST_TMP/nowhere" "$TEST_TMP/x.tar.gz" 2>&1)
expect_rc "dlpar-bundle without a build directory" $? 2
expect_eq "one line of usage" "$(wc -l <<<"$out")" 1
finish
