# launcher/: libdlpar and the launch tools. The core (grid, profile request,
# topology mapping, the environment contract) is shared with spank/.
noinst_LTLIBRARIES += launcher/libdlpar_core.la
launcher_libdlpar_core_la_SOURCES = \
	launcher/status.h \
	launcher/clock.c launcher/clock.h \
	launcher/text.c launcher/text.h \
	launcher/grid.c launcher/grid.h \
	launcher/profile.c launcher/profile.h \
	launcher/topo.c launcher/topo.h \
	launcher/taskenv.c launcher/taskenv.h
launcher_libdlpar_core_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS)
launcher_libdlpar_core_la_LIBADD = $(HWLOC_LIBS)

# libdlpar: the library programs link (PMIx bootstrap, groups, collectives).
lib_LTLIBRARIES += launcher/libdlpar.la
include_HEADERS += launcher/dlpar.h
launcher_libdlpar_la_SOURCES = \
	launcher/dlpar.h launcher/internal.h launcher/context.c launcher/init.c launcher/abort.c launcher/procstat.c launcher/pmixboot.c \
	launcher/collectives.c launcher/watchdog.c launcher/profiling.c launcher/ncclid.c launcher/telemetry.c \
	launcher/preflight.c \
	launcher/backend_self.c launcher/backend_mpi.c
launcher_libdlpar_la_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(MPI_CFLAGS) $(PTHREAD_CFLAGS)
launcher_libdlpar_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
launcher_libdlpar_la_LDFLAGS = -version-info 0:0:0 $(CUDA_LDFLAGS) $(HARDEN_LDFLAGS)
launcher_libdlpar_la_LIBADD = launcher/libdlpar_core.la $(PMIX_LIBS) $(MPI_LIBS) $(CUDA_RT_LIBS) -lpthread
if HAVE_CUDA
launcher_libdlpar_la_SOURCES += launcher/backend_nccl.c
launcher_libdlpar_la_LIBADD += -lcublas
endif

# Tools.
bin_PROGRAMS += launcher/dlpar-run launcher/dlpar-hello
launcher_dlpar_run_SOURCES = launcher/run.c launcher/run.h launcher/run_args.c launcher/run_server.c
launcher_dlpar_run_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(PTHREAD_CFLAGS)
launcher_dlpar_run_LDADD = launcher/libdlpar_core.la $(PMIX_LIBS) -lpthread
launcher_dlpar_hello_SOURCES = launcher/hello.c launcher/devbuf.c launcher/devbuf.h
launcher_dlpar_hello_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
launcher_dlpar_hello_LDADD = launcher/libdlpar.la $(CUDA_LDFLAGS) $(CUDA_RT_LIBS)
bin_PROGRAMS += launcher/dlpar-bench-comm
launcher_dlpar_bench_comm_SOURCES = launcher/bench_comm.c launcher/devbuf.c launcher/devbuf.h
launcher_dlpar_bench_comm_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
launcher_dlpar_bench_comm_LDADD = launcher/libdlpar.la $(CUDA_LDFLAGS) $(CUDA_RT_LIBS)
