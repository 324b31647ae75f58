/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/gpu/spin_kernel.h: a kernel that holds its stream (spin_kernel.cu),
 * for a collective queued behind it that cannot complete: what libdlpar's
 * watchdog must end (tests/gpu/test_nccl_gpu). */
#ifndef DLPAR_TEST_GPU_SPIN_KERNEL_H
#define DLPAR_TEST_GPU_SPIN_KERNEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues on `stream` (a cudaStream_t) one thread that spins until *flag
 * (device-visible: host-mapped memory) is non-zero or `seconds` pass on the
 * GPU's clock, the bound that frees the GPU should nobody end the process.
 * Returns the launch's cudaError_t. */
int spin_launch(const volatile int *flag, double seconds, void *stream);

#ifdef __cplusplus
}
#endif

#endif
