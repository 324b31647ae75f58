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
noinst_PROGRAMS += bench/dlpar-attention-rate
bench_dlpar_attention_rate_SOURCES = bench/attention_rate.c
bench_dlpar_attention_rate_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
bench_dlpar_attention_rate_LDADD = kernels/libdlpar_kernels_cuda.a $(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++ -lm
endif
if BUILD_TRAINER
# dlpar's loader alone, for bench/loader-vs-torch
noinst_PROGRAMS += bench/dlpar-loader-rate
bench_dlpar_loader_rate_SOURCES = bench/loader_rate.c
bench_dlpar_loader_rate_CFLAGS = $(AM_CFLAGS) $(HDF5_CFLAGS) $(PTHREAD_CFLAGS)
bench_dlpar_loader_rate_LDADD = $(TRAINER_LIBS) $(HDF5_LIBS)
endif
EXTRA_DIST += bench/README.md bench/RESULTS.md bench/rendezvous bench/torch-startup bench/torch_rendezvous.py \
	bench/cpu-vs-torch bench/gpu-vs-torch bench/attention-vs-torch bench/gpu-round bench/torch_train.py bench/torch_attention.py bench/plugin-overhead bench/nccl-groups \
	bench/startup-scaling bench/loader-vs-torch bench/torch_loader.py bench/restart-vs-requeue \
	bench/torch-stop bench/torch_stop.py bench/interruptions
