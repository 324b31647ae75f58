#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/torch_train.py: the anchor of bench/cpu-vs-torch and
bench/gpu-vs-torch: the tutorial's model (tests/numerics/torch_vit.py) in
PyTorch, trained on one random batch kept on the device (the SYNTHETIC
measure of dlpar-train --benchy): forward, the relative L2 loss, backward,
Adam(betas=(0.9, 0.95), eps=1e-8; fused on CUDA). Prints samples/s after
warm-up steps and the peak memory (RSS on CPU, allocated on CUDA).
  torch_train.py --img H W --patch P --embed D --depth L --heads NH
                 --channels C --batch B [--steps S] [--threads T]
                 [--device cpu|cuda] [--amp none|bf16|fp16] [--compile] [--fused-attn]
fp16: autocast to float16 with the GradScaler, as PyTorch's AMP recipe has it.
--fused-attn uses F.scaled_dot_product_attention (PyTorch >= 2.0), the
strongest attention PyTorch has, for the GPU comparison."""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "numerics"))
import torch  # noqa: E402
from torch_vit import ViT, l2_loss  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--img", type=int, nargs=2, required=True)
    for name in ("patch", "embed", "depth", "heads", "channels", "batch"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", default="none")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--fused-attn", action="store_true")
    a = p.parse_args()
    if a.fused_attn and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        sys.exit(f"torch_train: --fused-attn needs PyTorch >= 2.0 (this is {torch.__version__}): drop the flag")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    device = torch.device(a.device)
    model = ViT(tuple(a.img), a.patch, a.channels, a.channels, a.embed, a.depth, a.heads,
                fused_attn=a.fused_attn).to(device)
    fused = {"fused": True} if a.device == "cuda" else {}
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, **fused)
    step_model = torch.compile(model) if a.compile else model
    inp = torch.randn(a.batch, a.channels, *a.img, device=device)
    tgt = torch.randn(a.batch, a.channels, *a.img, device=device)
    amp = a.amp in ("bf16", "fp16")
    amp_type = torch.float16 if a.amp == "fp16" else torch.bfloat16
    scaler = torch.amp.GradScaler(a.device, enabled=a.amp == "fp16") if a.amp == "fp16" else None

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=a.device, dtype=amp_type, enabled=amp):
            loss = l2_loss(step_model(inp), tgt)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

    for _ in range(a.warmup):
        step()
    if a.device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    if a.device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    memory_mb = (torch.cuda.max_memory_allocated() / 2**20 if a.device == "cuda"
                 else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    # the process's whole footprint on the GPU (context, caching allocator, cuBLAS, cuDNN), as dlpar's benchy counts it
    device_mb = 0.0
    if a.device == "cuda":
        free_bytes, total_bytes = torch.cuda.mem_get_info()
        device_mb = (total_bytes - free_bytes) / 2**20
    print(f"torch_train: torch {torch.__version__} {a.device} amp={a.amp} compile={a.compile} fused_attn={a.fused_attn} threads={a.threads}: "
          f"{a.steps * a.batch / elapsed:.2f} samples/s, peak memory {memory_mb:.1f} MB, device memory {device_mb:.1f} MB")


main()
