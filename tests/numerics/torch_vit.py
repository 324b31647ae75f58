# SPDX-License-Identifier: BSD-3-Clause
"""tests/numerics/torch_vit.py: the SC24 tutorial's networks/vit.py restated
in PyTorch, the reference both tests/numerics/torch_reference.py and the
benchmarks (bench/cpu-vs-torch, bench/gpu-vs-torch) measure dlpar against:
patch embedding Conv2d + pos_embed, pre-norm blocks with separate q, k, v
Linear layers (bias), softmax attention with scale head_dim^-0.5, exact GELU
MLP (ratio 4), final LayerNorm (eps 1e-6), bias-free head, unpatchify
nhwpqc->nchpwq; loss mean(||pred - tgt|| / ||tgt||)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, heads, fused=False):
        super().__init__()
        self.heads, self.head_dim, self.fused = heads, dim // heads, fused
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        split = lambda t: t.reshape(B, N, self.heads, self.head_dim).permute(0, 2, 1, 3)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if self.fused:  # PyTorch >= 2.0: flash/memory-efficient kernels
            x = F.scaled_dot_product_attention(q, k, v)
        else:
            x = ((q * self.head_dim ** -0.5) @ k.transpose(-2, -1)).softmax(dim=-1) @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, fused_attn=False):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.attn, self.mlp = Attention(dim, heads, fused_attn), MLP(dim)

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
    def __init__(self, img, p, c_in, c_out, dim, depth, heads, fused_attn=False):
        super().__init__()
        self.img, self.p, self.c_out, self.dim = img, p, c_out, dim
        self.h, self.w = img[0] // p, img[1] // p
        self.patch_embed = PatchEmbed(c_in, dim, p)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.h * self.w, dim))
        self.blocks = nn.ModuleList([Block(dim, heads, fused_attn) for _ in range(depth)])
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
