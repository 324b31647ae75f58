# SPDX-License-Identifier: BSD-3-Clause
# trainer/: dlpar-train (config -> data -> model -> loop) and dlpar-gen-data.
# Depends on kernels/ for the math and libdlpar for communication only.
noinst_LTLIBRARIES += trainer/libdlpar_trainer.la
trainer_libdlpar_trainer_la_SOURCES = \
	trainer/yamltree.c trainer/yamltree.h trainer/train_config.c trainer/train_config.h \
	trainer/rng.c trainer/rng.h trainer/input_file.c trainer/input_file.h trainer/npy.c trainer/npy.h \
	trainer/atomic_file.c trainer/atomic_file.h \
	trainer/h5util.c trainer/h5util.h trainer/data.c trainer/data.h trainer/params.c trainer/params.h \
	trainer/model.h trainer/model_common.c trainer/model_cpu.c trainer/checkpoint.c trainer/checkpoint.h \
	trainer/metrics.c trainer/metrics.h trainer/progress.c trainer/progress.h \
	trainer/args.c trainer/args.h
trainer_libdlpar_trainer_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(HDF5_CFLAGS) $(YAML_CFLAGS) $(PTHREAD_CFLAGS) \
	$(LIBDEFLATE_CFLAGS)
trainer_libdlpar_trainer_la_LIBADD = kernels/libdlpar_kernels_cpu.la libdlpar/libdlpar.la $(HDF5_LIBS) $(YAML_LIBS) $(LIBDEFLATE_LIBS) -lz -lm
# What links the trainer's code: common/ too, which libdlpar.so keeps to itself.
TRAINER_LIBS = trainer/libdlpar_trainer.la common/libdlpar_common.la

bin_PROGRAMS += trainer/dlpar-train trainer/dlpar-gen-data
trainer_dlpar_train_SOURCES = trainer/train.c trainer/train.h trainer/step.c trainer/step.h trainer/benchy.c \
	trainer/benchy.h
trainer_dlpar_train_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(HDF5_CFLAGS) $(PTHREAD_CFLAGS)
# CUDA's headers: benchy.c times host-to-device copies
trainer_dlpar_train_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
trainer_dlpar_train_LDADD =
trainer_dlpar_gen_data_SOURCES = trainer/gen_data.c trainer/rng.c trainer/npy.c trainer/atomic_file.c trainer/h5util.c \
	common/text.c common/error.c trainer/input_file.c
trainer_dlpar_gen_data_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
trainer_dlpar_gen_data_LDADD = $(HDF5_LIBS) -lm
if HAVE_CUDA
# The CUDA model, a file a stage (trainer/model_cuda/model_cuda.h lists them)
trainer_libdlpar_model_cuda_a_SOURCES = trainer/model_cuda/model_cuda.h trainer/model_cuda/model.cu \
	trainer/model_cuda/arena.cu trainer/model_cuda/step.cu trainer/model_cuda/forward.cu \
	trainer/model_cuda/backward.cu trainer/model_cuda/graphs.cu trainer/model_cuda/optimizer.cu \
	trainer/model_cuda/metrics.cu
# nvcc's objects get no automatic dependencies: the headers they include
$(trainer_libdlpar_model_cuda_a_OBJECTS): $(srcdir)/trainer/model_cuda/model_cuda.h $(srcdir)/trainer/model.h \
	$(srcdir)/kernels/cuda/ops.h $(srcdir)/kernels/cpu/ops.h
trainer_dlpar_train_LDADD += trainer/libdlpar_model_cuda.a
endif
trainer_dlpar_train_LDADD += $(TRAINER_LIBS) $(OPENMP_CFLAGS)
if HAVE_CUDA
trainer_dlpar_train_LDADD += kernels/libdlpar_kernels_cuda.a $(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++
endif
