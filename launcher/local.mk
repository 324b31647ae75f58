# launcher/: libdlpar and the launch tools. The core (grid, profile request,
# topology mapping, the environment contract) is shared with spank/.
noinst_LTLIBRARIES += launcher/libdlpar_core.la
launcher_libdlpar_core_la_SOURCES = \
	launcher/status.c launcher/status.h \
	launcher/text.c launcher/text.h \
	launcher/grid.c launcher/grid.h \
	launcher/profile.c launcher/profile.h \
	launcher/topo.c launcher/topo.h \
	launcher/taskenv.c launcher/taskenv.h
launcher_libdlpar_core_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS)
launcher_libdlpar_core_la_LIBADD = $(HWLOC_LIBS)
