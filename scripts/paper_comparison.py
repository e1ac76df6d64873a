#!/usr/bin/env python3
"""Our Fashion-MNIST table beside the SMS-UBU paper's, from a run's metrics.json.

    scripts/paper_comparison.py METRICS_JSON OUT_MD

Two parts, written to OUT_MD (Markdown):

1. Ensemble size 1 against the numbers published with the paper's reference
   code (64 runs of the CNN, 15 Adam + 5 SWA + 40 SMS-UBU epochs). A
   difference counts as larger than the spread when it exceeds our standard
   deviation across the 64 members at size 1, which is the paper's own
   measure ("standard deviations were computed based on the independent
   runs"); the published numbers come without theirs. Such rows are marked
   "explain" and need a sentence in the results' README.
2. The paper's claims for Figure 4 at every ensemble size up to 16: SMS-UBU
   ensembles are at least as accurate as Adam and SWA ensembles of the same
   size, with lower NLL, ACE and RPS. The figure's numbers are not in the
   paper's text, so its curves are compared through these claims, size by
   size, with the margins. Where metrics.json holds each group's values
   (bnn writes them), each margin comes with its paired standard error over
   the groups (every method's group g holds the same members, so the
   difference is taken group by group), and a missed claim with the paired
   t-test's p-value, marked beyond noise below 0.01 / (claims tested).

Part 1's flags mean something only for a run in the paper's setting. When a
config.yaml lies beside METRICS_JSON (bnn writes one into every run folder,
and paper-run.sh copies it into the results), its settings are checked
against the paper's (PAPER_SETTING below); a run that differs, say the mlp
of configs/fashion_mnist_mlp.yaml, gets its numbers beside the published
ones without flags, under a line naming each difference. Part 2's claims
are the paper's for any model and are always checked.

paper-run.sh runs this on the finished run. Standard library only.
"""
import json
import math
import os
import re
import sys

from student_t import paired_p, paired_standard_error, sample_std

# Ensemble size 1, the paper's reference code, 64 runs (mean over the runs).
PUBLISHED = {
    "adam": {"accuracy": 0.9306, "ace": 0.0090, "nll": 0.3271, "rps": 0.0217},
    "swa": {"accuracy": 0.9352, "ace": 0.0091, "nll": 0.3412, "rps": 0.0208},
    "bayes": {"accuracy": 0.9372, "ace": 0.0032, "nll": 0.1980, "rps": 0.0177},
}
METHOD_NAMES = {"adam": "Adam", "swa": "SWA", "bayes": "SMS-UBU"}
METRICS = ["accuracy", "ace", "nll", "rps"]
# For accuracy larger is better; for the others smaller.
HIGHER_IS_BETTER = {"accuracy": True, "ace": False, "nll": False, "rps": False}
MAX_CLAIM_SIZE = 16
METRICS_IN_CLAIMS = ["accuracy", "nll", "ace", "rps"]  # the table's column order
CLAIMS_ALPHA = 0.01  # a missed claim is beyond noise where its paired p < CLAIMS_ALPHA / (claims tested)
# The settings behind the published numbers, as bnn's config.yaml writes them
# (configs/fashion_mnist_paper.yaml): section.key -> value, or a tuple of the
# values that mean the same.
RHO = 50 ** -0.5
PAPER_SETTING = {
    "data.dataset": "fashion_mnist",
    "data.train_limit": "0",
    "data.test_limit": "0",
    "data.batch_size": "200",
    "data.standardize": "false",  # the reference notebook's ToTensor() alone: p / 255
    "model.name": "fmnist_cnn",
    "prior.precision": "1",
    "prior.biases": "false",
    "adam.epochs": "15",
    "adam.lr": "0.01",
    "swa.epochs": "5",
    "swa.lr": "0.001",
    "sampler.name": "sms_ubu",
    "sampler.epochs": "40",
    "sampler.burn_in": "10",
    "sampler.thin": "0",
    "sampler.step_size": "1.25e-4",
    "sampler.rho": repr(RHO),
    "sampler.rho_max": (repr(6 * RHO), "auto"),
    "sampler.friction": (repr(1 / RHO), "auto"),
    "sampler.temperature": "1",
    "sampler.order": ("auto", "sms"),
    "sampler.gradient": "control_variate",
}
# bnn's defaults (bnn run --help) for the keys above that a config written by hand leaves out; the
# config.yaml bnn writes into a run folder has every key.
DEFAULTS = {"data.train_limit": "0", "data.test_limit": "0", "data.standardize": "true", "prior.biases": "false",
            "sampler.temperature": "1", "sampler.order": "auto"}


class BadMetrics(Exception):
    pass


def read_metrics_json(path):
    """The parsed file; BadMetrics if it cannot be read as JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BadMetrics(f"{path}: cannot read it as JSON ({e})")


def ensembles_in(data, path, metrics):
    """(method, size) -> (groups, {metric: (mean, std)}, {metric: [each group's value]}) from a bnn run's
    metrics.json, parsed (read_metrics_json); BadMetrics names what is wrong, with `path`
    (scripts/compare_metrics.py reads tables with it too). The groups' values are there in files bnn wrote
    since they carry them ("values", group g of size es being members [g es, (g + 1) es) for every method);
    the third dict is empty for an older file.

    std is the sample standard deviation across the groups (ddof 1), None for a single group, whichever bnn
    wrote the file: taken from the values where the file has them, and otherwise from its "std", which
    bnn wrote over n (ddof 0) before it wrote the values."""
    rows = {}
    for row in data.get("ensembles", []) if isinstance(data, dict) else []:
        try:
            key = (row["method"], int(row["size"]))
            means = {m: float(row[m]["mean"]) for m in metrics}
            groups = int(row["groups"])
            values = {m: [float(v) for v in row[m]["values"]] for m in metrics if "values" in row[m]}
            summaries = {}
            for m in metrics:
                if m in values:
                    std = sample_std(values[m])
                elif groups < 2:
                    std = None
                else:
                    std = float(row[m]["std"]) * math.sqrt(groups / (groups - 1))
                summaries[m] = (means[m], std)
        except (KeyError, TypeError, ValueError) as e:
            raise BadMetrics(f"{path}: an ensemble row lacks or garbles {e}: {row}")
        for m, group_values in values.items():
            mean = summaries[m][0]
            if len(group_values) != groups or not math.isclose(
                    sum(group_values) / max(groups, 1), mean, rel_tol=1e-9, abs_tol=1e-12):
                raise BadMetrics(f"{path}: {row['method']} size {key[1]}: the {len(group_values)} values of {m} "
                                 f"do not belong to its {groups} groups of mean {mean!r}")
        rows[key] = (groups, summaries, values)
    return rows


def load_rows(path):
    rows = {key: {**summaries, "groups": groups, "values": values}
            for key, (groups, summaries, values) in ensembles_in(read_metrics_json(path), path, METRICS).items()}
    for method in PUBLISHED:
        if (method, 1) not in rows:
            raise BadMetrics(f"{path}: no '{method}' row of ensemble size 1 (is it a bnn run's metrics.json?)")
    return rows


def read_setting(path):
    """section.key -> value for the scalar keys of a config.yaml in bnn's block style ("section:", then
    "  key: value" lines, as bnn writes it and configs/ holds it, comments allowed); list items and nested
    blocks are skipped, and a value in quotes loses them."""
    setting, section = {}, None
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise BadMetrics(f"{path}: cannot read it ({e})")
    for line in lines:
        line = re.sub(r"(^|\s)#.*", "", line).rstrip()  # a comment, in a config written by hand
        top = re.fullmatch(r"([A-Za-z_]\w*):", line)
        if top:
            section = top.group(1)
            continue
        key = re.fullmatch(r"  ([A-Za-z_]\w*): *(.*)", line)
        if key and section and key.group(2):
            value = key.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            setting[f"{section}.{key.group(1)}"] = value
    return setting


def setting_differences(config_path):
    """The paper's settings that the run's config.yaml differs in, as text; [] without a config.yaml."""
    if not os.path.exists(config_path):
        return []
    setting = {**DEFAULTS, **read_setting(config_path)}
    differences = []
    for key, accepted in PAPER_SETTING.items():
        accepted = accepted if isinstance(accepted, tuple) else (accepted,)
        if not any(same_value(setting.get(key), value) for value in accepted):
            differences.append(f"{key} {shown(setting.get(key, '(absent)'))} (the paper's {shown(accepted[0])})")
    return differences


def shown(value):
    # A number to 12 digits: yaml-cpp's 0.00050000000000000001 is 0.0005, and two numbers that differ
    # by more than same_value's tolerance never print alike.
    try:
        return f"{float(value):.12g}"
    except ValueError:
        return value


def same_value(ours, paper):
    # Numbers as numbers (yaml-cpp writes 0.01 as 0.01000000000000000021), the rest as text.
    if ours is None:
        return False
    try:
        return math.isclose(float(ours), float(paper), rel_tol=1e-9)
    except ValueError:
        return ours == paper


def size_one_table(rows, differences):
    comparable = not differences
    lines = [
        "## Ensemble size 1 against the published numbers",
        "",
        f"Ours: mean ± standard deviation over the {rows[('bayes', 1)]['groups']} members. Published: the paper's "
        "reference code, 64 runs, means only. "
        + ("A difference larger than our standard deviation is marked *explain*." if comparable else
           "This run is not in the paper's setting, so its differences are not marked: it differs in "
           + "; ".join(differences) + "."),
        "",
        "| method | metric | ours | published | difference | difference / our std | |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    to_explain = 0
    for method in PUBLISHED:
        for metric in METRICS:
            mean, std = rows[(method, 1)][metric]
            published = PUBLISHED[method][metric]
            diff = mean - published
            if std is None:  # one member: no spread to measure the difference by
                ratio, ratio_text, std_text = None, "-", "-"
            else:
                ratio = abs(diff) / std if std > 0 else math.inf if diff != 0 else 0.0
                ratio_text, std_text = "inf" if math.isinf(ratio) else f"{ratio:.1f}", f"{std:.4f}"
            flag = "explain" if ratio is not None and ratio > 1 and comparable else ""
            to_explain += flag != ""
            lines.append(f"| {METHOD_NAMES[method]} | {metric} | {mean:.4f} ± {std_text} | {published:.4f} | "
                         f"{diff:+.4f} | {ratio_text} | {flag} |")
    if comparable:
        lines += ["", f"{to_explain} of {len(PUBLISHED) * len(METRICS)} differences are larger than our standard "
                  "deviation.", ""]
    else:
        lines += ["", "Not in the paper's setting: the differences measure the settings as much as bnn.", ""]
    return lines


def claims_table(rows):
    sizes = sorted(s for (m, s) in rows if m == "bayes" and s <= MAX_CLAIM_SIZE
                   and ("adam", s) in rows and ("swa", s) in rows)
    paired = all(metric in rows[(m, size)]["values"] for size in sizes for m in PUBLISHED for metric in METRICS)
    # Claims with a paired test: those at sizes of two groups or more.
    tested = sum(len(METRICS_IN_CLAIMS) for size in sizes if rows[("bayes", size)]["groups"] >= 2) if paired else 0
    bound = CLAIMS_ALPHA / tested if tested else 0.0
    lines = [
        "## The paper's claims for Figure 4, size by size",
        "",
        "SMS-UBU's margin over the better of Adam and SWA at the same ensemble size (positive: SMS-UBU better), "
        "and whether the claim holds: accuracy at least as high, NLL, ACE and RPS lower.",
        "",
    ]
    if paired:
        lines += [
            "± is the margin's standard error over the groups, paired: each group's SMS-UBU ensemble against "
            "the same members' Adam or SWA ensemble, so what the members share (their initialisation, x*, "
            "their batches) cancels. A claim not held comes with the p-value of the paired t-test (n - 1 "
            "degrees of freedom for n groups; the exact sign test where every group differs alike) that the "
            f"margin is zero, and is marked *beyond noise* where p is below {CLAIMS_ALPHA:g} / {tested} (the "
            "claims tested, Bonferroni); the others may be the groups' luck. A size with one group has no "
            "standard error and no test.",
            "",
        ]
    else:
        lines += [
            "This metrics.json has no per-group values (written by an older bnn), so the margins come without "
            "standard errors; `bnn evaluate` of the run writes them.",
            "",
        ]
    lines += ["| size | groups | accuracy | NLL | ACE | RPS | claims held |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    failures = beyond = 0
    for size in sizes:
        cells, held = [], 0
        for metric in METRICS_IN_CLAIMS:
            sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
            # The better of Adam and SWA by its mean, as the figure shows it.
            better = max(("adam", "swa"), key=lambda m: sign * rows[(m, size)][metric][0])
            margin = sign * (rows[("bayes", size)][metric][0] - rows[(better, size)][metric][0])
            ok = margin >= 0 if HIGHER_IS_BETTER[metric] else margin > 0
            error = p = None
            if paired:
                ours, theirs = rows[("bayes", size)]["values"][metric], rows[(better, size)]["values"][metric]
                error = paired_standard_error([sign * (a - b) for a, b in zip(ours, theirs)])
                p = paired_p(ours, theirs)
            cell = f"{margin:+.4f}" + ("" if error is None else f" ± {error:.4f}")
            if not ok:
                far = p is not None and p < bound
                beyond += far
                cell += " (not held" + ("" if p is None else f", p = {p:.2g}") + (", beyond noise)" if far else ")")
            held += ok
            cells.append(cell)
        failures += len(METRICS_IN_CLAIMS) - held
        lines.append(f"| {size} | {rows[('bayes', size)]['groups']} | " + " | ".join(cells)
                     + f" | {held} of {len(METRICS_IN_CLAIMS)} |")
    summary = f"{failures} claim(s) not held over {len(sizes)} ensemble size(s)"
    if paired and failures:
        summary += f", {beyond} of them beyond noise (p below {CLAIMS_ALPHA:g} / {tested} = {bound:.2g})"
    lines += ["", summary + ".", ""]
    return lines


def main(argv):
    if len(argv) != 3:
        print("usage: scripts/paper_comparison.py METRICS_JSON OUT_MD", file=sys.stderr)
        return 2
    try:
        rows = load_rows(argv[1])
        differences = setting_differences(os.path.join(os.path.dirname(os.path.abspath(argv[1])), "config.yaml"))
    except BadMetrics as e:
        print(f"paper_comparison: {e}", file=sys.stderr)
        return 2
    text = "\n".join(["# bnn's Fashion-MNIST table beside the SMS-UBU paper's", ""] + size_one_table(rows, differences)
                     + claims_table(rows))
    tmp = f"{argv[2]}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
