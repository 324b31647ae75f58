# SPDX-License-Identifier: BSD-3-Clause
# spank/: the SPANK plugin spank_dlpar.so, installed into Slurm's plugin dir.
# Hardened, and its version script exports only what Slurm looks up.
plugindir = $(SLURM_PLUGINDIR)
plugin_LTLIBRARIES = spank/spank_dlpar.la
spank_spank_dlpar_la_SOURCES = \
	spank/plugin.c spank/plugin.h spank/state.c spank/state.h spank/options.c spank/srun.c spank/stepd.c spank/master.c \
	spank/admin.c spank/admin.h spank/request.c spank/request.h spank/plugstack.c spank/plugstack.h \
	spank/hostlist.c spank/hostlist.h
spank_spank_dlpar_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
spank_spank_dlpar_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-Wl,--version-script=$(srcdir)/spank/dlpar.map $(HARDEN_LDFLAGS) $(SANITIZE_LDFLAGS)
spank_spank_dlpar_la_LIBADD = common/libdlpar_common.la
EXTRA_spank_spank_dlpar_la_DEPENDENCIES = spank/dlpar.map
EXTRA_DIST += spank/dlpar.map

# dlpar-check-config: a plugstack.conf line checked before any daemon reads
# it, with the plugin's own parser; installed with the plugin (an admin's tool).
sbin_PROGRAMS = spank/dlpar-check-config
spank_dlpar_check_config_SOURCES = spank/check_config.c spank/plugstack.c spank/plugstack.h spank/admin.c spank/admin.h \
	spank/hostlist.c spank/hostlist.h
spank_dlpar_check_config_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
spank_dlpar_check_config_LDADD = common/libdlpar_common.la -lslurm
