#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/numerics/torch_reference.py DUMP.h5: dlpar's CPU model against
PyTorch (Debian's python3-torch, float32, CPU): the tutorial's model as
restated in torch_vit.py, Adam(betas=(0.9, 0.95), eps=1e-8).
Checks, on the weights and batches vit_dump wrote: the first loss and every
parameter gradient (relative error < 1e-4), then the losses of all Adam
steps (relative error < 1e-4). Exit 0 when all pass; 77 without torch."""
import sys

try:
    import h5py
    import numpy as np
    import torch
    from torch_vit import ViT, l2_loss
except ImportError as e:
    print(f"SKIP: {e} (apt-get install python3-torch python3-h5py)")
    sys.exit(77)

torch.set_num_threads(1)


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
