# libdlpar/: the library programs link (PMIx bootstrap, groups, collectives).
lib_LTLIBRARIES += libdlpar/libdlpar.la
include_HEADERS += libdlpar/dlpar.h
libdlpar_libdlpar_la_SOURCES = \
	libdlpar/dlpar.h libdlpar/internal.h libdlpar/context.c libdlpar/init.c libdlpar/abort.c libdlpar/procstat.c libdlpar/pmixboot.c \
	libdlpar/collectives.c libdlpar/watchdog.c libdlpar/profiling.c libdlpar/ncclid.c libdlpar/telemetry.c \
	libdlpar/preflight.c \
	libdlpar/backend_self.c libdlpar/backend_mpi.c
libdlpar_libdlpar_la_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(MPI_CFLAGS) $(PTHREAD_CFLAGS)
libdlpar_libdlpar_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
libdlpar_libdlpar_la_LDFLAGS = -version-info 0:0:0 $(CUDA_LDFLAGS) $(HARDEN_LDFLAGS)
libdlpar_libdlpar_la_LIBADD = common/libdlpar_common.la $(PMIX_LIBS) $(MPI_LIBS) $(CUDA_RT_LIBS) -lpthread
if HAVE_CUDA
libdlpar_libdlpar_la_SOURCES += libdlpar/backend_nccl.c
libdlpar_libdlpar_la_LIBADD += -ldl # cuBLAS: loaded by the GEMM check (preflight.c), not linked
endif
