# SPDX-License-Identifier: BSD-3-Clause
# tools/: dlpar-run (one machine, no Slurm), dlpar-hello, dlpar-bench-comm.
bin_PROGRAMS += tools/dlpar-run tools/dlpar-hello
tools_dlpar_run_SOURCES = tools/run.c tools/run.h tools/run_args.c tools/run_server.c
tools_dlpar_run_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(PTHREAD_CFLAGS)
tools_dlpar_run_LDADD = common/libdlpar_common.la $(PMIX_LIBS) -lpthread
tools_dlpar_hello_SOURCES = tools/hello.c tools/devbuf.c tools/devbuf.h
tools_dlpar_hello_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tools_dlpar_hello_LDADD = libdlpar/libdlpar.la common/libdlpar_common.la $(CUDA_LDFLAGS) $(CUDA_RT_LIBS)
bin_PROGRAMS += tools/dlpar-bench-comm
tools_dlpar_bench_comm_SOURCES = tools/bench_comm.c tools/devbuf.c tools/devbuf.h
tools_dlpar_bench_comm_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tools_dlpar_bench_comm_LDADD = libdlpar/libdlpar.la common/libdlpar_common.la $(CUDA_LDFLAGS) $(CUDA_RT_LIBS)
