#!/usr/bin/env python3
"""Our Fashion-MNIST table beside the SMS-UBU paper's, from a run's metrics.json.

    scripts/paper_comparison.py METRICS_JSON OUT_MD

Two parts, written to OUT_MD (Markdown):

1. Ensemble size 1 against the numbers attributed to the paper's reference
   code (64 runs of the CNN, 15 Adam + 5 SWA + 40 SMS-UBU epochs; they are
   not in the paper's text, and the reference notebook is published without
   its outputs). A difference is marked "explain", and needs a sentence in
   the results' README, where it exceeds our standard deviation across the
   members at size 1, which is the paper's own measure ("standard
   deviations were computed based on the independent runs"; the published
   numbers come without theirs), or where it lies beyond Z_BOUND standard
   errors of the difference of two means (ours over our members, theirs
   over 64 runs, their spread taken to be ours): a systematic difference
   smaller than one member's spread is still far beyond the noise of a
   64-run mean.
2. The paper's claims for Figure 4 at every ensemble size up to 16: SMS-UBU
   ensembles are at least as accurate as Adam and SWA ensembles of the same
   size, with lower NLL, ACE and RPS. The figure's numbers are not in the
   paper's text, so its curves are compared through these claims, size by
   size, with the margins. Where metrics.json holds each group's values
   (bnn writes them), each margin comes with its paired standard error over
   the groups (every method's group g holds the same members, so the
   difference is taken group by group), and a missed claim with the paired
   t-test's p-value, marked beyond noise below 0.01 / (claims tested).

Part 1's flags mean something only for a run in the paper's setting. The
run's settings are read from the config.yaml beside METRICS_JSON (bnn
writes one into every run folder, and paper-run.sh copies it into the
results), else from the bnn.json beside it (`bnn evaluate --out DIR`
writes its settings there), with the burn-in and thinning the evaluation
applied (uncertainty.json, where it is there), and checked against the
paper's (PAPER_SETTING below). A run that differs, say the mlp of
configs/fashion_mnist_mlp.yaml, or whose settings cannot be read, gets its
numbers beside the published ones without flags, under a line naming each
difference. Part 2's claims are the paper's for any model and are always
checked. Both parts name the Bayesian method by the run's sampler.

paper-run.sh runs this on the finished run. Standard library only.
"""
import json
import math
import os
import re
import sys

from student_t import paired_p, paired_standard_error, sample_std

# Ensemble size 1, the paper's reference code, 64 runs (mean over the runs), as attributed to it: they are
# not printed in the paper's text, and its notebook is published without outputs, so they are not checked
# against a source here.
PUBLISHED = {
    "adam": {"accuracy": 0.9306, "ace": 0.0090, "nll": 0.3271, "rps": 0.0217},
    "swa": {"accuracy": 0.9352, "ace": 0.0091, "nll": 0.3412, "rps": 0.0208},
    "bayes": {"accuracy": 0.9372, "ace": 0.0032, "nll": 0.1980, "rps": 0.0177},
}
METHOD_NAMES = {"adam": "Adam", "swa": "SWA", "bayes": "SMS-UBU"}
# The Bayesian method's name by the run's sampler (`bnn samplers`); others are named as bnn names them.
SAMPLER_NAMES = {"sms_ubu": "SMS-UBU", "sg_ubu": "SG-UBU", "ubu_rr": "SG-UBU-RR", "sms_baoab": "SMS-BAOAB",
                 "sg_baoab": "SG-BAOAB", "baoab_rr": "BAOAB-RR", "sghmc": "SGHMC", "sg_em": "SG-EM",
                 "em_rr": "EM-RR", "sms_em": "SMS-EM", "csghmc": "cSGHMC", "sgld": "SGLD", "sgnht": "SGNHT",
                 "obabo": "OBABO", "nogin": "NOGIN"}
REFERENCE_RUNS = 64
Z_BOUND = 3.0  # standard errors of the difference of the two means beyond which a difference is marked
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
    "evaluation.bn_batches": "20",
}
# bnn's defaults (bnn run --help) for the keys above that a config written by hand leaves out; the
# config.yaml bnn writes into a run folder has every key.
DEFAULTS = {"data.train_limit": "0", "data.test_limit": "0", "data.standardize": "true", "prior.biases": "false",
            "sampler.temperature": "1", "sampler.order": "auto", "evaluation.bn_batches": "20"}
# Where bnn follows the paper's text and the reference notebook does otherwise (read in its code): they
# shift the published numbers, so each is said beside the table.
REFERENCE_CODE_DIFFERENCES = [
    "The notebook's 15th Adam epoch already runs with the fresh Adam of its SWA phase, at 1e-3, and its Adam "
    "column is taken after that epoch; bnn's Adam decays linearly to 0 over all 15 epochs.",
    "The notebook draws its Adam and SWA minibatches uniformly with replacement; bnn visits every batch once "
    "per epoch, in a fresh random order.",
    "The notebook recalibrates BatchNorm on 50 batches (10,000 images); bnn on `evaluation.bn_batches` = 20, "
    "as the paper's text says (`--set evaluation.bn_batches=50` matches the notebook).",
]


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
    """The paper's settings that a config.yaml differs in, as text."""
    return differences_from({**DEFAULTS, **read_setting(config_path)})


def run_setting(metrics_path):
    """section.key -> value for the run behind METRICS_JSON (module docstring), and the file it came from;
    (None, None) where neither config.yaml nor bnn.json's settings lie beside it. The evaluation's burn-in
    replaces sampler.burn_in, and a thinning other than every sample is "bnn evaluate --thin"."""
    folder = os.path.dirname(os.path.abspath(metrics_path))
    config, record = os.path.join(folder, "config.yaml"), os.path.join(folder, "bnn.json")
    if os.path.exists(config):
        setting, source = {**DEFAULTS, **read_setting(config)}, "config.yaml"
    elif os.path.exists(record):
        try:
            with open(record) as f:
                settings = json.load(f)["settings"]
            setting = {**DEFAULTS, **{str(k): str(v) for k, v in settings.items()}}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise BadMetrics(f"{record}: cannot read its settings ({e})")
        source = "bnn.json"
    else:
        return None, None
    selection_file = os.path.join(folder, "uncertainty.json")
    if os.path.exists(selection_file):
        try:
            with open(selection_file) as f:
                selection = json.load(f)["selection"]
            burn_in, thin = selection.get("burn_in_epochs"), selection.get("thin", 1)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise BadMetrics(f"{selection_file}: cannot read its selection ({e})")
        if burn_in is not None:
            setting["sampler.burn_in"] = str(burn_in)
        if thin != 1:
            setting["bnn evaluate --thin"] = str(thin)
    return setting, source


def differences_from(setting):
    """The paper's settings that `setting` (section.key -> value) differs in, as text."""
    differences = []
    for key, accepted in PAPER_SETTING.items():
        accepted = accepted if isinstance(accepted, tuple) else (accepted,)
        if not any(same_value(setting.get(key), value) for value in accepted):
            differences.append(f"{key} {shown(setting.get(key, '(absent)'))} (the paper's {shown(accepted[0])})")
    if "bnn evaluate --thin" in setting:
        differences.append(f"bnn evaluate --thin {setting['bnn evaluate --thin']} (the paper's every sample)")
    return differences


def run_differences(metrics_path):
    """(the differences from the paper's setting, as text; the name of the run's Bayesian method)."""
    setting, source = run_setting(metrics_path)
    if setting is None:
        return ["its settings, which cannot be read (no config.yaml or bnn.json beside the metrics.json)"], \
            METHOD_NAMES["bayes"]
    sampler = setting.get("sampler.name", "sms_ubu")
    return differences_from(setting), SAMPLER_NAMES.get(sampler, sampler)


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


def size_one_table(rows, differences, bayes_name):
    comparable = not differences
    members = rows[("bayes", 1)]["groups"]
    names = {**METHOD_NAMES, "bayes": bayes_name}
    lines = [
        "## Ensemble size 1 against the published numbers",
        "",
        f"Ours: mean ± standard deviation over the {members} members. Published: means over the "
        f"{REFERENCE_RUNS} runs of the paper's reference code as attributed to it (not in the paper's text; "
        "its notebook is published without outputs), "
        "SMS-UBU's in the Bayesian rows. z: the difference over the standard error of a difference of two "
        f"means, ours over {members} members and theirs over {REFERENCE_RUNS} runs, their spread taken to be "
        "ours. "
        + (f"A difference larger than our standard deviation, or beyond z = {Z_BOUND:g}, is marked *explain*."
           if comparable else
           "This run is not in the paper's setting, so its differences are not marked: it differs in "
           + "; ".join(differences) + "."),
        "",
        "| method | metric | ours | published | difference | difference / our std | z | |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    beyond_std = beyond_z = 0
    for method in PUBLISHED:
        for metric in METRICS:
            mean, std = rows[(method, 1)][metric]
            published = PUBLISHED[method][metric]
            diff = mean - published
            if std is None:  # one member: no spread to measure the difference by
                ratio = z = None
                ratio_text = z_text = std_text = "-"
            else:
                error = std * math.sqrt(1 / members + 1 / REFERENCE_RUNS)
                ratio = abs(diff) / std if std > 0 else math.inf if diff != 0 else 0.0
                z = abs(diff) / error if error > 0 else math.inf if diff != 0 else 0.0
                ratio_text, std_text = "inf" if math.isinf(ratio) else f"{ratio:.1f}", f"{std:.4f}"
                z_text = "inf" if math.isinf(z) else f"{z:.1f}"
            flag = ""
            if comparable and ratio is not None and (ratio > 1 or z > Z_BOUND):
                flag = "explain"
                beyond_std += ratio > 1
                beyond_z += ratio <= 1
            lines.append(f"| {names[method]} | {metric} | {mean:.4f} ± {std_text} | {published:.4f} | "
                         f"{diff:+.4f} | {ratio_text} | {z_text} | {flag} |")
    if comparable:
        lines += ["", f"{beyond_std} of {len(PUBLISHED) * len(METRICS)} differences are larger than our standard "
                  f"deviation; of the others, {beyond_z} beyond z = {Z_BOUND:g}.", ""]
    else:
        lines += ["", "Not in the paper's setting: the differences measure the settings as much as bnn.", ""]
    lines += ["Where bnn follows the paper's text and the reference notebook differs (each may move the "
              "published numbers):", ""] + [f"- {d}" for d in REFERENCE_CODE_DIFFERENCES] + [""]
    return lines


def claims_table(rows, bayes_name):
    sizes = sorted(s for (m, s) in rows if m == "bayes" and s <= MAX_CLAIM_SIZE
                   and ("adam", s) in rows and ("swa", s) in rows)
    paired = all(metric in rows[(m, size)]["values"] for size in sizes for m in PUBLISHED for metric in METRICS)
    # Claims with a paired test: those at sizes of two groups or more.
    tested = sum(len(METRICS_IN_CLAIMS) for size in sizes if rows[("bayes", size)]["groups"] >= 2) if paired else 0
    bound = CLAIMS_ALPHA / tested if tested else 0.0
    lines = [
        "## The paper's claims for Figure 4, size by size",
        "",
        f"{bayes_name}'s margin over the better of Adam and SWA at the same ensemble size (positive: "
        f"{bayes_name} better), "
        "and whether the claim holds: accuracy at least as high, NLL, ACE and RPS lower.",
        "",
    ]
    if paired:
        lines += [
            f"± is the margin's standard error over the groups, paired: each group's {bayes_name} ensemble against "
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
    if paired and failures and tested:
        summary += f", {beyond} of them beyond noise (p below {CLAIMS_ALPHA:g} / {tested} = {bound:.2g})"
    elif paired and failures:
        summary += " (no size has two groups or more: no test)"
    lines += ["", summary + ".", ""]
    return lines


def main(argv):
    if len(argv) != 3:
        print("usage: scripts/paper_comparison.py METRICS_JSON OUT_MD", file=sys.stderr)
        return 2
    try:
        rows = load_rows(argv[1])
        differences, bayes_name = run_differences(argv[1])
    except BadMetrics as e:
        print(f"paper_comparison: {e}", file=sys.stderr)
        return 2
    text = "\n".join(["# bnn's Fashion-MNIST table beside the SMS-UBU paper's", ""]
                     + size_one_table(rows, differences, bayes_name) + claims_table(rows, bayes_name))
    tmp = f"{argv[2]}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
