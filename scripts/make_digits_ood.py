#!/usr/bin/env python3
"""Handwritten digits as an out-of-distribution set for Fashion-MNIST.

Reads the 1797 8 x 8 handwritten digits of the UCI optical-recognition data set
that Debian's python3-sklearn ships (sklearn/datasets/data/digits.csv.gz, 64
pixel values 0-16 and the digit per line) and writes them as an arrays data set
(data.dataset arrays: test_x.npy uint8 N x 28 x 28, test_y.npy int64 digits)
laid out like MNIST: each digit scaled to 20 x 20 (bilinear) and centred in a
28 x 28 frame, white on black. bnn reads it as an OOD set:

    python3 scripts/make_digits_ood.py runs/digits
    build/src/bnn run --config configs/demo.yaml \\
        --set 'evaluation.ood=[{dataset: arrays, dir: runs/digits, name: digits}]'

Only numpy is needed to run it (the data file comes with python3-sklearn).
"""

import gzip
import pathlib
import sys

import numpy as np

DIGITS = pathlib.Path("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz")


def bilinear(image, side):
    """Resizes a square image to side x side, pixel centres aligned (as OpenCV's INTER_LINEAR)."""
    n = image.shape[0]
    coords = (np.arange(side) + 0.5) * n / side - 0.5
    coords = np.clip(coords, 0, n - 1)
    lo = np.floor(coords).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    w = coords - lo
    rows = image[lo, :] * (1 - w)[:, None] + image[hi, :] * w[:, None]
    return rows[:, lo] * (1 - w)[None, :] + rows[:, hi] * w[None, :]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_digits_ood.py OUT_DIR")
    if not DIGITS.exists():
        sys.exit(f"{DIGITS} missing: install Debian's python3-sklearn (apt-get install python3-sklearn)")
    out = pathlib.Path(sys.argv[1])
    with gzip.open(DIGITS, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    pixels, labels = table[:, :64].reshape(-1, 8, 8) / 16.0, table[:, 64].astype(np.int64)
    images = np.zeros((len(pixels), 28, 28), np.uint8)
    for i, digit in enumerate(pixels):
        images[i, 4:24, 4:24] = np.clip(np.rint(bilinear(digit, 20) * 255), 0, 255).astype(np.uint8)
    out.mkdir(parents=True, exist_ok=True)
    for name, array in (("test_x.npy", images), ("test_y.npy", labels)):
        tmp = out / (name + ".tmp")
        with open(tmp, "wb") as f:
            np.save(f, array)
        tmp.replace(out / name)
    (out / "class_names.txt").write_text("".join(f"{d}\n" for d in range(10)))
    print(f"{out}: {len(images)} digits, 28 x 28 uint8 (test_x.npy, test_y.npy)")


if __name__ == "__main__":
    main()
