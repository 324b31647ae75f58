# SPDX-License-Identifier: BSD-3-Clause
# bench/: performance, measured side by side with its anchor in the same
# run, reported as ratios in bench/RESULTS.md. Never part of make check.
noinst_PROGRAMS += bench/rendezvous_probe
bench_rendezvous_probe_SOURCES = bench/rendezvous_probe.c
bench_rendezvous_probe_LDADD = libdlpar/libdlpar_core.la
if HAVE_CUDA
noinst_PROGRAMS += bench/dlpar-gemm-peak
bench_dlpar_gemm_peak_SOURCES = bench/gemm_peak.c
bench_dlpar_gemm_peak_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
bench_dlpar_gemm_peak_LDADD = $(CUDA_LDFLAGS) -lcublas -lcudart
endif
EXTRA_DIST += bench/README.md bench/RESULTS.md bench/rendezvous bench/torch-startup bench/torch_rendezvous.py \
	bench/cpu-vs-torch bench/gpu-vs-torch bench/gpu-round bench/torch_train.py bench/plugin-overhead bench/nccl-groups \
	bench/startup-scaling
