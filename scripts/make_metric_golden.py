#!/usr/bin/env python3
"""Golden values for src/evaluation/metrics.cpp and src/evaluation/ensemble.cpp.

Writes tests/data/metrics_golden.json, read by tests/evaluation/metrics_test.cpp and
tests/evaluation/ensemble_test.cpp. The metrics are computed here with a separate,
deliberately plain numpy implementation of the definitions in docs/design.md section 5,
so that the C++ code is checked against the definitions rather than against itself.

Usage (numpy only; Debian: apt-get install python3-numpy):
    python3 scripts/make_metric_golden.py [output.json]

The random generator is seeded (SEED below), so rerunning reproduces the checked-in
file exactly. Floats are written by json.dump, i.e. with repr precision, so the
C++ side reads back the very same doubles.

Cases:
  dirichlet_n200_k10  Dirichlet probabilities, labels drawn from them.
  n97_k3              N not divisible by the 20 ACE bins.
  ties_quarters_k4    probabilities on multiples of 0.25: heavy ties, so the
                      stable-sort order decides the ACE bins.
  zero_at_label_k5    p = 0 (and p = 1e-50) at the true label, so the NLL clamp
                      at 100 matters; some rows are exactly one-hot (0 log 0).
  binary_edges_k2     K = 2, with confidences exactly on the ECE bin edges b/15.
  tiny_n7_k3          N = 7 < 20 bins: most ACE bins are empty.
Ensemble: M = 5 members (N = 50, K = 4), rows for sizes 1, 2, 4 (groups 5, 2, 1)
and 5, the whole ensemble (one group).
Reference: M = 4 members and reference probabilities on multiples of 1/4 (N = 60,
K = 4, many argmax ties): top-1 agreement and total variation per ensemble size.
"""

import json
import pathlib
import sys

import numpy as np

SEED = 20240607
ACE_BINS = 20
ECE_BINS = 15


# --- metric definitions (docs/design.md section 5) ---------------------------------


def sample_std(values):
    # The spread across groups as the reference code reports it (torch's
    # Tensor.std(): ddof 1); none (JSON null) for a single group.
    return float(np.std(values, ddof=1)) if len(values) > 1 else None


def accuracy(p, y):
    return float(np.mean(np.argmax(p, axis=1) == y))


def nll(p, y):
    with np.errstate(divide="ignore"):
        logp = np.log(p[np.arange(len(y)), y])
    return float(np.mean(-np.maximum(logp, -100.0)))


def ace(p, y, bins=ACE_BINS):
    n, k = p.shape
    bin_of = np.floor(np.arange(n) / (n / bins)).astype(np.int64)
    total = 0.0
    for c in range(k):
        order = np.argsort(p[:, c], kind="stable")
        conf = p[order, c]
        hits = (y[order] == c).astype(np.float64)
        for b in range(bins):
            in_bin = bin_of == b
            if in_bin.any():
                total += abs(hits[in_bin].mean() - conf[in_bin].mean())
    return float(total / (bins * k))


def rps(p, y):
    n, k = p.shape
    onehot = np.eye(k)[y]
    diff = np.cumsum(p, axis=1) - np.cumsum(onehot, axis=1)
    return float(np.mean(np.sum(diff**2, axis=1) / (k - 1)))


def ece(p, y, bins=ECE_BINS):
    n = len(y)
    conf = np.max(p, axis=1)
    correct = (np.argmax(p, axis=1) == y).astype(np.float64)
    edges = np.arange(bins + 1) / bins  # b / B, as the C++ code computes them
    total = 0.0
    for b in range(bins):
        in_bin = (conf > edges[b]) & (conf <= edges[b + 1])
        if b == 0:
            in_bin |= conf == 0.0
        if in_bin.any():
            total += in_bin.sum() / n * abs(correct[in_bin].mean() - conf[in_bin].mean())
    return float(total)


def brier(p, y):
    onehot = np.eye(p.shape[1])[y]
    return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))


def entropy(p):
    safe = np.where(p > 0, p, 1.0)
    return float(np.mean(-np.sum(np.where(p > 0, p * np.log(safe), 0.0), axis=1)))


def all_metrics(p, y):
    return {
        "accuracy": accuracy(p, y),
        "nll": nll(p, y),
        "ace": ace(p, y),
        "rps": rps(p, y),
        "ece": ece(p, y),
        "brier": brier(p, y),
        "entropy": entropy(p),
    }


# --- cases -------------------------------------------------------------------------


def labels_from(rng, p):
    return np.array([rng.choice(p.shape[1], p=row / row.sum()) for row in p], dtype=np.int64)


def dirichlet_case(rng, n, k, alpha):
    p = rng.dirichlet(np.full(k, alpha), size=n)
    return p, labels_from(rng, p)


def ties_case(rng, n=120, k=4):
    # Four quarters spread over the classes: every entry is one of 0, .25, .5, .75, 1.
    p = rng.multinomial(4, np.full(k, 1.0 / k), size=n) / 4.0
    return p, rng.integers(0, k, size=n)


def zero_at_label_case(rng, n=40, k=5):
    p, y = dirichlet_case(rng, n, k, alpha=1.0)
    rows = np.arange(n)
    for i in rows[0:6]:  # p = 0 at the label: log 0 = -inf, clamped to -100
        p[i, y[i]] = 0.0
    for i in rows[6:9]:  # log(1e-50) = -115.1, also clamped
        p[i, y[i]] = 1e-50
    p /= p.sum(axis=1, keepdims=True)
    for i in rows[9:14]:  # exact one-hot rows, right and wrong
        p[i] = np.eye(k)[y[i] if i % 2 == 0 else (y[i] + 1) % k]
    return p, y


def binary_edges_case(rng, n=60):
    p0 = rng.uniform(size=n)
    # Rows whose confidence is exactly an ECE edge b / 15 (b >= 8 so it is the max).
    p0[: 2 * 8] = np.tile(np.arange(8, 16) / ECE_BINS, 2)
    p = np.stack([p0, 1.0 - p0], axis=1)
    # Labels drawn from the probabilities: nearly calibrated, so bins are over- and
    # under-confident in turn and moving an edge point to the next bin changes the ECE.
    return p, labels_from(rng, p)


def metric_cases(rng):
    cases = {
        "dirichlet_n200_k10": dirichlet_case(rng, 200, 10, alpha=0.3),
        "n97_k3": dirichlet_case(rng, 97, 3, alpha=0.7),
        "ties_quarters_k4": ties_case(rng),
        "zero_at_label_k5": zero_at_label_case(rng),
        "binary_edges_k2": binary_edges_case(rng),
        "tiny_n7_k3": dirichlet_case(rng, 7, 3, alpha=1.0),
    }
    return [
        {"name": name, "probs": p.tolist(), "labels": y.tolist(), "expected": all_metrics(p, y)}
        for name, (p, y) in cases.items()
    ]


def ensemble_sizes(members):
    # 1, 2, 4, ... up to M, and M itself where it is not a power of two.
    sizes = [2 ** i for i in range(members.bit_length()) if 2 ** i <= members]
    return sizes if sizes[-1] == members else sizes + [members]


def ensemble_case(rng, members=5, n=50, k=4):
    y = rng.integers(0, k, size=n)
    probs = [rng.dirichlet(np.full(k, 0.8), size=n) for _ in range(members)]
    rows = []
    for size in ensemble_sizes(members):
        groups = members // size
        per_group = [
            all_metrics(np.mean(np.stack(probs[g * size : (g + 1) * size]), axis=0), y)
            for g in range(groups)
        ]
        row = {"method": "bayes", "size": size, "groups": groups}
        for name in per_group[0]:
            values = np.array([m[name] for m in per_group])
            row[name] = {"mean": float(np.mean(values)), "std": sample_std(values),
                         "values": [float(v) for v in values]}
        rows.append(row)
    return {
        "method": "bayes",
        "members": [p.tolist() for p in probs],
        "labels": y.tolist(),
        "rows": rows,
    }


def top1_agreement(p, q):
    # np.argmax takes the first maximum: ties go to the lowest class index in both.
    return float(np.mean(np.argmax(p, axis=1) == np.argmax(q, axis=1)))


def total_variation(p, q):
    return float(np.mean(0.5 * np.abs(p - q).sum(axis=1)))


def reference_case(rng, members=4, n=60, k=4):
    # Probabilities on multiples of 1/4 (members) and 1/4 (reference): group
    # means on multiples of 1/8 tie often, so the argmax convention matters.
    y = rng.integers(0, k, size=n)
    probs = [rng.multinomial(4, np.full(k, 1.0 / k), size=n) / 4.0 for _ in range(members)]
    reference = rng.multinomial(4, np.full(k, 1.0 / k), size=n) / 4.0
    rows = []
    for size in ensemble_sizes(members):
        groups = members // size
        means = [np.mean(np.stack(probs[g * size : (g + 1) * size]), axis=0) for g in range(groups)]
        row = {"size": size, "groups": groups}
        for name, fn in (("agreement", top1_agreement), ("total_variation", total_variation)):
            values = np.array([fn(m, reference) for m in means])
            row[name] = {"mean": float(np.mean(values)), "std": sample_std(values),
                         "values": [float(v) for v in values]}
        rows.append(row)
    return {
        "members": [p.tolist() for p in probs],
        "labels": y.tolist(),
        "reference": reference.tolist(),
        "rows": rows,
    }


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    default = root / "tests/data/metrics_golden.json"
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else default
    rng = np.random.default_rng(SEED)
    golden = {
        "generator": "scripts/make_metric_golden.py",
        "seed": SEED,
        "ace_bins": ACE_BINS,
        "ece_bins": ECE_BINS,
        "cases": metric_cases(rng),
        "ensemble": ensemble_case(rng),
        "reference": reference_case(rng),
    }
    out.write_text(json.dumps(golden) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
