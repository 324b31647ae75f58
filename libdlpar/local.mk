# SPDX-License-Identifier: BSD-3-Clause
# libdlpar/: the library programs link, in folders by concern (README.md):
# the API at the top, bootstrap/, backends/, ending/, preflight/, telemetry/.
# Its code is built once, as a convenience library (libdlpar_core.la: every
# symbol, for the white-box tests and bench/rendezvous_probe), and linked
# whole into libdlpar.so, which exports only dlpar.h's functions (their
# definitions marked DLPAR_API, everything else compiled hidden;
# libdlpar.map: the version node) and is installed with dlpar.h and dlpar.pc.
noinst_LTLIBRARIES += libdlpar/libdlpar_core.la
libdlpar_libdlpar_core_la_SOURCES = \
	include/dlpar/dlpar.h libdlpar/internal.h libdlpar/backends/backends.h libdlpar/bootstrap/bootstrap.h \
	libdlpar/ending/ending.h libdlpar/telemetry/telemetry.h \
	libdlpar/init.c libdlpar/collectives.c libdlpar/context.c libdlpar/procstat.c \
	libdlpar/bootstrap/pmixboot.c libdlpar/bootstrap/pmix_internal.h libdlpar/bootstrap/pmix_waiter.c \
	libdlpar/bootstrap/rendezvous_diagnosis.c libdlpar/bootstrap/mpi_init_guard.c libdlpar/bootstrap/ncclid.c \
	libdlpar/backends/backend_self.c \
	libdlpar/ending/end_step.c libdlpar/ending/fatal.c libdlpar/ending/watchdog.c libdlpar/ending/stacks.c \
	libdlpar/preflight/preflight.c libdlpar/preflight/preflight.h libdlpar/preflight/preflight_measure.c \
	libdlpar/preflight/preflight_judge.c libdlpar/preflight/links.c libdlpar/preflight/links.h \
	libdlpar/telemetry/telemetry.c libdlpar/telemetry/profiling.c
libdlpar_libdlpar_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(PMIX_CFLAGS) $(MPI_CFLAGS) $(PTHREAD_CFLAGS)
libdlpar_libdlpar_core_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
libdlpar_libdlpar_core_la_LIBADD = common/libdlpar_common.la $(PMIX_LIBS) $(MPI_LIBS) $(CUDA_LDFLAGS) $(CUDA_RT_LIBS) -lpthread
if HAVE_MPI
libdlpar_libdlpar_core_la_SOURCES += libdlpar/backends/backend_mpi.c
endif
if HAVE_CUDA
libdlpar_libdlpar_core_la_SOURCES += libdlpar/backends/backend_nccl.c
libdlpar_libdlpar_core_la_LIBADD += -ldl # cuBLAS: loaded by the GEMM check (preflight/preflight_measure.c), not linked
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
