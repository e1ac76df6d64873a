#!/usr/bin/env python3
"""bnn against the reference algorithm written plainly in PyTorch.

    /usr/bin/python3 bench/reference_pytorch.py --bnn build/src/bnn --model mlp OUT_DIR

Runs one ensemble member of the paper's pipeline twice on the same machine,
the same data and the same ATen (Debian's python3-torch 1.13 beside Debian's
libtorch 1.13):

  1. this script: Adam (lr decaying linearly to 0), SWA (Adam at a constant lr,
     equal-weight average of every iterate), then SMS-UBU with the control
     variate at x* built from stored per-batch anchor gradients g*_b, elastic
     bounces on the hypercube |x - x*| <= rho_max, and one BatchNorm-recalibrated
     test prediction per epoch. It is written the way the reference notebooks
     are structured: a Python loop over the model's parameter tensors for every
     update, torch.randn for the noise, autograd for the batch gradient.
  2. `bnn run` with the same settings (one member, same threads).

It prints, per phase, the median epoch time of each and the ratio
reference / bnn, and writes OUT_DIR/reference_<model>.csv. Both include the
per-epoch test prediction (bnn's trace.csv `seconds` column measures the
epoch up to and including it). The anchor gradients (one pass over the
training set at x*) are timed separately: bnn computes them before its first
sampling epoch, outside the epoch times.

The maths is the paper's (SMS-UBU, its Algorithm 2 order, eq. 8's control
variate); no code is taken from the reference notebooks.
"""

import argparse
import ctypes
import csv
import gzip
import math
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FMNIST_MEAN, FMNIST_STD = 0.2860, 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_split(root, prefix, limit):
    images = read_idx(os.path.join(root, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"))
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return (x - FMNIST_MEAN) / FMNIST_STD, torch.from_numpy(labels.astype(np.int64))


def set_openblas_threads(n):
    """Sets the threads of a loaded OpenBLAS (as bnn does: 1); returns its name or None."""
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "openblas" in line and line.split()[-1].startswith("/")})
    for lib in libs:
        try:
            ctypes.CDLL(lib).openblas_set_num_threads(n)
            return os.path.basename(lib)
        except (OSError, AttributeError):
            continue
    return None


def bn2d(c):
    return nn.BatchNorm2d(c, momentum=1.0)


def bn1d(c):
    return nn.BatchNorm1d(c, momentum=1.0)


def make_model(name, hidden):
    if name == "mlp":
        layers, width = [nn.Flatten()], 28 * 28
        for h in hidden:
            layers += [nn.Linear(width, h), nn.Softplus()]
            width = h
        return nn.Sequential(*layers, nn.Linear(width, 10))
    if name == "fmnist_cnn":  # the SMS-UBU paper, appendix E.1
        conv = lambda i, o: nn.Conv2d(i, o, 3, padding=1)
        return nn.Sequential(
            conv(1, 32), nn.Softplus(), bn2d(32),
            conv(32, 64), nn.Softplus(), nn.MaxPool2d(2, 2), bn2d(64),
            conv(64, 64), nn.Softplus(), bn2d(64),
            conv(64, 128), nn.Softplus(), bn2d(128),
            conv(128, 128), nn.MaxPool2d(2, 2),
            bn2d(128),
            conv(128, 256), nn.Softplus(), bn2d(256),
            conv(256, 256), nn.Softplus(), nn.MaxPool2d(2, 2),
            nn.Flatten(), bn1d(256 * 9), nn.Linear(256 * 9, 32), bn1d(32),
            nn.Linear(32, 512), nn.Softplus(), bn1d(512), nn.Linear(512, 10))
    raise SystemExit(f"unknown model {name!r}: mlp or fmnist_cnn")


class Member:
    """One chain: the model, its fixed minibatch partition, the test set."""

    def __init__(self, args):
        self.args = args
        root = args.data
        self.train_x, self.train_y = load_split(root, "train", args.train_limit)
        self.test_x, self.test_y = load_split(root, "t10k", args.test_limit)
        self.batch = args.batch_size
        self.n_batches = self.train_x.shape[0] // self.batch  # the remainder is dropped
        self.n_examples = self.n_batches * self.batch
        self.model = make_model(args.model, args.hidden)
        self.params = [p for p in self.model.parameters()]
        # The prior acts on weights, not on biases (names ending in "bias").
        self.is_weight = [not n.endswith("bias") for n, _ in self.model.named_parameters()]
        self.has_bn = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in self.model.modules())
        self.d = sum(p.numel() for p in self.params)

    def batch_data(self, b):
        s = b * self.batch
        return self.train_x[s:s + self.batch], self.train_y[s:s + self.batch]

    def batch_grad_sum(self, b):
        """Loss and gradient of sum_{i in b} CE_i at the current parameters (train mode)."""
        x, y = self.batch_data(b)
        self.model.train()
        for p in self.params:
            p.grad = None
        loss = F.cross_entropy(self.model(x), y, reduction="sum")
        loss.backward()
        return loss.detach(), [p.grad for p in self.params]

    @torch.no_grad()
    def predict(self):
        if self.has_bn:  # recalibrate: one train-mode pass over the first K batches
            self.model.train()
            self.model(self.train_x[:self.args.bn_batches * self.batch])
        self.model.eval()
        probs = torch.cat([F.softmax(self.model(self.test_x[s:s + 1000]), dim=1)
                           for s in range(0, self.test_x.shape[0], 1000)])
        return (probs.argmax(1) == self.test_y).double().mean().item()

    def optimiser_epoch(self, adam, after_step=None):
        total = 0.0
        for b in torch.randperm(self.n_batches).tolist():
            loss, grads = self.batch_grad_sum(b)
            with torch.no_grad():  # mean CE + (lambda/2)||x_w||^2 / N_D
                for p, g, w in zip(self.params, grads, self.is_weight):
                    g.mul_(1.0 / self.batch)
                    if w:
                        g.add_(p, alpha=self.args.prior_precision / self.n_examples)
            adam.step()
            if after_step:
                after_step()
            total += loss.item()
        return total / self.n_examples


def ubu_constants(gamma, t):
    """Exact OU flow of the UBU half step (double precision, expm1)."""
    eta = math.exp(-gamma * t)
    one_minus = -math.expm1(-gamma * t)
    var_v = -math.expm1(-2 * gamma * t)
    cov = one_minus ** 2 / gamma
    var_x = (2 * gamma * t - 3 + 4 * eta - eta * eta) / gamma ** 2
    sx = math.sqrt(var_x)
    return dict(eta=eta, drift=one_minus / gamma, sx=sx, cx=cov / sx,
                sv=math.sqrt(max(var_v - cov * cov / var_x, 0.0)))


def run_reference(m, args):
    times = {"adam": [], "swa": [], "sample": []}
    adam = torch.optim.Adam(m.params, lr=args.adam_lr)
    for e in range(args.adam_epochs):
        start = time.perf_counter()
        for group in adam.param_groups:
            group["lr"] = args.adam_lr * (1 - e / args.adam_epochs)
        loss = m.optimiser_epoch(adam)
        acc = m.predict()
        times["adam"].append(time.perf_counter() - start)
        print(f"  reference adam   {e + 1}/{args.adam_epochs}: loss {loss:.4f} acc {acc:.4f} "
              f"{times['adam'][-1]:.2f}s", flush=True)

    for group in adam.param_groups:
        group["lr"] = args.swa_lr
    swa_sum = [torch.zeros_like(p, dtype=torch.float64) for p in m.params]
    swa_count = [0]

    def accumulate():
        with torch.no_grad():
            for s, p in zip(swa_sum, m.params):
                s.add_(p)
        swa_count[0] += 1

    for e in range(args.swa_epochs):
        start = time.perf_counter()
        loss = m.optimiser_epoch(adam, accumulate)
        acc = m.predict()
        times["swa"].append(time.perf_counter() - start)
        print(f"  reference swa    {e + 1}/{args.swa_epochs}: loss {loss:.4f} acc {acc:.4f} "
              f"{times['swa'][-1]:.2f}s", flush=True)
    with torch.no_grad():
        for s, p in zip(swa_sum, m.params):
            p.copy_((s / swa_count[0]).float())

    # SMS-UBU around x* with stored anchors and bounces.
    rho, h = args.rho, args.step_size
    gamma, w = 1.0 / rho, 6.0 * rho
    lam, nm = args.prior_precision, m.n_batches
    start = time.perf_counter()
    anchor = [p.detach().clone() for p in m.params]
    stored = []
    for b in range(nm):
        _, grads = m.batch_grad_sum(b)
        stored.append([g.clone() for g in grads])
    s_star = [torch.stack([g[i] for g in stored]).sum(0) for i in range(len(m.params))]
    anchor_seconds = time.perf_counter() - start
    print(f"  reference anchor gradients: {anchor_seconds:.2f}s ({nm} batches, "
          f"{nm * m.d * 4 / 2**20:.0f} MiB)", flush=True)

    c = ubu_constants(gamma, h / 2)
    v = [torch.randn_like(p) for p in m.params]

    def bounce():
        with torch.no_grad():
            for p, vel, a in zip(m.params, v, anchor):
                y = p - a
                out = y.abs() > w
                if not bool(out.any()):
                    continue
                folded = torch.remainder(y - w, 4 * w).sub_(2 * w).abs_().sub_(w)
                flip = torch.remainder(torch.floor((y + w) / (2 * w)), 2) == 1
                p.copy_(torch.where(out, a + folded, p))
                vel.copy_(torch.where(out & flip, -vel, vel))

    def ou_half():
        with torch.no_grad():
            for p, vel in zip(m.params, v):
                xi1, xi2 = torch.randn_like(p), torch.randn_like(p)
                p.add_(vel, alpha=c["drift"]).add_(xi1, alpha=c["sx"])
                vel.mul_(c["eta"]).add_(xi1, alpha=c["cx"]).add_(xi2, alpha=c["sv"])
        bounce()

    order = []
    for e in range(args.sample_epochs):
        start = time.perf_counter()
        total = 0.0
        for _ in range(nm):
            if not order:  # SMS: a permutation forwards, then backwards
                perm = torch.randperm(nm).tolist()
                order = perm + perm[::-1]
            b = order.pop(0)
            ou_half()
            loss, grads = m.batch_grad_sum(b)
            with torch.no_grad():
                for i, (p, g, a, wt) in enumerate(zip(m.params, grads, anchor, m.is_weight)):
                    force = s_star[i] + nm * (g - stored[b][i]) + (p - a) / rho ** 2
                    if wt:
                        force += lam * p
                    v[i].sub_(force, alpha=h)
            ou_half()
            total += loss.item()
        acc = m.predict()
        times["sample"].append(time.perf_counter() - start)
        print(f"  reference sample {e + 1}/{args.sample_epochs}: loss {total / m.n_examples:.4f} "
              f"acc {acc:.4f} {times['sample'][-1]:.2f}s", flush=True)
    return times, anchor_seconds


def run_bnn(args, out_dir):
    run_dir = os.path.join(out_dir, f"bnn_{args.model}")
    sets = {
        "data.dataset": "fashion_mnist", "data.train_limit": args.train_limit,
        "data.test_limit": args.test_limit, "data.batch_size": args.batch_size,
        "model.name": args.model, "prior.precision": args.prior_precision,
        "adam.epochs": args.adam_epochs, "adam.lr": args.adam_lr,
        "swa.epochs": args.swa_epochs, "swa.lr": args.swa_lr,
        "sampler.name": "sms_ubu", "sampler.epochs": args.sample_epochs, "sampler.burn_in": 0,
        "sampler.step_size": args.step_size, "sampler.rho": args.rho,
        "sampler.gradient": "control_variate", "sampler.anchor_gradients": "stored",
        "evaluation.bn_batches": args.bn_batches, "run.members": 1, "run.seed": 0,
        "run.threads": args.threads, "run.device": "cpu",
    }
    if args.model == "mlp":
        sets["model.hidden"] = "[" + ", ".join(str(h) for h in args.hidden) + "]"
    if args.data_dir_given:
        sets["data.dir"] = args.data
    cmd = [args.bnn, "run", "--config", os.path.join(os.path.dirname(__file__), "..", "configs", "demo.yaml"),
           "--out", run_dir]
    for k, val in sets.items():
        cmd += ["--set", f"{k}={val}"]
    print("  " + " ".join(cmd), flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    times = {"adam": [], "swa": [], "sample": []}
    with open(os.path.join(run_dir, "member_000", "trace.csv")) as f:
        for row in csv.DictReader(f):
            times[row["phase"]].append(float(row["seconds"]))
    return times, wall


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="folder for bnn's run and the csv (created)")
    p.add_argument("--bnn", help="bnn executable; without it only the reference runs")
    p.add_argument("--model", default="mlp", choices=["mlp", "fmnist_cnn"])
    p.add_argument("--hidden", default="256,256", help="mlp widths")
    p.add_argument("--data", default=None, help="Fashion-MNIST folder (default: bnn's)")
    p.add_argument("--train-limit", type=int, default=12000)
    p.add_argument("--test-limit", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=200)
    p.add_argument("--adam-epochs", type=int, default=2)
    p.add_argument("--swa-epochs", type=int, default=1)
    p.add_argument("--sample-epochs", type=int, default=3)
    p.add_argument("--adam-lr", type=float, default=2e-3)
    p.add_argument("--swa-lr", type=float, default=5e-4)
    p.add_argument("--step-size", type=float, default=1.25e-4)
    p.add_argument("--rho", type=float, default=50 ** -0.5)
    p.add_argument("--prior-precision", type=float, default=1.0)
    p.add_argument("--bn-batches", type=int, default=20)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--openblas-threads", type=int, default=1,
                   help="threads of OpenBLAS's own pool, if OpenBLAS is the BLAS (bnn sets 1: its pool "
                        "competes with ATen's OpenMP threads); 0 leaves OpenBLAS's default")
    args = p.parse_args()
    args.hidden = [int(h) for h in args.hidden.split(",")]
    args.data_dir_given = args.data is not None
    if args.data is None:
        args.data = "/usr/share/datasets/fashion-mnist"
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    blas = set_openblas_threads(args.openblas_threads) if args.openblas_threads > 0 else None
    print(f"reference ({args.model}, torch {torch.__version__}, {args.threads} threads, "
          f"OpenBLAS threads {args.openblas_threads if blas else 'default'})", flush=True)
    member = Member(args)
    print(f"  {member.d} parameters, {member.n_batches} batches of {member.batch}", flush=True)
    ref, anchor_seconds = run_reference(member, args)
    rows = []
    if args.bnn:
        print("bnn", flush=True)
        ours, wall = run_bnn(args, args.out)
        print(f"\n{'phase':8} {'reference s':>12} {'bnn s':>10} {'reference/bnn':>14}")
        for phase in ("adam", "swa", "sample"):
            r, o = statistics.median(ref[phase]), statistics.median(ours[phase])
            rows.append((phase, r, o, r / o))
            print(f"{phase:8} {r:12.3f} {o:10.3f} {r / o:14.2f}")
        print(f"(median epoch seconds; reference anchor gradients {anchor_seconds:.2f}s, bnn wall {wall:.1f}s)")
    else:
        for phase in ("adam", "swa", "sample"):
            rows.append((phase, statistics.median(ref[phase]), float("nan"), float("nan")))
    path = os.path.join(args.out, f"reference_{args.model}.csv")
    with open(path + ".tmp", "w") as f:
        f.write("model,phase,reference_epoch_s,bnn_epoch_s,reference_over_bnn\n")
        for phase, r, o, ratio in rows:
            f.write(f"{args.model},{phase},{r:.4f},{o:.4f},{ratio:.3f}\n")
    os.replace(path + ".tmp", path)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
