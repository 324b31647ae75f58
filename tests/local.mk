# SPDX-License-Identifier: BSD-3-Clause
# tests/: unit tests (C, no Slurm), integration tests on a real Slurm test
# bed (tests/testbed/dlpar-bed) and numerical tests against PyTorch. This
# file: the plugin's tests and what every test uses; tests/libdlpar.mk and
# tests/trainer.mk add theirs where those parts are built.
# Exit 77 = SKIP (with the reason printed), never a silent PASS.
TESTS_ENVIRONMENT = \
	DLPAR_SRCDIR=$(abs_top_srcdir) DLPAR_BUILDDIR=$(abs_top_builddir) \
	DLPAR_CHECK_OWNER=$$PPID ; export DLPAR_SRCDIR DLPAR_BUILDDIR DLPAR_CHECK_OWNER ;

check_PROGRAMS += tests/unit/test_grid tests/unit/test_topo tests/unit/test_spank_parsing
tests_unit_test_grid_SOURCES = tests/unit/test_grid.c tests/unit/check.h
tests_unit_test_grid_LDADD = common/libdlpar_common.la
tests_unit_test_topo_SOURCES = tests/unit/test_topo.c tests/unit/check.h
tests_unit_test_topo_LDADD = common/libdlpar_common.la
tests_unit_test_spank_parsing_SOURCES = tests/unit/test_spank_parsing.c tests/unit/check.h \
	spank/admin.c spank/request.c spank/plugstack.c spank/hostlist.c
tests_unit_test_spank_parsing_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_test_spank_parsing_LDADD = common/libdlpar_common.la -lslurm
TESTS += tests/unit/test_grid tests/unit/test_topo tests/unit/test_spank_parsing
# The C unit tests (no bed): make check-unit runs them alone (CI: under the sanitizers).
UNIT_TESTS = tests/unit/test_grid tests/unit/test_topo tests/unit/test_spank_parsing
check-unit:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(UNIT_TESTS)"

# What libdlpar.so and the plugin export; dlpar.h alone; dlpar.pc.
dist_check_SCRIPTS += tests/unit/exports.sh
TESTS += tests/unit/exports.sh
# One place in libdlpar ends the step or the process; its modules have no circle.
dist_check_SCRIPTS += tests/unit/one_ending.sh tests/unit/module_graph.sh
TESTS += tests/unit/one_ending.sh tests/unit/module_graph.sh
# LICENSE, and the SPDX line in every source file.
dist_check_SCRIPTS += tests/unit/licence.sh
TESTS += tests/unit/licence.sh
# contrib/dlpar-restart's decisions, exactly, with STAND-INs for srun,
# squeue, sinfo and scontrol that fail or answer on cue (no bed).
dist_check_SCRIPTS += tests/unit/restart_cases.sh
TESTS += tests/unit/restart_cases.sh
# No shell test says it left a check out and passes (a SKIP instead).
dist_check_SCRIPTS += tests/unit/no_silent_pass.sh
TESTS += tests/unit/no_silent_pass.sh
EXTRA_DIST += tests/unit/check.h

EXTRA_DIST += tests/testbed/dlpar-bed tests/testbed/trixie tests/topo/make-topologies \
	tests/topo/8gpu-2socket.xml tests/topo/4gpu-1socket.xml \
	tests/topo/4gpu-interleaved.xml tests/topo/bed-node.xml tests/topo/bed-interleaved.xml

# Integration tests on the Slurm test bed.
TEST_EXTENSIONS = .sh
# Every test runs under a time bound (tests/lib/bounded), scripts too: a
# GPU test under its own (GPU_TEST_BOUNDS in tests/trainer.mk), every other
# test under DLPAR_TEST_BOUND seconds. A test past its bound FAILs with a
# line naming it, so one hang costs CI at most that long and says where it
# was. The slowest, torch_env.sh, took 585 s on a loaded Debian 13 bed;
# make check DLPAR_TEST_BOUND=N changes the default.
DLPAR_TEST_BOUND = 900
TEST_BOUNDS = default=$(DLPAR_TEST_BOUND)
LOG_COMPILER = bash $(srcdir)/tests/lib/bounded $(TEST_BOUNDS) --
SH_LOG_COMPILER = $(LOG_COMPILER) bash
EXTRA_DIST += tests/lib/bounded
dist_check_SCRIPTS += tests/unit/bounds.sh
TESTS += tests/unit/bounds.sh
# The plugin's own; libdlpar's and the trainer's are in tests/libdlpar.mk
# and tests/trainer.mk.
INTEGRATION_TESTS = tests/integration/spank_options.sh tests/integration/spank_env.sh tests/integration/slurm_steps.sh \
	tests/integration/spank_config.sh tests/integration/spank_config_steps.sh tests/integration/spank_config_hello.sh \
	tests/integration/spank_network.sh tests/integration/plugin_install.sh tests/integration/restart_steps.sh
dist_check_SCRIPTS += $(INTEGRATION_TESTS)
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += tests/lib/common.sh tests/lib/requeue.sh tests/lib/restart.sh tests/lib/slow_rank tests/stand-ins/nsys tests/summary

CLEANFILES += tests/.bed tests/.bed.lock  # the test bed record (the bed stops with make check)
