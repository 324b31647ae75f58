# SPDX-License-Identifier: BSD-3-Clause
# tests/trainer.mk: the tests of the kernels and the trainer (built where
# its libraries are: Makefile.am): unit tests, training runs on the Slurm
# bed, the numerics against PyTorch, the GPU tests.
check_PROGRAMS += tests/unit/test_kernels
tests_unit_test_kernels_SOURCES = tests/unit/test_kernels.c tests/unit/check.h
tests_unit_test_kernels_LDADD = kernels/libdlpar_kernels_cpu.la -lm
TESTS += tests/unit/test_kernels
UNIT_TESTS += tests/unit/test_kernels tests/unit/test_checkpoint $(TRAINER_UNIT_TESTS)
# The CPU ops' threads: OpenBLAS on one inside OpenMP's, whoever calls them.
check_PROGRAMS += tests/unit/test_blas_threads
tests_unit_test_blas_threads_SOURCES = tests/unit/test_blas_threads.c tests/unit/check.h
tests_unit_test_blas_threads_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(BLAS_CFLAGS)
tests_unit_test_blas_threads_LDADD = kernels/libdlpar_kernels_cpu.la $(BLAS_LIBS) $(OPENMP_CFLAGS) -lm
TESTS += tests/unit/test_blas_threads
UNIT_TESTS += tests/unit/test_blas_threads

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
# bench/gpu-round's steps and time plan, without a GPU
dist_check_SCRIPTS += tests/unit/gpu_round_plan.sh
TESTS += tests/unit/gpu_round_plan.sh

# The trainer's modules, one program each (tests/unit/NAME.c, automake's
# default source) against libdlpar_trainer (test_checkpoint, with HDF5, below).
TRAINER_UNIT_TESTS = tests/unit/test_progress tests/unit/test_metrics tests/unit/test_train_args \
	tests/unit/test_yamltree tests/unit/test_npy tests/unit/test_params tests/unit/test_quoting \
	tests/unit/test_normalise
check_PROGRAMS += $(TRAINER_UNIT_TESTS)
TESTS += $(TRAINER_UNIT_TESTS)
tests_unit_test_progress_LDADD = $(TRAINER_LIBS)
tests_unit_test_metrics_LDADD = $(TRAINER_LIBS)
tests_unit_test_train_args_LDADD = $(TRAINER_LIBS)
tests_unit_test_yamltree_LDADD = $(TRAINER_LIBS)
tests_unit_test_npy_LDADD = $(TRAINER_LIBS)
tests_unit_test_normalise_LDADD = $(TRAINER_LIBS)
tests_unit_test_params_LDADD = $(TRAINER_LIBS)
# every site that quotes input, the plugin's plugstack.conf and dlpar-run's flags included
tests_unit_test_quoting_SOURCES = tests/unit/test_quoting.c spank/admin.c spank/hostlist.c tools/run_args.c
tests_unit_test_quoting_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_test_quoting_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
tests_unit_test_quoting_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lslurm

INTEGRATION_TESTS += \
	tests/integration/train_torch.sh \
	tests/integration/train_grids.sh \
	tests/integration/train_resume.sh tests/integration/restart.sh tests/integration/restart_killed.sh \
	tests/integration/timelimit.sh \
	tests/integration/train_stop_bed.sh \
	tests/integration/train_diverge.sh \
	tests/integration/train_inputs.sh \
	tests/integration/train_metrics.sh \
	tests/integration/train_skew.sh \
	tests/integration/train_progress.sh \
	tests/integration/train_loader_faults.sh \
	tests/integration/train_hostile_files.sh \
	tests/integration/train_layouts.sh tests/integration/train_layouts_h5py.sh \
	tests/integration/tutorial_commands.sh tests/integration/tutorial_profiler.sh \
	tests/integration/contrib_sbatch.sh tests/integration/contrib_sbatch_torch.sh \
	tests/integration/demo.sh \
	tests/integration/bundle.sh
dist_check_SCRIPTS += tests/integration/docs.sh tests/integration/docs_torch.sh
TESTS += tests/integration/docs.sh tests/integration/docs_torch.sh
# docs.sh installs from the build tree: it runs after the other tests that use it.
tests/integration/docs.log: $(INTEGRATION_TESTS:.sh=.log)

# Numerics: the CPU model against PyTorch.
check_PROGRAMS += tests/numerics/vit_dump
tests_numerics_vit_dump_SOURCES = tests/numerics/vit_dump.c
tests_numerics_vit_dump_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
tests_numerics_vit_dump_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lm
EXTRA_DIST += tests/numerics/torch_reference.py tests/numerics/torch_vit.py tests/numerics/read_tfevents.py

# The GPU stand-ins (tests/unit/*_emulator.cu) share one block runner and
# one C interface.
BLOCK_EMULATOR_SOURCES = tests/unit/block_emulator.cuh tests/unit/emulators.h tests/unit/fibers.c \
	tests/unit/fibers.h tests/gpu/gpu_check.h

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
GPU_TESTS = tests/gpu/test_kernels_gpu tests/gpu/test_step_gpu tests/gpu/test_fp32_gpu tests/gpu/test_graph_gpu \
	tests/gpu/test_nccl_gpu
# Each GPU test's time bound in seconds (tests/lib/bounded), beside it:
# about 2x what it took on an H200 run 4 at a time beside compute-sanitizer
# (test_kernels_gpu over 35 s, attention 13 s, nccl 13 s, fp32 7 s;
# train_gpu.sh 88 s with its runs failing early), so that `make -j4
# check-gpu` ends within 4 minutes: 4 jobs at a time end within sum / 4 +
# 3/4 x the longest bound (tests/unit/gpu_bound.sh).
GPU_TEST_BOUNDS = test_kernels_gpu=60 test_step_gpu=15 test_fp32_gpu=30 test_graph_gpu=30 test_nccl_gpu=30
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
# The CUDA model's device memory against its budgets, computed on the host:
# runs in every make check.
check_PROGRAMS += tests/unit/test_arena
TESTS += tests/unit/test_arena
tests_unit_test_arena_SOURCES = tests/unit/test_arena.c tests/unit/check.h
tests_unit_test_arena_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_unit_test_arena_LDADD = $(GPU_MODEL_LDADD)
# libdlpar's NCCL backend on one GPU, every group with a communicator of
# one rank (white-box: libdlpar_core); a kernel that holds its stream for
# the stuck collective (nvcc: tests/gpu/spin_kernel.cu).
tests_gpu_test_nccl_gpu_SOURCES = tests/gpu/test_nccl_gpu.c tests/gpu/gpu_check.h tests/gpu/spin_kernel.cu \
	tests/gpu/spin_kernel.h
tests_gpu_test_nccl_gpu_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_nccl_gpu_LDADD = libdlpar/libdlpar_core.la kernels/libdlpar_kernels_cuda.a $(CUDA_LDFLAGS) \
	$(CUDA_LIBS) -lstdc++ -lm
# The attention kernels' block code on the CPU (a stand-in for the GPU):
# runs in every make check.
check_PROGRAMS += tests/unit/test_attention_tiles
TESTS += tests/unit/test_attention_tiles
tests_unit_test_attention_tiles_SOURCES = tests/unit/test_attention_tiles.c tests/unit/attention_emulator.cu \
	$(BLOCK_EMULATOR_SOURCES)
tests_unit_test_attention_tiles_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_unit_test_attention_tiles_LDADD = $(tests_gpu_test_kernels_gpu_LDADD)
# The tensor-core attention's block code on the CPU (its stand-in for the
# GPU runs a fiber per CUDA thread), beside the FMA kernels' emulation; and
# its kernels as nvcc compiled them (no spills; the TF32 MMA in the PTX):
# both in every make check.
check_PROGRAMS += tests/unit/test_attention_mma
TESTS += tests/unit/test_attention_mma tests/unit/attention_mma_build.sh
tests_unit_test_attention_mma_SOURCES = tests/unit/test_attention_mma.c tests/unit/attention_mma_emulator.cu \
	tests/unit/attention_emulator.cu $(BLOCK_EMULATOR_SOURCES)
tests_unit_test_attention_mma_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_unit_test_attention_mma_LDADD = $(tests_gpu_test_kernels_gpu_LDADD)
dist_check_SCRIPTS += tests/unit/attention_mma_build.sh
if HAVE_CUDNN
GPU_TESTS += tests/gpu/test_attention_gpu
GPU_TEST_BOUNDS += test_attention_gpu=30
tests_gpu_test_attention_gpu_SOURCES = tests/gpu/test_attention_gpu.c tests/gpu/gpu_check.h
tests_gpu_test_attention_gpu_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_attention_gpu_LDADD = $(tests_gpu_test_kernels_gpu_LDADD)
endif
# Whole dlpar-train --device=cuda runs (loader, checkpoints, shapes);
# gpu_usable: whether the CUDA runtime sees a GPU (exit 0, else 77)
GPU_RUN_TESTS = tests/gpu/train_gpu.sh
GPU_TEST_BOUNDS += train_gpu.sh=170
TESTS += $(GPU_RUN_TESTS)
check_PROGRAMS += tests/gpu/gpu_usable
tests_gpu_gpu_usable_SOURCES = tests/gpu/gpu_usable.c tests/gpu/gpu_check.h
tests_gpu_gpu_usable_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_gpu_usable_LDADD = $(tests_gpu_test_kernels_gpu_LDADD)
endif
EXTRA_DIST += tests/gpu/train_gpu.sh
# Each GPU test runs under its own time bound (GPU_TEST_BOUNDS, through
# tests/lib/bounded, the harness's LOG_COMPILER in tests/local.mk), chosen
# so that make check-gpu as a whole ends within 4 minutes even if every test
# ran to its bound (tests/unit/gpu_bound.sh adds them up; tests/unit/bounds.sh checks the wrapper); a test past it
# FAILs with a line naming it and the bound.
TEST_BOUNDS += $(GPU_TEST_BOUNDS)
# The wrapper itself, and this build's bounds against its GPU tests.
dist_check_SCRIPTS += tests/unit/gpu_bound.sh
TESTS += tests/unit/gpu_bound.sh
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

# The loader against the fields it was given, bit for bit: layouts (zlib:
# chunks written with a filter skipped), crops, reader threads, batches
# ahead, restarts; NaN/inf, truncated files and damaged chunks named.
check_PROGRAMS += tests/unit/test_loader
tests_unit_test_loader_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS) $(PTHREAD_CFLAGS)
tests_unit_test_loader_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lz -lm
TESTS += tests/unit/test_loader
UNIT_TESTS += tests/unit/test_loader
# The loader's open and read over a corpus of unusual and hostile HDF5 files
# (tests/unit/loader_corpus.py): each read as its plain twin or refused in one line.
check_PROGRAMS += tests/unit/test_loader_corpus
tests_unit_test_loader_corpus_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS) $(PTHREAD_CFLAGS)
tests_unit_test_loader_corpus_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS) -lz -lm
TESTS += tests/unit/test_loader_corpus
UNIT_TESTS += tests/unit/test_loader_corpus
EXTRA_DIST += tests/unit/loader_corpus.py

# LayerNorm's backward and the column sums' block code on the CPU (a
# stand-in for the GPU, a fiber per CUDA thread): every make check; and
# layernorm.o as nvcc compiled it (ptxas's report: no spills).
if HAVE_CUDA
check_PROGRAMS += tests/unit/test_layernorm_rows
TESTS += tests/unit/test_layernorm_rows tests/unit/layernorm_build.sh
tests_unit_test_layernorm_rows_SOURCES = tests/unit/test_layernorm_rows.c tests/unit/layernorm_emulator.cu \
	$(BLOCK_EMULATOR_SOURCES)
tests_unit_test_layernorm_rows_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_unit_test_layernorm_rows_LDADD = $(tests_gpu_test_kernels_gpu_LDADD)
endif
dist_check_SCRIPTS += tests/unit/layernorm_build.sh
