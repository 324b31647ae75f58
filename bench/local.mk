# bench/: performance, measured side by side with its anchor in the same
# run, reported as ratios in bench/RESULTS.md. Never part of make check.
noinst_PROGRAMS += bench/rendezvous_probe
bench_rendezvous_probe_SOURCES = bench/rendezvous_probe.c
bench_rendezvous_probe_LDADD = launcher/libdlpar.la
EXTRA_DIST += bench/rendezvous bench/torch_rendezvous.py bench/RESULTS.md bench/cpu-vs-torch bench/torch_train.py
