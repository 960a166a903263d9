"""Peer (c): the same math batched in numpy, timed inside Python.

Called by bench/peers/numpy.ts with a directory holding the packed forest as raw little-endian
arrays plus meta.json. It scores once and writes the outputs back for checking against the
reference, then times repeated calls (at least min_samples, until max_time seconds) and writes
per-call milliseconds. Node <-> Python transfer is not part of the timing.
"""
import json
import sys
import time

import numpy as np


def score(emb, reward, visits, unc, goff, gchild, alpha, tau):
    n = reward.shape[0]
    contrast = np.zeros(n)
    weight = np.ones(n)
    grad_a = np.zeros(n)
    grad_b = np.zeros(n)
    sizes = np.diff(goff)
    intensity = np.zeros(sizes.shape[0])
    for k in np.unique(sizes):
        k = int(k)
        if k < 2:
            continue
        groups = np.nonzero(sizes == k)[0]
        rows = gchild[goff[groups][:, None] + np.arange(k)]  # [G, k]
        if emb.shape[1] == 0:
            dist = np.full((groups.shape[0], k, k), 0.5)
        else:
            # float64, as numpy users get by default: the float32 Gram matrix would lose 1 - s
            # to cancellation for near-duplicate siblings (SPEC §2 tolerances).
            e = emb[rows].astype(np.float64)  # [G, k, D]
            norm = np.linalg.norm(e, axis=-1, keepdims=True)
            zero = norm == 0
            unit = e / np.where(zero, 1, norm)
            sim = np.clip(np.matmul(unit, unit.transpose(0, 2, 1)), -1, 1)
            dist = np.clip((1 - sim) / 2, 0, 1)
            dist = np.where(zero | zero.transpose(0, 2, 1), 0.5, dist)
        r = reward[rows]
        seen = visits[rows] > 0
        u = unc[rows]
        both = seen[:, :, None] & seen[:, None, :]
        delta = np.abs(r[:, :, None] - r[:, None, :]) * both + np.abs(u[:, :, None] - u[:, None, :])
        den = delta + alpha * dist + 1e-6
        off = 1 - np.eye(k)
        c = delta / den * off
        dc = -alpha * delta * dist / den**2 * off
        C = c.sum(-1) / (k - 1)
        Cd = dc.sum(-1) / (k - 1)
        z = np.exp((C - C.max(-1, keepdims=True)) / tau)
        w = z / z.sum(-1, keepdims=True)
        wC = (w * C).sum(-1, keepdims=True)
        wCd = (w * Cd).sum(-1, keepdims=True)
        contrast[rows] = C
        weight[rows] = w
        grad_a[rows] = (Cd - wCd) / tau
        grad_b[rows] = -(C - wC) / tau
        intensity[groups] = C.mean(-1)
    return contrast, weight, grad_a, grad_b, intensity


def main(folder):
    with open(f"{folder}/meta.json") as f:
        meta = json.load(f)
    load = lambda name, dtype: np.fromfile(f"{folder}/{name}.bin", dtype=dtype)
    emb = load("embedding", meta.get("embeddingDtype", "<f4")).reshape(meta["nodeCount"], meta["dim"])
    args = (emb, load("reward", "<f8"), load("visits", "<f8"), load("uncertainty", "<f8"), load("groupOffset", "<i4"), load("groupChild", "<i4"), meta["alpha"], meta["tau"])
    t0 = time.perf_counter()
    outs = score(*args)
    first_ms = (time.perf_counter() - t0) * 1000
    min_samples = meta["minSamples"]
    if meta.get("fewSamplesAboveMs") is not None and first_ms > meta["fewSamplesAboveMs"]:
        min_samples = min(min_samples, 3)
    for name, arr in zip(["contrast", "weight", "gradAlpha", "gradTau", "intensity"], outs):
        arr.astype("<f8").tofile(f"{folder}/out-{name}.bin")
    samples = []
    start = time.perf_counter()
    while len(samples) < min_samples or (time.perf_counter() - start < meta["maxTime"] and len(samples) < 1000):
        t0 = time.perf_counter()
        score(*args)
        samples.append((time.perf_counter() - t0) * 1000)
    with open(f"{folder}/timing.json", "w") as f:
        json.dump({"samplesMs": samples, "numpy": np.__version__, "python": sys.version.split()[0]}, f)


if __name__ == "__main__":
    main(sys.argv[1])
