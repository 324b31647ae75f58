# SPDX-License-Identifier: BSD-3-Clause
# doc/: the manual pages (installed) and the guides, whose commands a test runs.
# Each page installed with what it documents (configure says what is built).
dist_man_MANS += doc/man/spank_dlpar.8 doc/man/dlpar-check-config.8
man_MANS =
if BUILD_LIBDLPAR
man_MANS += doc/man/dlpar-run.1 doc/man/dlpar-hello.1 doc/man/dlpar-bench-comm.1
endif
if BUILD_TRAINER
man_MANS += doc/man/dlpar-gen-data.1 doc/man/dlpar-train.1 doc/man/dlpar-plot.1
endif
EXTRA_DIST += doc/man/dlpar-run.1 doc/man/dlpar-hello.1 doc/man/dlpar-bench-comm.1 doc/man/dlpar-gen-data.1 \
	doc/man/dlpar-train.1 doc/man/dlpar-plot.1
EXTRA_DIST += doc/admin.md doc/user.md doc/scaling.md doc/cudnn-attention.md doc/hacking.md
