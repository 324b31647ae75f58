# SPDX-License-Identifier: BSD-3-Clause
"""bench/torch_attention.py: the anchor of bench/attention-vs-torch:
PyTorch's scaled_dot_product_attention (the backend it picks itself: in
fp32 on sm_80 and later its memory-efficient kernel, 3xTF32 on tensor
cores, fp32-accurate) at one shape, q, k, v made as the tutorial's model
makes them ((B, N, NH, HD) viewed as (B, NH, N, HD)). Mean of the timed
calls after warm-up, CUDA events; FLOPs counted as bench/attention_rate.c
counts them. Prints its lines in its format: in fp32 first the output's
and dq's relative error against the same attention in float64 on the GPU
(every row), then the times.
  python3 bench/torch_attention.py fp32|bf16|fp16 B N NH HD [repeats]"""
import sys

import torch
import torch.nn.functional as F


def mean_ms(call, repeats):
    for _ in range(2):
        call()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        call()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / repeats


def rel_error(got, ref):
    return ((got.double() - ref).norm() / ref.norm()).item()


def error_vs_float64(q, k, v, dout, out, dq):
    """o's and dq's relative error against float64 (PyTorch's math backend)."""
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    out64 = F.scaled_dot_product_attention(q64.transpose(1, 2), k64.transpose(1, 2), v64.transpose(1, 2))
    (dq64,) = torch.autograd.grad(out64, (q64,), dout.double())
    return rel_error(out, out64), rel_error(dq, dq64)


def main():
    name = sys.argv[1]
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    B, N, NH, HD = (int(x) for x in sys.argv[2:6])
    repeats = int(sys.argv[6]) if len(sys.argv) > 6 else 10
    q, k, v = (torch.empty(B, N, NH, HD, device="cuda", dtype=dtype).uniform_(-1, 1).requires_grad_()
               for _ in range(3))
    dout = torch.empty(B, NH, N, HD, device="cuda", dtype=dtype).uniform_(-1, 1)

    def forward():
        return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))

    out = forward()
    if name == "fp32":
        (dq,) = torch.autograd.grad(out, (q,), dout, retain_graph=True)
        o_error, dq_error = error_vs_float64(q, k, v, dout, out, dq)
        print(f"torch {name} {B} {N} {NH} {HD}: error against float64 (every row): o {o_error:.2e}, dq {dq_error:.2e}")
    fwd = mean_ms(forward, repeats)
    bwd = mean_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), repeats)
    flops = 3.5 * 4.0 * B * NH * N * N * HD
    print(f"torch {name} {B} {N} {NH} {HD}: forward {fwd:.3f} ms, backward {bwd:.3f} ms, "
          f"{flops / ((fwd + bwd) * 1e-3) / 1e12:.2f} TFLOP/s")


if __name__ == "__main__":
    main()
