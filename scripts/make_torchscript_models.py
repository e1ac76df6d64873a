#!/usr/bin/env python3
"""Small TorchScript classifiers for the tests of model.name torchscript.

Writes into OUTDIR (the build runs this; tests read BNN_TORCHSCRIPT_DIR):
  mlp_scripted.pt       torch.jit.script of Flatten, Linear(36, 8), ReLU, Linear(8, 2)
  mlp_traced.pt         the same network, torch.jit.trace'd
  cnn_bn_scripted.pt    Conv2d(1, 4, 3, padding=1), BatchNorm2d(4), ReLU, Flatten,
                        Linear(144, 2), scripted (BatchNorm momentum 0.1)
  cnn_bn_cumulative.pt  the same with BatchNorm2d(momentum=None) (cumulative average)
  tied.pt               Flatten, Linear(36, 36) applied twice (held as `a` and `c`),
                        ReLU, Linear(36, 2): 1406 parameters, not 2738
  frozen.pt             the mlp with its first weight saved with requires_grad False
  bn_tied.pt            Conv2d(1, 4, 3, padding=1) `conv`, BatchNorm2d(4) held as `bn`
                        and `bn2` (applied once), ReLU, Linear(144, 2) `head`
  fails_on_batches.pt   the mlp, whose forward raises on more than 2 inputs (it passes
                        bnn's checks at load and fails in training)
and modules bnn must refuse, each with one clear error:
  bn_traced_eval.pt     the BatchNorm CNN traced in eval mode (fixed to running statistics)
  bn_traced_train.pt    the same traced in train mode (fixed to batch statistics)
  wrong_classes.pt      returns 5 logits where the data set has 2 classes
  wrong_input.pt        expects 50 features, the data set has 1 x 6 x 6 = 36
  tuple_output.pt       returns a tuple of tensors
  no_forward.pt         has an exported method but no forward
  double_params.pt      float64 parameters
  nan_logits.pt         the mlp on log(x), NaN for negative inputs
All take N x 1 x 6 x 6 inputs (2 classes), the image layout of the tests' array
data sets. Weights come from torch.manual_seed(0), so reruns give the same modules.

Usage (Debian: apt-get install python3-torch):
    python3 scripts/make_torchscript_models.py OUTDIR

It is also the README's recipe in full: any nn.Module mapping N x C x H x W
inputs to N x K logits, passed through torch.jit.script (or torch.jit.trace when
it has no BatchNorm) and saved, is a model bnn can train and sample.
"""

import os
import sys

import torch
from torch import nn


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(36, 8), nn.ReLU(), nn.Linear(8, 2))


def cnn_bn(momentum=0.1):
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4, momentum=momentum),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 6 * 6, 2),
    )


class TupleOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        y = self.net(x)
        return y, y


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(36, 36)
        self.c = self.a
        self.b = nn.Linear(36, 2)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.b(torch.relu(self.c(torch.relu(self.a(x)))))


class BnTied(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.bn2 = self.bn
        self.head = nn.Linear(4 * 6 * 6, 2)

    def forward(self, x):
        return self.head(torch.flatten(torch.relu(self.bn2(self.conv(x))), 1))


class FailsOnBatches(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        if x.size(0) > 2:
            raise RuntimeError("this test module takes at most 2 inputs")
        return self.net(x)


class NanLogits(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        return self.net(torch.log(x))


class Spoilt(nn.Module):
    """The mlp with its logits spoilt one way: detached, integer, or noisy."""

    def __init__(self, how: str):
        super().__init__()
        self.net = mlp()
        self.how = how

    def forward(self, x):
        if self.how == "noisy":
            x = x + 0.1 * torch.randn_like(x)
        logits = self.net(x)
        if self.how == "detached":
            return logits.detach()
        if self.how == "integer":
            return logits.long()
        return logits


class NoForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    @torch.jit.export
    def logits(self, x):
        return self.net(x)


def save(module, outdir, name):
    # Write then rename, so that an interrupted build never leaves half a file.
    path = os.path.join(outdir, name)
    module.save(path + ".tmp")
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_torchscript_models.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    example = torch.randn(4, 1, 6, 6)

    save(torch.jit.script(mlp()), outdir, "mlp_scripted.pt")
    save(torch.jit.trace(mlp(), example), outdir, "mlp_traced.pt")
    save(torch.jit.script(cnn_bn()), outdir, "cnn_bn_scripted.pt")
    save(torch.jit.script(cnn_bn(momentum=None)), outdir, "cnn_bn_cumulative.pt")
    save(torch.jit.trace(cnn_bn().eval(), example), outdir, "bn_traced_eval.pt")
    save(torch.jit.trace(cnn_bn().train(), example), outdir, "bn_traced_train.pt")
    save(torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(36, 5))), outdir, "wrong_classes.pt")
    save(torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(50, 2))), outdir, "wrong_input.pt")
    save(torch.jit.script(TupleOutput()), outdir, "tuple_output.pt")
    save(torch.jit.script(NoForward()), outdir, "no_forward.pt")
    save(torch.jit.script(mlp().double()), outdir, "double_params.pt")
    save(torch.jit.script(Tied()), outdir, "tied.pt")
    frozen = mlp()
    frozen[1].weight.requires_grad_(False)
    save(torch.jit.script(frozen), outdir, "frozen.pt")
    save(torch.jit.script(FailsOnBatches()), outdir, "fails_on_batches.pt")
    save(torch.jit.script(BnTied()), outdir, "bn_tied.pt")
    save(torch.jit.script(NanLogits()), outdir, "nan_logits.pt")
    save(torch.jit.script(Spoilt("detached")), outdir, "detached.pt")
    save(torch.jit.script(Spoilt("integer")), outdir, "integer_logits.pt")
    save(torch.jit.script(Spoilt("noisy")), outdir, "noisy_forward.pt")
    dropout = nn.Sequential(nn.Flatten(), nn.Linear(36, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    save(torch.jit.trace(dropout.train(), example, check_trace=False), outdir, "dropout_traced_train.pt")


if __name__ == "__main__":
    main()
