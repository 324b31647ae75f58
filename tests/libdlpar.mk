# SPDX-License-Identifier: BSD-3-Clause
# tests/libdlpar.mk: the tests of libdlpar, its tools and the Python module
# (built where PMIx is: Makefile.am). Integration tests on the Slurm bed.
check_PROGRAMS += tests/integration/pmix_client
tests_integration_pmix_client_SOURCES = tests/integration/pmix_client.c
tests_integration_pmix_client_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS)
tests_integration_pmix_client_LDADD = $(PMIX_LIBS)
INTEGRATION_TESTS += \
	tests/integration/bed_pmix.sh \
	tests/integration/torch_env.sh \
	tests/integration/torch_stop_bed.sh \
	tests/integration/torch_requeue.sh \
	tests/integration/spank_profile.sh \
	tests/integration/spank_admin.sh \
	tests/integration/launcher_groups.sh \
	tests/integration/launcher_faults.sh tests/integration/stacks.sh \
	tests/integration/launcher_nccl_ids.sh \
	tests/integration/launcher_startup.sh \
	tests/integration/launcher_host_collectives.sh \
	tests/integration/launcher_check.sh \
	tests/integration/check_batch.sh \
	tests/integration/dlpar_run_cli.sh
EXTRA_DIST += tests/integration/torch/env_programs.py tests/integration/torch/module_program.py
check_PROGRAMS += tests/integration/rank_probe tests/integration/host_collectives
tests_integration_rank_probe_SOURCES = tests/integration/rank_probe.c
tests_integration_rank_probe_LDADD = libdlpar/libdlpar_core.la
# its functions named in the stacks it writes (stuck_in_user_code)
tests_integration_rank_probe_LDFLAGS = -export-dynamic
tests_integration_host_collectives_SOURCES = tests/integration/host_collectives.c
tests_integration_host_collectives_LDADD = libdlpar/libdlpar_core.la
# dlpar_init's stop signals (kept or turned into stop requests) and
# DLPAR_NCCL_ONE_RANK, through rank_probe run plain (one rank) and under
# dlpar-run (no bed).
dist_check_SCRIPTS += tests/unit/stop_signals.sh tests/unit/nccl_one_rank.sh
TESTS += tests/unit/stop_signals.sh tests/unit/nccl_one_rank.sh
# The Python module's mirrors of dlpar.h's structs, field by field, and the
# effective timeouts it reads from dlpar_info (under dlpar-run).
check_PROGRAMS += tests/unit/struct_layout
tests_unit_struct_layout_SOURCES = tests/unit/struct_layout.c
dist_check_SCRIPTS += tests/unit/python_mirror.sh
TESTS += tests/unit/python_mirror.sh
# Stopping a PyTorch program early (dlpar.stop, dlpar.torch.Stop) through
# contrib/pytorch/ddp_requeue.py under dlpar-run: the agreed stop step, the
# atomic checkpoint, exit 85, the restart at the next step, a signal twice,
# during start-up, during the checkpoint's write.
dist_check_SCRIPTS += tests/integration/torch_stop.sh
TESTS += tests/integration/torch_stop.sh
# The module pip-installed into a venv (python/pyproject.toml, no network)
# finding libdlpar without DLPAR_LIBRARY, its programs run from there.
dist_check_SCRIPTS += tests/unit/python_venv.sh
TESTS += tests/unit/python_venv.sh
