# SPDX-License-Identifier: BSD-3-Clause
# common/: what the plugin and libdlpar share (status codes, clock, text,
# grid, profile request, topology mapping, the environment contract).
noinst_LTLIBRARIES += common/libdlpar_common.la
common_libdlpar_common_la_SOURCES = \
	common/status.h common/error.c \
	common/clock.c common/clock.h \
	common/text.c common/text.h \
	common/grid.c common/grid.h \
	common/profile.c common/profile.h \
	common/topo.c common/topo.h \
	common/options.c common/options.h \
	common/taskenv.c common/taskenv.h \
	common/torchenv.c common/torchenv.h \
	common/netenv.c common/netenv.h
common_libdlpar_common_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(HWLOC_CFLAGS)
common_libdlpar_common_la_LIBADD = $(HWLOC_LIBS)
