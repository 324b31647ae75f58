# SPDX-License-Identifier: BSD-3-Clause
# kernels/: the math, depending on nothing of ours. CPU reference ops
# (float for the trainer, double for the gradient tests).
noinst_LTLIBRARIES += kernels/libdlpar_kernels_cpu.la
kernels_libdlpar_kernels_cpu_la_SOURCES = kernels/cpu/ops.h kernels/cpu/ops_body.h \
	kernels/cpu/ops_f32.c kernels/cpu/ops_f64.c
kernels_libdlpar_kernels_cpu_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(BLAS_CFLAGS) -O3
kernels_libdlpar_kernels_cpu_la_LIBADD = $(BLAS_LIBS) -lm
EXTRA_DIST += kernels/README.md

# CUDA twins (bf16/fp16/fp32), compiled and linked whenever CUDA is found,
# also on machines without a GPU (CI): nvcc, sm_90 SASS + PTX by default.
if HAVE_CUDA
noinst_LIBRARIES = kernels/libdlpar_kernels_cuda.a trainer/libdlpar_model_cuda.a
kernels_libdlpar_kernels_cuda_a_SOURCES = kernels/cuda/ops.h kernels/cuda/common.cuh kernels/cuda/reduce.cuh \
	kernels/cuda/layernorm_rows.cuh \
	kernels/cuda/attention_tiles.cuh kernels/cuda/attention_mma_tiles.cuh \
	kernels/cuda/gemm.cu kernels/cuda/elementwise.cu kernels/cuda/layernorm.cu \
	kernels/cuda/attention.cu kernels/cuda/attention_mma.cu kernels/cuda/loss.cu kernels/cuda/adam.cu
# cuDNN's fused attention, where configure found cuDNN (HAVE_CUDNN)
if HAVE_CUDNN
kernels_libdlpar_kernels_cuda_a_SOURCES += kernels/cuda/attention_cudnn.cu
endif
endif
SUFFIXES += .cu
# --enable-werror: nvcc's own warnings and the host compiler's are errors too
NVCC_FLAGS = $(NVCC_ARCHFLAGS) -O3 -std=c++17 -lineinfo -Xcompiler -fPIC,-Wall,-Wextra $(NVCC_WERROR) \
	-I$(top_srcdir) -I$(top_builddir) $(CUDA_CPPFLAGS) $(HDF5_CFLAGS)
.cu.o:
	@$(MKDIR_P) $(@D)
	$(AM_V_GEN)$(NVCC) $(NVCC_FLAGS) -c -o $@ $<
# nvcc's objects get no automatic dependencies: the headers they include
NVCC_INCLUDED = $(srcdir)/kernels/cuda/common.cuh $(srcdir)/kernels/cuda/ops.h $(srcdir)/kernels/cuda/reduce.cuh
kernels/cuda/gemm.o kernels/cuda/elementwise.o kernels/cuda/layernorm.o kernels/cuda/loss.o \
	kernels/cuda/adam.o kernels/cuda/attention_cudnn.o: $(NVCC_INCLUDED)
kernels/cuda/attention.o tests/unit/attention_emulator.o: $(NVCC_INCLUDED) \
	$(srcdir)/kernels/cuda/attention_tiles.cuh
# the GPU stand-ins' one block runner and C interface
tests/unit/attention_emulator.o tests/unit/attention_mma_emulator.o tests/unit/layernorm_emulator.o: \
	$(srcdir)/tests/unit/block_emulator.cuh $(srcdir)/tests/unit/emulators.h $(srcdir)/tests/unit/fibers.h
kernels/cuda/attention_mma.o tests/unit/attention_mma_emulator.o: $(NVCC_INCLUDED) \
	$(srcdir)/kernels/cuda/attention_tiles.cuh $(srcdir)/kernels/cuda/attention_mma_tiles.cuh
# The tensor-core attention keeps ptxas's report (registers and spills of
# each kernel) beside its object: tests/unit/attention_mma_build.sh reads it.
kernels/cuda/attention_mma.o: kernels/cuda/attention_mma.cu
	@$(MKDIR_P) $(@D)
	$(AM_V_GEN)$(NVCC) $(NVCC_FLAGS) -Xptxas -v -c -o $@ $< 2>$(@:.o=.ptxas) || { cat $(@:.o=.ptxas) >&2; exit 1; }
	@grep -v -e '^ptxas info' -e ' bytes stack frame, ' $(@:.o=.ptxas) >&2 || true
CLEANFILES += kernels/cuda/attention_mma.ptxas
# LayerNorm's backward block code (the kernels and the CPU stand-in);
# layernorm.o keeps ptxas's report too: tests/unit/layernorm_build.sh.
kernels/cuda/layernorm.o tests/unit/layernorm_emulator.o: $(srcdir)/kernels/cuda/layernorm_rows.cuh
tests/unit/layernorm_emulator.o: $(NVCC_INCLUDED)
kernels/cuda/layernorm.o: kernels/cuda/layernorm.cu
	@$(MKDIR_P) $(@D)
	$(AM_V_GEN)$(NVCC) $(NVCC_FLAGS) -Xptxas -v -c -o $@ $< 2>$(@:.o=.ptxas) || { cat $(@:.o=.ptxas) >&2; exit 1; }
	@grep -v -e '^ptxas info' -e ' bytes stack frame, ' $(@:.o=.ptxas) >&2 || true
CLEANFILES += kernels/cuda/layernorm.ptxas
EXTRA_DIST += kernels/cuda/ops.h kernels/cuda/common.cuh kernels/cuda/reduce.cuh kernels/cuda/attention_tiles.cuh \
	kernels/cuda/attention_mma_tiles.cuh kernels/cuda/attention_cudnn.cu kernels/cuda/layernorm_rows.cuh
