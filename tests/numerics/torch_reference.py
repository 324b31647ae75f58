#!/usr/bin/python3
"""tests/numerics/torch_reference.py DUMP.h5: dlpar's CPU model against
PyTorch (Debian's python3-torch, float32, CPU). The model is the SC24
tutorial's networks/vit.py restated: patch embedding Conv2d + pos_embed,
pre-norm blocks with separate q, k, v Linear layers (bias), softmax
attention with scale head_dim^-0.5, exact GELU MLP (ratio 4), final
LayerNorm (eps 1e-6), bias-free head, unpatchify nhwpqc->nchpwq; loss
mean(||pred - tgt|| / ||tgt||); Adam(betas=(0.9, 0.95), eps=1e-8).
Checks, on the weights and batches vit_dump wrote: the first loss and every
parameter gradient (relative error < 1e-4), then the losses of all Adam
steps (relative error < 1e-4). Exit 0 when all pass; 77 without torch."""
import math
import sys

try:
    import h5py
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIP: {e} (apt-get install python3-torch python3-h5py)")
    sys.exit(77)

torch.set_num_threads(1)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        split = lambda t: t.reshape(B, N, self.heads, self.head_dim).permute(0, 2, 1, 3)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        attn = (q * self.head_dim ** -0.5) @ k.transpose(-2, -1)
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.attn, self.mlp = Attention(dim, heads), MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, c_in, dim, p):
        super().__init__()
        self.proj = nn.Conv2d(c_in, dim, kernel_size=p, stride=p)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ViT(nn.Module):
    def __init__(self, img, p, c_in, c_out, dim, depth, heads):
        super().__init__()
        self.img, self.p, self.c_out, self.dim = img, p, c_out, dim
        self.h, self.w = img[0] // p, img[1] // p
        self.patch_embed = PatchEmbed(c_in, dim, p)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.h * self.w, dim))
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, c_out * p * p, bias=False)

    def forward(self, x):
        x = self.patch_embed(x) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        x = self.head(self.norm(x))
        B = x.shape[0]
        x = x.reshape(B, self.h, self.w, self.p, self.p, self.c_out)
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(B, self.c_out, self.img[0], self.img[1])


def l2_loss(pred, target):
    n = pred.shape[0]
    diff = torch.norm(pred.reshape(n, -1) - target.reshape(n, -1), 2, 1)
    return torch.mean(diff / torch.norm(target.reshape(n, -1), 2, 1))


def rel_error(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        return float("nan")
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main():
    f = h5py.File(sys.argv[1], "r")
    params = {name: torch.tensor(np.array(f["params"][name])) for name in f["params"]}
    inputs, targets = np.array(f["inputs"]), np.array(f["targets"])
    dim = params["pos_embed"].shape[2]
    p = params["patch_embed.proj.weight"].shape[2]
    c_in = params["patch_embed.proj.weight"].shape[1]
    c_out = params["head.weight"].shape[0] // (p * p)
    depth = len({k.split(".")[1] for k in params if k.startswith("blocks.")})
    heads = int(f.attrs["num_heads"])
    img = (inputs.shape[3], inputs.shape[4])
    model = ViT(img, p, c_in, c_out, dim, depth, heads)
    missing = set(model.state_dict()) ^ set(params)
    if missing:
        print(f"FAILED: tensors on one side only: {sorted(missing)}")
        return 1
    model.load_state_dict(params)
    failures, checks = 0, 0

    def check(what, err, bound):
        nonlocal failures, checks
        checks += 1
        if not err < bound:
            failures += 1
            print(f"FAILED: {what}: relative error {err:.3g} (bound {bound:g})")

    loss = l2_loss(model(torch.tensor(inputs[0])), torch.tensor(targets[0]))
    loss.backward()
    check("step 0 loss", rel_error([f["losses"][0]], [loss.item()]), 1e-4)
    worst = 0.0
    grad_scale = max(float(np.linalg.norm(prm.grad.numpy())) for prm in model.parameters())
    for name, param in model.named_parameters():
        if name.endswith("attn.k.bias"):
            # softmax(q.(k + b)) = softmax(q.k): the key bias's gradient is 0 in exact
            # arithmetic and rounding noise on both sides; check that it is.
            noise = max(np.linalg.norm(f["grads"][name]), np.linalg.norm(param.grad.numpy())) / grad_scale
            check(f"gradient of {name} (zero up to rounding)", noise, 1e-5)
            continue
        err = rel_error(f["grads"][name], param.grad.numpy())
        worst = max(worst, err) if err == err else float("nan")
        check(f"gradient of {name}", err, 1e-4)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    torch_losses = []
    for s in range(inputs.shape[0]):
        for group in optimizer.param_groups:
            group["lr"] = float(f["lrs"][s])
        optimizer.zero_grad()
        loss = l2_loss(model(torch.tensor(inputs[s])), torch.tensor(targets[s]))
        loss.backward()
        optimizer.step()
        torch_losses.append(loss.item())
    for s, (ours, theirs) in enumerate(zip(np.array(f["losses"]), torch_losses)):
        check(f"Adam step {s + 1} loss", rel_error([ours], [theirs]), 1e-4)
    print(f"torch_reference: torch {torch.__version__}: {checks} checks, {failures} failed; worst gradient "
          f"error {worst:.2e}; losses ours {list(np.round(np.array(f['losses']), 6))} torch "
          f"{[round(x, 6) for x in torch_losses]}")
    return 1 if failures else 0


sys.exit(main())
