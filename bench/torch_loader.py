# SPDX-License-Identifier: BSD-3-Clause
"""bench/torch_loader.py: the anchor of bench/loader-vs-torch, a PyTorch
DataLoader over h5py reading samples the way the tutorial's ERA5 dataset
class does (sc23-dl-tutorial utils/data_loader.py, GetDataset): the yearly
file opened lazily in each worker, fields[local_idx, :C, :H, :W] and
fields[local_idx + dt, ...] read, normalised with numpy in place
(x -= mean; x /= std), batches of B, shuffled, drop_last, pinned memory
where CUDA is, num_workers as given. The sampler draws the shuffled order
over as many epochs as the run needs in one iterator (the workers start
once; the tutorial's start again each epoch).

  torch_loader.py DIR CHANNELS HEIGHT WIDTH BATCH WORKERS WARMUP BATCHES

WARMUP batches, then BATCHES timed; one line of key=value as
dlpar-loader-rate prints: samples, seconds, samples/s, GB/s (input and
target), CPU seconds a sample (this process and its workers)."""
import glob
import os
import sys
import time

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler


class ERA5(Dataset):
    def __init__(self, directory, channels, height, width, dt=1):
        self.files_paths = sorted(glob.glob(directory + "/train/*.h5"))
        self.channels, self.height, self.width, self.dt = channels, height, width, dt
        self.means = np.load(directory + "/stats/global_means.npy")[0, :channels]
        self.stds = np.load(directory + "/stats/global_stds.npy")[0, :channels]
        with h5py.File(self.files_paths[0], "r") as f:
            self.n_samples_per_year = f["fields"].shape[0]
        self.files = [None] * len(self.files_paths)

    def __len__(self):
        return len(self.files_paths) * self.n_samples_per_year

    def _normalize(self, img):
        img -= self.means
        img /= self.stds
        return torch.as_tensor(img)

    def __getitem__(self, global_idx):
        year_idx = int(global_idx / self.n_samples_per_year)
        local_idx = int(global_idx % self.n_samples_per_year)
        if self.files[year_idx] is None:
            self.files[year_idx] = h5py.File(self.files_paths[year_idx], "r")["fields"]
        local_idx = local_idx % (self.n_samples_per_year - self.dt)
        if local_idx < self.dt:
            local_idx += self.dt
        c, h, w = self.channels, self.height, self.width
        inp = self.files[year_idx][local_idx, :c, :h, :w]
        tar = self.files[year_idx][local_idx + self.dt, :c, :h, :w]
        return self._normalize(inp), self._normalize(tar)


def cpu_seconds(pids):
    """User and system seconds of this process (all its threads) and of pids."""
    total = time.process_time()
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def main():
    directory = sys.argv[1]
    channels, height, width, batch, workers, warmup, batches = (int(a) for a in sys.argv[2:9])
    data = ERA5(directory, channels, height, width)
    sampler = RandomSampler(data, num_samples=(warmup + batches) * batch)
    loader = DataLoader(data, batch_size=batch, num_workers=workers, sampler=sampler, drop_last=True,
                        pin_memory=torch.cuda.is_available())
    it = iter(loader)
    pids = [w.pid for w in getattr(it, "_workers", [])]
    start = cpu = 0.0
    for i in range(warmup + batches):
        if i == warmup:
            cpu, start = cpu_seconds(pids), time.perf_counter()
        next(it)
    seconds, cpu = time.perf_counter() - start, cpu_seconds(pids) - cpu
    samples = batches * batch
    sample_bytes = 4.0 * 2 * channels * height * width
    print("torch-loader: workers=%d samples=%d seconds=%.4f samples_per_s=%.3f gb_per_s=%.4f cpu_s_per_sample=%.5f"
          % (workers, samples, seconds, samples / seconds, samples * sample_bytes / seconds / 1e9, cpu / samples))


if __name__ == "__main__":
    main()
