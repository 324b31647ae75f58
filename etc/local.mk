# SPDX-License-Identifier: BSD-3-Clause
# etc/: what admins and users configure: the plugstack.conf line (generated
# with Slurm's plugin directory) and the tutorial's model configs.
plugstackdir = $(sysconfdir)/slurm/plugstack.conf.d
nodist_plugstack_DATA = etc/plugstack.conf.d/dlpar.conf
dlparconfdir = $(sysconfdir)/dlpar
dist_dlparconf_DATA = etc/vit.yaml
# the tutorials' own config/ViT.yaml, verbatim (etc/README.md)
sc23dir = $(sysconfdir)/dlpar/tutorial/sc23
dist_sc23_DATA = etc/tutorial/sc23/ViT.yaml
sc24dir = $(sysconfdir)/dlpar/tutorial/sc24
dist_sc24_DATA = etc/tutorial/sc24/ViT.yaml
