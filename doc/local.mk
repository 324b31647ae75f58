# doc/: the manual pages (installed) and the guides, whose commands a test runs.
dist_man_MANS += doc/man/spank_dlpar.8 doc/man/dlpar-run.1 doc/man/dlpar-hello.1 doc/man/dlpar-bench-comm.1 \
	doc/man/dlpar-gen-data.1 doc/man/dlpar-train.1
EXTRA_DIST += doc/admin.md doc/user.md doc/scaling.md
