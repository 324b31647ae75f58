# etc/: what admins and users configure: the plugstack.conf line (generated
# with Slurm's plugin directory) and the tutorial's model configs.
plugstackdir = $(sysconfdir)/slurm/plugstack.conf.d
nodist_plugstack_DATA = etc/plugstack.conf.d/dlpar.conf
dlparconfdir = $(sysconfdir)/dlpar
dist_dlparconf_DATA = etc/vit.yaml
