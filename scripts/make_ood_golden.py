#!/usr/bin/env python3
"""Golden values for src/evaluation/ood.cpp (out-of-distribution detection).

Writes tests/data/ood_golden.json, read by tests/src/evaluation/ood_test.cpp. The
metrics are computed here from their definitions (Note [OOD detection metrics] in
src/evaluation/ood.h) in a deliberately different way from the C++ code:
  AUROC  the Mann-Whitney statistic over all (test, OOD) pairs, ties counting 1/2;
  AUPR   average precision over the distinct thresholds (np.unique), OOD positive;
  FPR95  a scan of the distinct in-distribution scores for the smallest that
         accepts at least 95 % of the test examples (counted in integers).

Usage (numpy only; Debian: apt-get install python3-numpy):
    python3 scripts/make_ood_golden.py [output.json]

Seeded (SEED below): rerunning reproduces the checked-in file. Floats are written
with repr precision, so the C++ side reads back the same doubles.

Cases (scores, higher = more likely OOD):
  gaussian_200_150   continuous scores, the OOD set shifted by 1
  integer_ties       scores in {0, ..., 4}: every threshold is a tie of both sets
  all_tied           one value for everything: AUROC 1/2, AUPR the OOD fraction, FPR95 1
  separated          every OOD score above every test score: 1, 1, 0
  reversed           every OOD score below: 0, the smallest AUPR, FPR95 1
  n20_exact_95       20 test examples: the 19th smallest accepts exactly 95 %
  n7_ceil            7 test examples: 95 % needs all 7
Ensembles: M = 5 members, K = 3 classes, 40 test and 30 OOD examples; "bayes" has
3 draws per member (mutual information at every size), "point" one draw (mutual
information from size 2); rows for sizes 1, 2, 4 and 5 (the whole ensemble),
summarised over groups (mean and sample std, ddof 1, none for one group; a
member left over sits a size out).
"""

import json
import pathlib
import sys

import numpy as np

from make_metric_golden import ensemble_sizes  # the metrics' golden values' sizes, as bnn's

SEED = 20261124


def auroc(inn, out):
    greater = (out[:, None] > inn[None, :]).sum()
    equal = (out[:, None] == inn[None, :]).sum()
    return float((greater + 0.5 * equal) / (len(inn) * len(out)))


def aupr(inn, out):
    scores = np.concatenate([inn, out])
    positive = np.concatenate([np.zeros(len(inn), bool), np.ones(len(out), bool)])
    total = 0.0
    previous_recall = 0.0
    for t in np.unique(scores)[::-1]:
        flagged = scores >= t
        tp = np.sum(flagged & positive)
        recall = tp / len(out)
        precision = tp / np.sum(flagged)
        total += (recall - previous_recall) * precision
        previous_recall = recall
    return float(total)


def fpr95(inn, out):
    n = len(inn)
    for t in np.unique(inn):
        if 100 * np.sum(inn <= t) >= 95 * n:
            return float(np.mean(out <= t))
    raise AssertionError("unreachable")


def detection(inn, out):
    return {"auroc": auroc(inn, out), "aupr": aupr(inn, out), "fpr95": fpr95(inn, out)}


def entropy(p):
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=1)


def scores(draws_per_member):
    """draws_per_member: list over members of arrays D x N x K. Returns the scores."""
    pbar = np.mean([d.mean(axis=0) for d in draws_per_member], axis=0)
    expected = np.mean([np.mean([entropy(x) for x in d], axis=0) for d in draws_per_member], axis=0)
    total_draws = sum(len(d) for d in draws_per_member)
    out = {"entropy": entropy(pbar), "max_prob": 1.0 - pbar.max(axis=1)}
    if total_draws >= 2:
        out["mutual_information"] = entropy(pbar) - expected
    return out


def ensemble_case(rng, draws, members=5, n_in=40, n_out=30, k=3):
    # OOD draws are flatter (Dirichlet 1) than test draws (Dirichlet 0.3).
    # Continuous, so no two scores tie: mathematically equal scores reached
    # by different sums could round apart differently here and in C++, and
    # ties are the detection cases' job.
    def make(n, alpha):
        return rng.dirichlet(np.full(k, alpha), size=(draws, n))

    test = [make(n_in, 0.3) for _ in range(members)]
    ood = [make(n_out, 1.0) for _ in range(members)]
    rows = []
    for size in ensemble_sizes(members):
        groups = members // size
        per_score = {}
        for g in range(groups):
            s_in = scores(test[g * size:(g + 1) * size])
            s_out = scores(ood[g * size:(g + 1) * size])
            for name in s_in:
                per_score.setdefault(name, []).append(detection(s_in[name], s_out[name]))
        for name in ["entropy", "max_prob", "mutual_information"]:
            if name not in per_score or len(per_score[name]) != groups:
                continue
            row = {"size": size, "groups": groups, "score": name}
            for metric in ["auroc", "aupr", "fpr95"]:
                values = np.array([d[metric] for d in per_score[name]])
                row[metric] = {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else None,
                               "values": [float(v) for v in values]}
            rows.append(row)
    return {
        "draws": draws,
        "test": [d.tolist() for d in test],
        "ood": [d.tolist() for d in ood],
        "rows": rows,
    }


def main():
    rng = np.random.default_rng(SEED)
    cases = {
        "gaussian_200_150": (rng.normal(0, 1, 200), rng.normal(1, 1, 150)),
        "integer_ties": (rng.integers(0, 4, 97).astype(float), rng.integers(1, 5, 61).astype(float)),
        "all_tied": (np.full(13, 0.5), np.full(9, 0.5)),
        "separated": (rng.uniform(0, 1, 30), rng.uniform(2, 3, 20)),
        "reversed": (rng.uniform(2, 3, 30), rng.uniform(0, 1, 20)),
        "n20_exact_95": (np.arange(20, dtype=float), np.array([18.0, 18.5, 19.0, 17.0, 25.0])),
        "n7_ceil": (np.array([0.0, 1, 2, 3, 4, 5, 6]), np.array([5.0, 6, 6.5, 7])),
    }
    golden = {
        "seed": SEED,
        "detection": {
            name: {"in": inn.tolist(), "out": out.tolist(), **detection(inn, out)} for name, (inn, out) in cases.items()
        },
        "ensembles": {"bayes": ensemble_case(rng, draws=3), "point": ensemble_case(rng, draws=1)},
    }
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path("tests/data/ood_golden.json")
    path.write_text(json.dumps(golden) + "\n")


if __name__ == "__main__":
    main()
