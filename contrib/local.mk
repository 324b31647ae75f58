# SPDX-License-Identifier: BSD-3-Clause
# contrib/: batch templates for the tutorial's experiments, the demo, a plotter.
dist_bin_SCRIPTS = contrib/dlpar-plot
sbatchdir = $(pkgdatadir)/sbatch
dist_sbatch_SCRIPTS = contrib/sbatch/short.sbatch contrib/sbatch/bs64_opt.sbatch contrib/sbatch/bs256_opt.sbatch \
	contrib/sbatch/bs1024_opt.sbatch contrib/sbatch/mp.sbatch contrib/sbatch/profile.sbatch contrib/sbatch/benchy.sbatch \
	contrib/sbatch/pytorch.sbatch
pytorchdir = $(pkgdatadir)/pytorch
dist_pytorch_DATA = contrib/pytorch/ddp_example.py
EXTRA_DIST += contrib/demo contrib/dlpar-bundle

# The README's main job: a real 2x2 training on a generated dataset.
demo: all
	$(top_srcdir)/contrib/demo $(abs_top_builddir)
.PHONY: demo
