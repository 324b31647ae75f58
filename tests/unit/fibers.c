/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/fibers.c: the fibers of tests/unit/fibers.h. */
#include "config.h"

#include <stdint.h>

#include "tests/unit/fibers.h"

#if defined(__x86_64__)
/* fiber_switch(from, to): the System V callee-saved registers pushed on
 * the running stack, its pointer saved in from->sp, to's popped.
 * fiber_entry: a new fiber's first return address, calling r12 (fn) with
 * r13 (arg). */
__asm__(".text\n"
        ".globl fiber_switch\n"
        ".type fiber_switch, @function\n"
        "fiber_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq (%rsi), %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size fiber_switch, .-fiber_switch\n"
        ".type fiber_entry, @function\n"
        "fiber_entry:\n"
        "  movq %r13, %rdi\n"
        "  callq *%r12\n"
        "  ud2\n"
        ".size fiber_entry, .-fiber_entry\n");
void fiber_entry(void);

void fiber_start(fiber *f, void *stack, size_t size, void (*fn)(void *), void *arg)
{
  /* r15 r14 r13 r12 rbx rbp, then the return address: fiber_entry's call
   * is made with the stack 16-byte aligned, as the ABI asks */
  void **sp = (void **)((((uintptr_t)stack + size) & ~(uintptr_t)15) - 72);
  sp[0] = sp[1] = sp[4] = sp[5] = NULL;
  sp[2] = arg;
  sp[3] = (void *)(uintptr_t)fn;
  sp[6] = (void *)(uintptr_t)fiber_entry;
  f->sp = sp;
}
#else
/* makecontext passes ints: the fiber's address in two halves */
static void fiber_entry(unsigned high, unsigned low)
{
  fiber *f = (fiber *)(((uintptr_t)high << 16 << 16) | low);
  f->fn(f->arg);
}

void fiber_start(fiber *f, void *stack, size_t size, void (*fn)(void *), void *arg)
{
  const uintptr_t self = (uintptr_t)f;
  getcontext(&f->context);
  f->context.uc_stack.ss_sp = stack;
  f->context.uc_stack.ss_size = size;
  f->context.uc_link = NULL;
  f->fn = fn;
  f->arg = arg;
  makecontext(&f->context, (void (*)(void))fiber_entry, 2, (unsigned)(self >> 16 >> 16), (unsigned)self);
}

void fiber_switch(fiber *from, fiber *to)
{
  swapcontext(&from->context, &to->context);
}
#endif

int fiber_run_block(fiber *scheduler, fiber *fibers, const char *ready, const int *finished, int threads,
                    int schedule)
{
  while (*finished < threads) {
    int ran = 0;
    for (int t = 0; schedule == 0 && t < threads; t++)
      if (ready[t]) {
        fiber_switch(scheduler, &fibers[t]);
        ran = 1;
      }
    for (int i = 0; schedule != 0 && i < threads / 32; i++) {
      const int w = schedule > 0 ? i : threads / 32 - 1 - i;
      for (int more = 1; more;) {
        more = 0;
        for (int t = 32 * w; t < 32 * w + 32; t++)
          if (ready[t]) {
            fiber_switch(scheduler, &fibers[t]);
            ran = more = 1;
          }
      }
    }
    if (!ran)
      return -1;
  }
  return 0;
}

void fiber_arrive_at_barrier(char *ready, int *arrived, int threads, int tid)
{
  ready[tid] = 0;
  if (++*arrived == threads) {
    *arrived = 0;
    for (int i = 0; i < threads; i++)
      ready[i] = 1;
  }
}
