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
std / sqrt(n), std being the standard deviation across the groups (over
n - 1; from the groups' values where metrics.json has them, as
paper_comparison.ensembles_in reads it); the degrees of freedom are
Welch-Satterthwaite's, so that a size with few groups, whose spread is
itself uncertain, is not over-read. The two runs' members are treated as
independent. Where the runs share seeds (the same x*, or chains whose bits
differ only by the arithmetic), their members are positively correlated,
which makes the test conservative: it marks less than it could. A size with
one group in either run has no spread and is not tested; where both runs'
groups are each equal up to rounding, the test is the exact rank test
(welch_p).

--paired: for runs whose members correspond one to one (the same config and
seeds: a CPU run and a GPU run of it, two LibTorch versions; or two samplers
from the same seeds, whose Adam and SWA members are then the same), the test
is on the differences group by group, group g of size es being members
[g es, (g + 1) es) in both runs: Student's t with n - 1 degrees of freedom
on the mean of the n differences, their standard error being their standard
deviation (ddof 1) over sqrt(n). What the two runs' members share (x*, the
batches, the noise) then cancels instead of widening the test. It needs
each group's values, which metrics.json carries since bnn writes them, and
the same members in the same order in both runs, which metrics.json names
("members"): a GPU run of members 0-15 pairs with a CPU run of members
0-15, not with one of 16-31. A row equal group by group in
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

from paper_comparison import BadMetrics, ensembles_in, read_metrics_json
from student_t import incomplete_beta, paired_p, t_two_sided  # noqa: F401 (incomplete_beta: tests)

METRICS = ["accuracy", "nll", "ace", "rps", "ece", "brier"]


def load(path):
    """A metrics.json's ensemble rows (paper_comparison.ensembles_in) and the whole file, read once."""
    data = read_metrics_json(path)
    rows = ensembles_in(data, path, METRICS)
    if not rows:
        raise BadMetrics(f"{path}: no ensemble rows (is it a bnn run's metrics.json?)")
    return rows, data


def welch_p(a, b, n_a, n_b):
    """Two-sided p-value that the means are equal; None when a side has one group.

    Where neither run has a spread (each standard deviation at most 1e-9 of the means' size: every group of
    a run equal up to rounding), t is meaningless, as in student_t.paired_p_value: a metric in steps, the
    same in every group of each run, would be "infinitely" significant at any step. The test is then
    Mann-Whitney's U test with its exact null distribution (that of untied values, which is symmetric for
    any n_a and n_b; ties within one run leave U unchanged): two samples that do not overlap at all have
    U at an end of its range, two-sided p = 2 / C(n_a + n_b, n_a): 1/3 for two groups each, 2/70 for four,
    never 0. (A permutation test of the means, which counts tied arrangements apart, would give half that
    where n_a != n_b; the rank test is the more cautious.)"""
    (mean_a, std_a), (mean_b, std_b) = a, b
    if n_a < 2 or n_b < 2:
        return None
    var_a, var_b = std_a ** 2 / n_a, std_b ** 2 / n_b  # squared standard errors (std over n - 1)
    diff = mean_a - mean_b
    tolerance = 1e-9 * max(abs(mean_a), abs(mean_b))
    if max(std_a, std_b) <= tolerance:
        return 1.0 if abs(diff) <= tolerance else min(1.0, 2.0 / math.comb(n_a + n_b, n_a))
    df = (var_a + var_b) ** 2 / (var_a ** 2 / (n_a - 1) + var_b ** 2 / (n_b - 1))
    return t_two_sided(diff / math.sqrt(var_a + var_b), df)


SAME = "same"  # --paired: a row whose groups are equal in both runs, not tested


def members_of(data, path, label):
    """The member folders a metrics.json names, in the order its groups take them (for --paired)."""
    members = data.get("members") if isinstance(data, dict) else None
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise BadMetrics(f"--paired: {label}'s {path} does not name its members (a metrics.json from an older "
                         "bnn: run `bnn evaluate` on the run again)")
    return members


def check_same_members(members_a, members_b, labels):
    """--paired pairs group g of one run with group g of the other: both must hold the same members."""
    for position, (a, b) in enumerate(zip(members_a, members_b)):
        if a != b:
            raise BadMetrics(f"--paired: position {position} holds {a} in {labels[0]} and {b} in {labels[1]}; "
                             "pairing needs the same members in the same order in both runs")
    if len(members_a) != len(members_b):
        raise BadMetrics(f"--paired: {labels[0]} has {len(members_a)} members and {labels[1]} {len(members_b)}; "
                         "pairing needs the same members in both runs")


def paired_values(path_label, row, metric, key):
    values = row[2].get(metric)
    if values is None:
        raise BadMetrics(f"--paired: {path_label}'s {key[0]} size {key[1]} has no per-group values of {metric} "
                         "(a metrics.json from an older bnn: run `bnn evaluate` on the run again)")
    return values


def compare(rows_a, rows_b, labels, alpha, paired=False, member_count=None):
    """The table's lines and the number of rows marked. With `paired`, `member_count` is the length of the
    runs' common list of members, of which a row of size es must have floor(member_count / es) groups."""
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
        if paired and member_count is not None and n_a != member_count // size:
            # Groups are members [g es, (g + 1) es) of the list: another count means the list does not
            # describe these groups, and pairing by it would pair the wrong members.
            raise BadMetrics(f"--paired: {method} size {size} has {n_a} groups, but the {member_count} members "
                             f"the files name make {member_count // size}; the table and its list of members "
                             "disagree")
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
        (rows_a, data_a), (rows_b, data_b) = load(args[0]), load(args[1])
        member_count = None
        if paired:
            members_a = members_of(data_a, args[0], labels[0])
            check_same_members(members_a, members_of(data_b, args[1], labels[1]), labels)
            member_count = len(members_a)
        lines, marked = compare(rows_a, rows_b, labels, alpha, paired, member_count)
    except BadMetrics as e:
        print(f"compare_metrics: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 1 if marked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
