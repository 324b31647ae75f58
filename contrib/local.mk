# SPDX-License-Identifier: BSD-3-Clause
# contrib/: batch templates for the tutorial's experiments, the demo, a plotter.
# Installed with what they run: the trainer's templates and dlpar-plot with
# the trainer, the PyTorch ones with the Python module (libdlpar).
# (Each list defined only where it is installed: an empty one would still
# make its directory.)
sbatchdir = $(pkgdatadir)/sbatch
torchsbatchdir = $(pkgdatadir)/sbatch
pytorchdir = $(pkgdatadir)/pytorch
if BUILD_TRAINER
dist_bin_SCRIPTS = contrib/dlpar-plot
dist_sbatch_SCRIPTS = contrib/sbatch/short.sbatch contrib/sbatch/bs64_opt.sbatch contrib/sbatch/bs256_opt.sbatch \
	contrib/sbatch/bs1024_opt.sbatch contrib/sbatch/mp.sbatch contrib/sbatch/profile.sbatch contrib/sbatch/benchy.sbatch
endif
if BUILD_LIBDLPAR
dist_torchsbatch_SCRIPTS = contrib/sbatch/pytorch.sbatch
dist_pytorch_DATA = contrib/pytorch/ddp_example.py contrib/pytorch/ddp_requeue.py
endif
# dlpar-restart serves any step of libdlpar's programs (the nodes it
# excludes are those libdlpar and --dl-check name): installed with it.
restartbindir = $(bindir)
if BUILD_LIBDLPAR
dist_restartbin_SCRIPTS = contrib/dlpar-restart
endif
EXTRA_DIST += contrib/demo contrib/dlpar-bundle contrib/tools/comment-style

# The README's main job: a real 2x2 training on a generated dataset.
demo: all
	$(top_srcdir)/contrib/demo $(abs_top_builddir)
.PHONY: demo
