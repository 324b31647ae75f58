# SPDX-License-Identifier: BSD-3-Clause
# libdlpar/: the library programs link (PMIx bootstrap, groups, collectives).
# Its code is built once, as a convenience library (libdlpar_core.la: every
# symbol, for the white-box tests and bench/rendezvous_probe), and linked
# whole into libdlpar.so, which exports only dlpar.h's functions (their
# definitions marked DLPAR_API, everything else compiled hidden;
# libdlpar.map: the version node) and is installed with dlpar.h and dlpar.pc.
noinst_LTLIBRARIES += libdlpar/libdlpar_core.la
libdlpar_libdlpar_core_la_SOURCES = \
	include/dlpar/dlpar.h libdlpar/internal.h libdlpar/context.c libdlpar/init.c libdlpar/end_step.c libdlpar/fatal.c libdlpar/procstat.c libdlpar/pmixboot.c libdlpar/pmix_internal.h libdlpar/pmix_waiter.c \
	libdlpar/rendezvous_diagnosis.c libdlpar/mpi_init_guard.c \
	libdlpar/collectives.c libdlpar/watchdog.c libdlpar/stacks.c libdlpar/profiling.c libdlpar/ncclid.c libdlpar/telemetry.c \
	libdlpar/preflight.c libdlpar/preflight.h libdlpar/preflight_measure.c libdlpar/preflight_judge.c \
	libdlpar/links.c libdlpar/links.h \
	libdlpar/backend_self.c
libdlpar_libdlpar_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(PMIX_CFLAGS) $(MPI_CFLAGS) $(PTHREAD_CFLAGS)
libdlpar_libdlpar_core_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
libdlpar_libdlpar_core_la_LIBADD = common/libdlpar_common.la $(PMIX_LIBS) $(MPI_LIBS) $(CUDA_LDFLAGS) $(CUDA_RT_LIBS) -lpthread
if HAVE_MPI
libdlpar_libdlpar_core_la_SOURCES += libdlpar/backend_mpi.c
endif
if HAVE_CUDA
libdlpar_libdlpar_core_la_SOURCES += libdlpar/backend_nccl.c
libdlpar_libdlpar_core_la_LIBADD += -ldl # cuBLAS: loaded by the GEMM check (preflight_measure.c), not linked
endif

lib_LTLIBRARIES += libdlpar/libdlpar.la
include_HEADERS += include/dlpar/dlpar.h include/dlpar/dlpar_status.h
pkgconfig_DATA += libdlpar/dlpar.pc
libdlpar_libdlpar_la_SOURCES = include/dlpar/dlpar.h include/dlpar/dlpar_status.h
libdlpar_libdlpar_la_LIBADD = libdlpar/libdlpar_core.la
libdlpar_libdlpar_la_LDFLAGS = -version-info 0:0:0 $(CUDA_LDFLAGS) $(HARDEN_LDFLAGS) $(SANITIZE_LDFLAGS) \
	-Wl,--version-script=$(srcdir)/libdlpar/libdlpar.map
EXTRA_libdlpar_libdlpar_la_DEPENDENCIES = libdlpar/libdlpar.map
EXTRA_DIST += libdlpar/libdlpar.map
