# SPDX-License-Identifier: BSD-3-Clause
# trainer/: dlpar-train (config/ -> data/ -> model/ -> run/, the loop; see README.md) and dlpar-gen-data.
# Depends on kernels/ for the math and libdlpar for communication only.
noinst_LTLIBRARIES += trainer/libdlpar_trainer.la
trainer_libdlpar_trainer_la_SOURCES = \
	trainer/config/args.c trainer/config/args.h trainer/config/train_config.c trainer/config/train_config.h \
	trainer/config/yamltree.c trainer/config/yamltree.h trainer/config/input_file.c trainer/config/input_file.h \
	trainer/data/data.c trainer/data/data.h trainer/data/normalise.c trainer/data/normalise.h \
	trainer/data/h5util.c trainer/data/h5util.h \
	trainer/data/npy.c trainer/data/npy.h trainer/data/rng.c trainer/data/rng.h \
	trainer/data/atomic_file.c trainer/data/atomic_file.h \
	trainer/model/model.h trainer/model/model_common.c trainer/model/model_cpu.c \
	trainer/model/params.c trainer/model/params.h \
	trainer/run/checkpoint.c trainer/run/checkpoint.h trainer/run/metrics.c trainer/run/metrics.h \
	trainer/run/progress.c trainer/run/progress.h
trainer_libdlpar_trainer_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(HDF5_CFLAGS) $(YAML_CFLAGS) $(PTHREAD_CFLAGS) \
	$(LIBDEFLATE_CFLAGS)
trainer_libdlpar_trainer_la_LIBADD = kernels/libdlpar_kernels_cpu.la libdlpar/libdlpar.la $(HDF5_LIBS) $(YAML_LIBS) $(LIBDEFLATE_LIBS) -lz -lm
# What links the trainer's code: common/ too, which libdlpar.so keeps to itself.
TRAINER_LIBS = trainer/libdlpar_trainer.la common/libdlpar_common.la

bin_PROGRAMS += trainer/dlpar-train trainer/dlpar-gen-data
trainer_dlpar_train_SOURCES = trainer/run/train.c trainer/run/train.h trainer/run/step.c trainer/run/step.h \
	trainer/run/benchy.c trainer/run/benchy.h
trainer_dlpar_train_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(HDF5_CFLAGS) $(PTHREAD_CFLAGS)
# CUDA's headers: benchy.c times host-to-device copies
trainer_dlpar_train_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
trainer_dlpar_train_LDADD =
trainer_dlpar_gen_data_SOURCES = trainer/data/gen_data.c trainer/data/rng.c trainer/data/npy.c \
	trainer/data/atomic_file.c trainer/data/h5util.c common/text.c common/error.c trainer/config/input_file.c
trainer_dlpar_gen_data_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS)
trainer_dlpar_gen_data_LDADD = $(HDF5_LIBS) -lm
if HAVE_CUDA
# The CUDA model, a file a stage (trainer/model/cuda/model_cuda.h lists them)
trainer_libdlpar_model_cuda_a_SOURCES = trainer/model/cuda/model_cuda.h trainer/model/cuda/model.cu \
	trainer/model/cuda/arena.cu trainer/model/cuda/step.cu trainer/model/cuda/forward.cu \
	trainer/model/cuda/backward.cu trainer/model/cuda/graphs.cu trainer/model/cuda/optimizer.cu \
	trainer/model/cuda/metrics.cu
# nvcc's objects get no automatic dependencies: the headers they include
$(trainer_libdlpar_model_cuda_a_OBJECTS): $(srcdir)/trainer/model/cuda/model_cuda.h \
	$(srcdir)/trainer/model/model.h $(srcdir)/kernels/cuda/ops.h $(srcdir)/kernels/cpu/ops.h
trainer_dlpar_train_LDADD += trainer/libdlpar_model_cuda.a
endif
trainer_dlpar_train_LDADD += $(TRAINER_LIBS) $(OPENMP_CFLAGS)
if HAVE_CUDA
trainer_dlpar_train_LDADD += kernels/libdlpar_kernels_cuda.a $(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++
endif
