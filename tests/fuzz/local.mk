# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/: fuzz targets over the readers of user input (YAML tree,
# config + overrides, .npy, checkpoint, the loader's HDF5 files). make check replays each target's
# corpus once per input (tests/fuzz/TARGET.sh, tests/fuzz/run.sh):
# deterministic. `make fuzz` explores at random for a bounded time per target
# (FUZZ_SECONDS, default 300; FUZZ_SEED) and adds what it finds, minimised,
# to the corpus (tests/fuzz/explore.sh). Each target is built twice: with
# the seeded mutation driver (driver.c) by CC, always; and where configure
# found clang with libFuzzer, with -fsanitize=fuzzer,address,undefined from
# the same sources (tests/fuzz/libfuzzer/fuzz_TARGET).
FUZZ_NAMES = yaml config npy checkpoint loader
FUZZ_DRIVER = tests/fuzz/driver.c tests/fuzz/fuzz_common.c tests/fuzz/fuzz.h
check_PROGRAMS += tests/fuzz/fuzz_yaml tests/fuzz/fuzz_config tests/fuzz/fuzz_npy tests/fuzz/fuzz_checkpoint \
	tests/fuzz/fuzz_loader
tests_fuzz_fuzz_yaml_SOURCES = tests/fuzz/fuzz_yaml.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_yaml_LDADD = $(TRAINER_LIBS)
tests_fuzz_fuzz_config_SOURCES = tests/fuzz/fuzz_config.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_config_LDADD = $(TRAINER_LIBS)
tests_fuzz_fuzz_npy_SOURCES = tests/fuzz/fuzz_npy.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_npy_LDADD = $(TRAINER_LIBS)
tests_fuzz_fuzz_checkpoint_SOURCES = tests/fuzz/fuzz_checkpoint.c tests/fuzz/checkpoint_edits.c \
	tests/fuzz/checkpoint_edits.h $(FUZZ_DRIVER)
tests_fuzz_fuzz_checkpoint_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
tests_fuzz_fuzz_checkpoint_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lm
tests_fuzz_fuzz_loader_SOURCES = tests/fuzz/fuzz_loader.c $(FUZZ_DRIVER)
tests_fuzz_fuzz_loader_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS) $(PTHREAD_CFLAGS)
tests_fuzz_fuzz_loader_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lm

FUZZ_TESTS = tests/fuzz/yaml.sh tests/fuzz/config.sh tests/fuzz/npy.sh tests/fuzz/checkpoint.sh tests/fuzz/loader.sh
dist_check_SCRIPTS += $(FUZZ_TESTS)
TESTS += $(FUZZ_TESTS)
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus.sh tests/fuzz/explore.sh tests/fuzz/fuzz_yaml.c tests/fuzz/fuzz_config.c tests/fuzz/fuzz_npy.c \
	tests/fuzz/fuzz_checkpoint.c tests/fuzz/fuzz_loader.c tests/fuzz/seeds

if HAVE_LIBFUZZER
# The readers compiled again by clang with the sanitizers, linked through
# libtool against libdlpar (checkpoint.c's collective save needs it).
LIBFUZZER_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DHAVE_CONFIG_H \
	-I$(top_srcdir) -I$(top_builddir) $(HDF5_CFLAGS) $(YAML_CFLAGS)
LIBFUZZER_READERS = $(top_srcdir)/trainer/config/yamltree.c $(top_srcdir)/trainer/config/input_file.c \
	$(top_srcdir)/trainer/config/train_config.c $(top_srcdir)/trainer/data/npy.c \
	$(top_srcdir)/trainer/data/atomic_file.c $(top_srcdir)/trainer/data/h5util.c $(top_srcdir)/trainer/data/rng.c \
	$(top_srcdir)/trainer/model/params.c $(top_srcdir)/trainer/model/model_common.c \
	$(top_srcdir)/trainer/run/checkpoint.c $(top_srcdir)/tests/fuzz/fuzz_common.c $(top_srcdir)/tests/fuzz/checkpoint_edits.c \
	$(top_srcdir)/trainer/data/data.c $(top_srcdir)/trainer/data/normalise.c
LIBFUZZER_TARGETS = tests/fuzz/libfuzzer/fuzz_yaml tests/fuzz/libfuzzer/fuzz_config tests/fuzz/libfuzzer/fuzz_npy \
	tests/fuzz/libfuzzer/fuzz_checkpoint tests/fuzz/libfuzzer/fuzz_loader
$(LIBFUZZER_TARGETS): $(LIBFUZZER_READERS) $(top_srcdir)/tests/fuzz/fuzz.h $(top_srcdir)/tests/fuzz/checkpoint_edits.h \
		libdlpar/libdlpar.la
	@$(MKDIR_P) tests/fuzz/libfuzzer
	$(AM_V_CCLD)$(LIBTOOL) --quiet --tag=CC --mode=link $(FUZZ_CC) $(LIBFUZZER_CFLAGS) -o $@ \
	  $(top_srcdir)/tests/fuzz/`basename $@`.c $(LIBFUZZER_READERS) libdlpar/libdlpar.la common/libdlpar_common.la $(HDF5_LIBS) $(YAML_LIBS) $(LIBDEFLATE_LIBS) -lz -lm
tests/fuzz/libfuzzer/fuzz_yaml: $(top_srcdir)/tests/fuzz/fuzz_yaml.c
tests/fuzz/libfuzzer/fuzz_config: $(top_srcdir)/tests/fuzz/fuzz_config.c
tests/fuzz/libfuzzer/fuzz_npy: $(top_srcdir)/tests/fuzz/fuzz_npy.c
tests/fuzz/libfuzzer/fuzz_checkpoint: $(top_srcdir)/tests/fuzz/fuzz_checkpoint.c
tests/fuzz/libfuzzer/fuzz_loader: $(top_srcdir)/tests/fuzz/fuzz_loader.c
tests/fuzz/yaml.log: tests/fuzz/libfuzzer/fuzz_yaml
tests/fuzz/config.log: tests/fuzz/libfuzzer/fuzz_config
tests/fuzz/npy.log: tests/fuzz/libfuzzer/fuzz_npy
tests/fuzz/checkpoint.log: tests/fuzz/libfuzzer/fuzz_checkpoint
tests/fuzz/loader.log: tests/fuzz/libfuzzer/fuzz_loader
endif
clean-local:
	-rm -rf tests/fuzz/libfuzzer tests/fuzz/explore-*

# make fuzz [FUZZ_SECONDS=300] [FUZZ_SEED=N] [FUZZ_TARGETS="yaml config"]
FUZZ_SECONDS = 300
FUZZ_TARGETS = $(FUZZ_NAMES)
fuzz: tests/fuzz/fuzz_yaml tests/fuzz/fuzz_config tests/fuzz/fuzz_npy tests/fuzz/fuzz_checkpoint tests/fuzz/fuzz_loader \
		trainer/dlpar-gen-data $(LIBFUZZER_TARGETS)
	@$(MKDIR_P) tests; rc=0; for t in $(FUZZ_TARGETS); do \
	  DLPAR_SRCDIR=$(abs_top_srcdir) DLPAR_BUILDDIR=$(abs_top_builddir) DLPAR_FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  $(if $(FUZZ_SEED),DLPAR_FUZZ_SEED=$(FUZZ_SEED)) bash $(srcdir)/tests/fuzz/explore.sh $$t || rc=1; done; exit $$rc
