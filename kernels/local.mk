# kernels/: the math, depending on nothing of ours. CPU reference ops
# (float for the trainer, double for the gradient tests).
noinst_LTLIBRARIES += kernels/libdlpar_kernels_cpu.la
kernels_libdlpar_kernels_cpu_la_SOURCES = kernels/cpu/ops.h kernels/cpu/ops_body.h \
	kernels/cpu/ops_f32.c kernels/cpu/ops_f64.c
kernels_libdlpar_kernels_cpu_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(BLAS_CFLAGS) -O3
kernels_libdlpar_kernels_cpu_la_LIBADD = $(BLAS_LIBS) -lm
EXTRA_DIST += kernels/README.md
