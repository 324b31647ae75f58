# SPDX-License-Identifier: BSD-3-Clause
# tests/trainer.mk: the tests of the kernels and the trainer (built where
# its libraries are: Makefile.am): unit tests, training runs on the Slurm
# bed, the numerics against PyTorch, the GPU tests.
check_PROGRAMS += tests/unit/test_kernels
tests_unit_test_kernels_SOURCES = tests/unit/test_kernels.c tests/unit/check.h
tests_unit_test_kernels_LDADD = kernels/libdlpar_kernels_cpu.la -lm
TESTS += tests/unit/test_kernels
UNIT_TESTS += tests/unit/test_kernels tests/unit/test_checkpoint $(TRAINER_UNIT_TESTS)

# The cuDNN attention's plans for an H100, compiled without a GPU (the
# script sets the libcuda stub up; it SKIPs in builds without cuDNN).
if HAVE_CUDNN
check_PROGRAMS += tests/unit/test_sdpa_plan
tests_unit_test_sdpa_plan_SOURCES = tests/unit/test_sdpa_plan.c tests/unit/check.h
tests_unit_test_sdpa_plan_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_unit_test_sdpa_plan_LDADD = kernels/libdlpar_kernels_cuda.a $(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++ -lm
endif
dist_check_SCRIPTS += tests/unit/sdpa_plan.sh
TESTS += tests/unit/sdpa_plan.sh

# The trainer's modules, one program each (tests/unit/NAME.c, automake's
# default source) against libdlpar_trainer (test_checkpoint, with HDF5, below).
TRAINER_UNIT_TESTS = tests/unit/test_progress tests/unit/test_metrics tests/unit/test_train_args \
	tests/unit/test_yamltree tests/unit/test_npy tests/unit/test_params tests/unit/test_quoting
check_PROGRAMS += $(TRAINER_UNIT_TESTS)
TESTS += $(TRAINER_UNIT_TESTS)
tests_unit_test_progress_LDADD = $(TRAINER_LIBS)
tests_unit_test_metrics_LDADD = $(TRAINER_LIBS)
tests_unit_test_train_args_LDADD = $(TRAINER_LIBS)
tests_unit_test_yamltree_LDADD = $(TRAINER_LIBS)
tests_unit_test_npy_LDADD = $(TRAINER_LIBS)
tests_unit_test_params_LDADD = $(TRAINER_LIBS)
# every site that quotes input, the plugin's plugstack.conf and dlpar-run's flags included
tests_unit_test_quoting_SOURCES = tests/unit/test_quoting.c spank/admin.c tools/run_args.c
tests_unit_test_quoting_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
tests_unit_test_quoting_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS)

INTEGRATION_TESTS += \
	tests/integration/train_torch.sh \
	tests/integration/train_grids.sh \
	tests/integration/train_resume.sh \
	tests/integration/train_diverge.sh \
	tests/integration/train_inputs.sh \
	tests/integration/train_metrics.sh \
	tests/integration/train_skew.sh \
	tests/integration/train_progress.sh \
	tests/integration/tutorial_commands.sh \
	tests/integration/contrib_sbatch.sh \
	tests/integration/demo.sh \
	tests/integration/bundle.sh
dist_check_SCRIPTS += tests/integration/docs.sh
TESTS += tests/integration/docs.sh
# docs.sh installs from the build tree: it runs after the other tests that use it.
tests/integration/docs.log: $(INTEGRATION_TESTS:.sh=.log)

# Numerics: the CPU model against PyTorch.
check_PROGRAMS += tests/numerics/vit_dump
tests_numerics_vit_dump_SOURCES = tests/numerics/vit_dump.c
tests_numerics_vit_dump_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
tests_numerics_vit_dump_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lm
EXTRA_DIST += tests/numerics/torch_reference.py tests/numerics/torch_vit.py tests/numerics/read_tfevents.py

# GPU tests (make check-gpu runs only them): compiled and linked in every
# make check, where they SKIP without a GPU. They find etc/vit.yaml through
# DLPAR_SRCDIR or, run by hand from anywhere, the source tree built in.
if HAVE_CUDA
# An NVTX tool recording range names (NVTX_INJECTION64_PATH): the ranges
# and the profiled-steps window seen without nsys.
check_LTLIBRARIES += tests/lib/libnvtx_record.la
tests_lib_libnvtx_record_la_SOURCES = tests/lib/nvtx_record.c
tests_lib_libnvtx_record_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_lib_libnvtx_record_la_LDFLAGS = -module -avoid-version -rpath /nowhere
GPU_TESTS = tests/gpu/test_kernels_gpu tests/gpu/test_step_gpu tests/gpu/test_fp32_gpu tests/gpu/test_graph_gpu
check_PROGRAMS += $(GPU_TESTS)
TESTS += $(GPU_TESTS)
GPU_TEST_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -DDLPAR_TEST_SRCDIR='"$(abs_top_srcdir)"'
GPU_MODEL_LDADD = trainer/libdlpar_model_cuda.a $(TRAINER_LIBS) \
	kernels/libdlpar_kernels_cuda.a $(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++ -lm
tests_gpu_test_kernels_gpu_SOURCES = tests/gpu/test_kernels_gpu.c tests/gpu/gpu_check.h
tests_gpu_test_kernels_gpu_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_kernels_gpu_LDADD = kernels/libdlpar_kernels_cuda.a kernels/libdlpar_kernels_cpu.la \
	$(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++ -lm
tests_gpu_test_step_gpu_SOURCES = tests/gpu/test_step_gpu.c tests/gpu/gpu_check.h tests/gpu/model_check.h
tests_gpu_test_step_gpu_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_step_gpu_LDADD = $(GPU_MODEL_LDADD)
tests_gpu_test_fp32_gpu_SOURCES = tests/gpu/test_fp32_gpu.c tests/gpu/gpu_check.h tests/gpu/model_check.h
tests_gpu_test_fp32_gpu_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_fp32_gpu_LDADD = $(GPU_MODEL_LDADD)
tests_gpu_test_graph_gpu_SOURCES = tests/gpu/test_graph_gpu.c tests/gpu/gpu_check.h tests/gpu/model_check.h
tests_gpu_test_graph_gpu_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_graph_gpu_LDADD = $(GPU_MODEL_LDADD)
# The attention kernels' block code on the CPU (a stand-in for the GPU):
# runs in every make check.
check_PROGRAMS += tests/unit/test_attention_tiles
TESTS += tests/unit/test_attention_tiles
tests_unit_test_attention_tiles_SOURCES = tests/unit/test_attention_tiles.c tests/unit/attention_emulator.cu \
	tests/unit/attention_emulator.h tests/gpu/gpu_check.h
tests_unit_test_attention_tiles_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_unit_test_attention_tiles_LDADD = $(tests_gpu_test_kernels_gpu_LDADD) -lpthread
if HAVE_CUDNN
GPU_TESTS += tests/gpu/test_attention_gpu
tests_gpu_test_attention_gpu_SOURCES = tests/gpu/test_attention_gpu.c tests/gpu/gpu_check.h
tests_gpu_test_attention_gpu_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_attention_gpu_LDADD = $(tests_gpu_test_kernels_gpu_LDADD)
endif
# Whole dlpar-train --device=cuda runs (loader, checkpoints, shapes);
# gpu_usable: whether the CUDA runtime sees a GPU (exit 0, else 77)
GPU_RUN_TESTS = tests/gpu/train_gpu.sh
TESTS += $(GPU_RUN_TESTS)
check_PROGRAMS += tests/gpu/gpu_usable
tests_gpu_gpu_usable_SOURCES = tests/gpu/gpu_usable.c tests/gpu/gpu_check.h
tests_gpu_gpu_usable_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_gpu_usable_LDADD = $(tests_gpu_test_kernels_gpu_LDADD)
endif
EXTRA_DIST += tests/gpu/train_gpu.sh
# Only the GPU tests, from this build directory (wherever it is); each SKIPs
# without a GPU.
check-gpu:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(GPU_TESTS) $(GPU_RUN_TESTS)"

# libdlpar's and the trainer's threads under ThreadSanitizer: make
# check-threads in a build configured --enable-sanitizers=thread (CI does).
check-threads:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS="tests/integration/threads.sh"
EXTRA_DIST += tests/integration/threads.sh tests/tsan.supp

# The checkpoint reader against checkpoints edited the way its fuzz target edits them.
check_PROGRAMS += tests/unit/test_checkpoint
tests_unit_test_checkpoint_SOURCES = tests/unit/test_checkpoint.c tests/fuzz/checkpoint_edits.c \
	tests/fuzz/checkpoint_edits.h
tests_unit_test_checkpoint_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
tests_unit_test_checkpoint_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lm
TESTS += tests/unit/test_checkpoint
