/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/fibers.h: cooperative user-level threads for the GPU stand-ins'
 * one block runner (block_emulator.cuh): a fiber per
 * CUDA thread, switched by hand at every barrier, shuffle and MMA, about
 * 10 ns a switch on x86-64 (a few registers and the stack pointer) where
 * POSIX threads on 2 cores take microseconds; ucontext elsewhere. */
#ifndef DLPAR_TEST_FIBERS_H
#define DLPAR_TEST_FIBERS_H

#include <stddef.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
#if defined(__x86_64__)
  void *sp; /* the saved stack pointer, callee-saved registers on the stack */
#else
  ucontext_t context;
  void (*fn)(void *);
  void *arg;
#endif
} fiber;

/* Makes f run fn(arg) on stack[0, size) from its first fiber_switch; fn
 * never returns (it switches away for the last time). */
void fiber_start(fiber *f, void *stack, size_t size, void (*fn)(void *), void *arg);
/* Saves the running context in from, resumes to. */
void fiber_switch(fiber *from, fiber *to);
/* Runs a block's fibers from `scheduler` until *finished reaches threads:
 * each round resumes every fiber t with ready[t] set (a fiber clears its
 * flag where it waits and sets its peers' where they may go on), all of
 * them in turn (schedule 0) or warp by warp of 32, each warp until none of
 * it is ready, warp 0 first (schedule > 0) or last (< 0). Returns 0, or -1
 * when a round found no fiber ready: they wait for each other (a barrier
 * or a warp collective that some never reach). */
int fiber_run_block(fiber *scheduler, fiber *fibers, const char *ready, const int *finished, int threads,
                    int schedule);
/* Fiber tid arrives at its block's barrier: it is no longer ready, and
 * the last of the block's threads to arrive makes them all ready again
 * (*arrived counts them); the caller then switches to the scheduler. */
void fiber_arrive_at_barrier(char *ready, int *arrived, int threads, int tid);

#ifdef __cplusplus
}
#endif

#endif
