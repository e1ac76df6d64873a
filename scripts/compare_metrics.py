#!/usr/bin/env python3
"""Two runs' ensemble tables side by side, each difference with a Welch or a paired t-test.

    scripts/compare_metrics.py [--labels A B] [--alpha P] [--paired] METRICS_A METRICS_B

For the same experiment run twice where the bits cannot agree (on a GPU and
on a CPU, say, or under two LibTorch versions), or for two samplers on one
setup: reads both runs' metrics.json (written by `bnn run` and `bnn
evaluate`) and prints a Markdown table with, for each method, ensemble size
and metric in both, the two means, their difference, and the two-sided
p-value of Welch's t-test that the two means are equal. Each mean is over
the n disjoint groups of members of that size, and its standard error is
std / sqrt(n - 1), std being the table's standard deviation across the
groups (divided by n, as bnn writes it); the degrees of freedom are
Welch-Satterthwaite's, so that a size with few groups, whose spread is
itself uncertain, is not over-read. The two runs' members are treated as
independent. Where the runs share seeds (the same x*, or chains whose bits
differ only by the arithmetic), their members are positively correlated,
which makes the test conservative: it marks less than it could. A size with
one group in either run has no spread and is not tested.

--paired: for runs whose members correspond one to one (the same config and
seeds: a CPU run and a GPU run of it, two LibTorch versions; or two samplers
from the same seeds, whose Adam and SWA members are then the same), the test
is on the differences group by group, group g of size es being members
[g es, (g + 1) es) in both runs: Student's t with n - 1 degrees of freedom
on the mean of the n differences, their standard error being their standard
deviation (ddof 1) over sqrt(n). What the two runs' members share (x*, the
batches, the noise) then cancels instead of widening the test. It needs
each group's values, which metrics.json carries since bnn writes them, and
the same number of groups in both runs. A row equal group by group in
both runs (two samplers' runs from the same seeds share their Adam and SWA
members bit for bit) is shown as "same" and not tested, so that it does
not tighten the bound below for the rows that can differ.

A row is marked when its p-value is below P / (the number of rows tested),
P = 0.01 by default (Bonferroni: the chance of marking any row when the two
runs sample the same thing is at most P, whatever the dependence between
rows, which share members).

Exits 0 when no row is marked, 1 when one is, 2 for bad input.
Standard library only.
"""
import math
import sys

from paper_comparison import BadMetrics, load_ensembles

METRICS = ["accuracy", "nll", "ace", "rps", "ece", "brier"]


def load(path):
    rows = load_ensembles(path, METRICS)
    if not rows:
        raise BadMetrics(f"{path}: no ensemble rows (is it a bnn run's metrics.json?)")
    return rows


def _beta_fraction(a, b, x):
    # The continued fraction of the regularized incomplete beta function, evaluated by the modified Lentz
    # method; converges fast for x < (a + 1) / (a + b + 2).
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return h


def incomplete_beta(a, b, x):
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def welch_p(a, b, n_a, n_b):
    """Two-sided p-value that the means are equal; None when a side has one group."""
    (mean_a, std_a), (mean_b, std_b) = a, b
    if n_a < 2 or n_b < 2:
        return None
    var_a, var_b = std_a ** 2 / (n_a - 1), std_b ** 2 / (n_b - 1)  # squared standard errors
    diff = mean_a - mean_b
    if var_a + var_b == 0:
        return 1.0 if diff == 0 else 0.0
    df = (var_a + var_b) ** 2 / (var_a ** 2 / (n_a - 1) + var_b ** 2 / (n_b - 1))
    return t_two_sided(diff / math.sqrt(var_a + var_b), df)


SAME = "same"  # --paired: a row whose groups are equal in both runs, not tested


def paired_p(values_a, values_b):
    """Two-sided p-value of the paired t-test that the group-by-group differences have mean 0; None for
    fewer than two groups."""
    n = len(values_a)
    if n < 2:
        return None
    differences = [a - b for a, b in zip(values_a, values_b)]
    mean = sum(differences) / n
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    if variance == 0:
        return 1.0 if mean == 0 else 0.0
    return t_two_sided(mean / math.sqrt(variance / n), n - 1.0)


def paired_values(path_label, row, metric, key):
    values = row[2].get(metric)
    if values is None:
        raise BadMetrics(f"--paired: {path_label}'s {key[0]} size {key[1]} has no per-group values of {metric} "
                         "(a metrics.json from an older bnn: run `bnn evaluate` on the run again)")
    return values


def compare(rows_a, rows_b, labels, alpha, paired=False):
    order = {"adam": 0, "swa": 1, "bayes": 2}
    keys = sorted(set(rows_a) & set(rows_b), key=lambda k: (k[1], order.get(k[0], 3), k[0]))
    if not keys:
        raise BadMetrics("the two tables share no method and ensemble size")
    results = []
    for method, size in keys:
        row_a, row_b = rows_a[(method, size)], rows_b[(method, size)]
        (n_a, m_a), (n_b, m_b) = row_a[:2], row_b[:2]
        if paired and n_a != n_b:
            raise BadMetrics(f"--paired: {method} size {size} has {n_a} groups in {labels[0]} and {n_b} in "
                             f"{labels[1]}; pairing needs the same members in both runs")
        for metric in METRICS:
            if paired:
                values_a = paired_values(labels[0], row_a, metric, (method, size))
                values_b = paired_values(labels[1], row_b, metric, (method, size))
                # Equal group by group (the same Adam members of two samplers' runs, say): nothing to test.
                p = SAME if values_a == values_b else paired_p(values_a, values_b)
            else:
                p = welch_p(m_a[metric], m_b[metric], n_a, n_b)
            results.append((method, size, n_a, n_b, metric, m_a[metric][0], m_b[metric][0], p))
    tested = sum(isinstance(r[-1], float) for r in results)
    bound = alpha / tested if tested else 0.0
    a, b = labels
    lines = [f"| method | size | groups ({a}, {b}) | metric | {a} | {b} | {a} - {b} | p | |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    marked = 0
    for method, size, n_a, n_b, metric, mean_a, mean_b, p in results:
        flag = ""
        if isinstance(p, float) and p < bound:
            flag = "differs"
            marked += 1
        p_text = "n/a" if p is None else p if p == SAME else f"{p:.2g}"
        lines.append(f"| {method} | {size} | {n_a}, {n_b} | {metric} | {mean_a:.4f} | {mean_b:.4f} | "
                     f"{mean_a - mean_b:+.4f} | {p_text} | {flag} |")
    test = ("paired t-test over the groups; sizes with one group and rows equal group by group are not tested"
            if paired else
            "Welch's t-test; sizes with one group in either run are not tested")
    lines += ["", f"{marked} of {tested} differences are marked: p below {alpha:g} / {tested} = {bound:.2g} "
              f"({test})."]
    return lines, marked


def main(argv):
    usage = "usage: scripts/compare_metrics.py [--labels A B] [--alpha P] [--paired] METRICS_A METRICS_B"
    args, labels, alpha, paired = argv[1:], ["A", "B"], 0.01, False
    try:
        while args and args[0].startswith("--"):
            if args[0] == "--labels" and len(args) >= 3:
                labels, args = args[1:3], args[3:]
            elif args[0] == "--paired":
                paired, args = True, args[1:]
            elif args[0] == "--alpha" and len(args) >= 2:
                alpha, args = float(args[1]), args[2:]
                if not 0 < alpha < 1:
                    raise ValueError
            else:
                raise ValueError
        if len(args) != 2:
            raise ValueError
    except ValueError:
        print(usage + " (P between 0 and 1)", file=sys.stderr)
        return 2
    try:
        lines, marked = compare(load(args[0]), load(args[1]), labels, alpha, paired)
    except BadMetrics as e:
        print(f"compare_metrics: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 1 if marked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
