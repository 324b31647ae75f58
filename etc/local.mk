# SPDX-License-Identifier: BSD-3-Clause
# etc/: what admins and users configure: the plugstack.conf line (generated
# with Slurm's plugin directory), installed where nothing reads it until the
# admin links it into plugstack.conf.d (doc/admin.md), so an install never
# enables the plugin nor overwrites an admin's own line; and, with the
# trainer, the tutorial's model configs.
plugstackdir = $(datadir)/dlpar-spank
nodist_plugstack_DATA = etc/plugstack.conf.d/dlpar.conf
dlparconfdir = $(sysconfdir)/dlpar
# the tutorials' own config/ViT.yaml, verbatim (etc/README.md)
sc23dir = $(sysconfdir)/dlpar/tutorial/sc23
sc24dir = $(sysconfdir)/dlpar/tutorial/sc24
if BUILD_TRAINER
dist_dlparconf_DATA = etc/vit.yaml
dist_sc23_DATA = etc/tutorial/sc23/ViT.yaml
dist_sc24_DATA = etc/tutorial/sc24/ViT.yaml
endif
# make uninstall leaves no directory of dlpar's own behind
uninstall-hook: uninstall-dlpar-spank-dir
uninstall-dlpar-spank-dir:
	rmdir "$(DESTDIR)$(plugstackdir)" 2>/dev/null || :
.PHONY: uninstall-dlpar-spank-dir
