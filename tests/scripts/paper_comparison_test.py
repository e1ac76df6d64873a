#!/usr/bin/env python3
"""scripts/paper_comparison.py on metrics.json files written here, with known answers.

    python3 tests/scripts/paper_comparison_test.py   (ctest: PaperComparison.Script)
"""
import json
import math
import os
import subprocess
import shutil
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "paper_comparison.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import student_t  # noqa: E402


def row(method, size, groups, acc, ace, nll, rps):
    # Each metric as (mean, std), as a bnn that did not keep each group's values wrote it: std over n
    # (ddof 0), which the script reads as std sqrt(n / (n - 1)), over n - 1.
    metrics = {"accuracy": acc, "ace": ace, "nll": nll, "rps": rps}
    out = {"method": method, "size": size, "groups": groups}
    out.update({k: {"mean": v[0], "std": v[1]} for k, v in metrics.items()})
    out["ece"] = {"mean": 0.0, "std": 0.0}
    return out


ROWS = [
    # Size 1: Adam and SWA equal to the published means.
    row("adam", 1, 64, (0.9306, 0.002), (0.0090, 0.001), (0.3271, 0.01), (0.0217, 0.001)),
    row("swa", 1, 64, (0.9352, 0.002), (0.0091, 0.001), (0.3412, 0.01), (0.0208, 0.001)),
    # accuracy 0.4 std off; ACE 6.7 std off (0.0068 / (0.001 sqrt(64 / 63))); NLL exact with std 0; RPS off
    # with std 0.
    row("bayes", 1, 64, (0.9380, 0.002), (0.0100, 0.001), (0.1980, 0.0), (0.0180, 0.0)),
    # Size 2: SMS-UBU better on all but ACE.
    row("adam", 2, 32, (0.9400, 0.001), (0.0080, 0.001), (0.2500, 0.01), (0.0190, 0.001)),
    row("swa", 2, 32, (0.9410, 0.001), (0.0070, 0.001), (0.2600, 0.01), (0.0185, 0.001)),
    row("bayes", 2, 32, (0.9420, 0.001), (0.0075, 0.001), (0.1800, 0.01), (0.0170, 0.001)),
    # Size 4 lacks SWA: not compared. Size 32 is past the figure's 16.
    row("adam", 4, 16, (0.9, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    row("bayes", 4, 16, (0.9, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    row("adam", 32, 2, (0.9, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    row("swa", 32, 2, (0.9, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    row("bayes", 32, 2, (0.9, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
]


def valued(method, size, **values):
    # A row as bnn writes it since it keeps each group's values: mean, std (ddof 1) and values per metric.
    out = {"method": method, "size": size, "groups": len(values["accuracy"])}
    for metric, v in values.items():
        mean = sum(v) / len(v)
        out[metric] = {"mean": mean, "std": (sum((x - mean) ** 2 for x in v) / (len(v) - 1)) ** 0.5 if len(v) > 1
                       else None, "values": v}
    return out


# Known answers for the paired standard errors (worked by hand in test_paired_claims).
VALUED_ROWS = [
    valued("adam", 1, accuracy=[0.90, 0.91], nll=[0.30, 0.31], ace=[0.010, 0.011], rps=[0.020, 0.021]),
    valued("swa", 1, accuracy=[0.89, 0.90], nll=[0.31, 0.32], ace=[0.012, 0.013], rps=[0.022, 0.023]),
    valued("bayes", 1, accuracy=[0.91, 0.92], nll=[0.20, 0.22], ace=[0.003, 0.004], rps=[0.018, 0.019]),
    valued("adam", 4, accuracy=[0.90, 0.92, 0.91, 0.93], nll=[0.30, 0.32, 0.31, 0.33],
           ace=[0.010, 0.012, 0.011, 0.013], rps=[0.020, 0.022, 0.021, 0.023]),
    valued("swa", 4, accuracy=[0.89, 0.91, 0.90, 0.92], nll=[0.31, 0.33, 0.32, 0.34],
           ace=[0.011, 0.013, 0.012, 0.014], rps=[0.021, 0.023, 0.022, 0.024]),
    valued("bayes", 4, accuracy=[0.901, 0.9212, 0.9108, 0.931], nll=[0.302, 0.3222, 0.3118, 0.332],
           ace=[0.0116, 0.0110, 0.0126, 0.0120], rps=[0.019, 0.021, 0.020, 0.022]),
    valued("adam", 8, accuracy=[0.95], nll=[0.25], ace=[0.005], rps=[0.015]),
    valued("swa", 8, accuracy=[0.94], nll=[0.26], ace=[0.006], rps=[0.016]),
    valued("bayes", 8, accuracy=[0.96], nll=[0.24], ace=[0.004], rps=[0.014]),
]


# configs/fashion_mnist_paper.yaml as bnn writes a run's config.yaml (yaml-cpp's block style, floats at full
# precision), shortened to the keys the script reads and a few it does not.
PAPER_CONFIG = """data:
  dataset: fashion_mnist
  dir: /usr/share/datasets/fashion-mnist
  train_limit: 0
  test_limit: 0
  batch_size: 200
  standardize: false
  augment_copies:
    - 18
    - 6
model:
  name: fmnist_cnn
  hidden:
    - 256
    - 256
  path: ""
prior:
  precision: 1
  biases: false
adam:
  epochs: 15
  lr: 0.01
swa:
  epochs: 5
  lr: 0.001
sampler:
  name: sms_ubu
  epochs: 40
  burn_in: 10
  thin: 0
  step_size: 0.000125
  rho: 0.1414213562373095
  rho_max: 0.84852813742385702
  friction: 7.0710678118654755
  temperature: 1
  order: auto
  gradient: control_variate
evaluation:
  bn_batches: 20
"""


class PaperComparison(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bnn_paper_comparison")
        self.addCleanup(shutil.rmtree, self.dir)

    def run_script(self, metrics, config=None, record=None, selection=None):
        # config: config.yaml's text; record: bnn.json's settings (what `bnn evaluate --out` writes);
        # selection: uncertainty.json's selection.
        for name, content in (("config.yaml", config), ("bnn.json", record), ("uncertainty.json", selection)):
            path = os.path.join(self.dir, name)
            if content is None:
                if os.path.exists(path):
                    os.remove(path)
                continue
            with open(path, "w") as f:
                if name == "config.yaml":
                    f.write(content)
                elif name == "bnn.json":
                    json.dump({"bnn": "evaluation", "settings": content}, f)
                else:
                    json.dump({"selection": content}, f)
        path = os.path.join(self.dir, "metrics.json")
        with open(path, "w") as f:
            f.write(metrics if isinstance(metrics, str) else json.dumps(metrics))
        out = os.path.join(self.dir, "comparison.md")
        r = subprocess.run([sys.executable, SCRIPT, path, out], capture_output=True, text=True)
        if not os.path.exists(out):
            return r, None
        with open(out) as f:
            return r, f.read()

    def lines_for_rows(self, config=PAPER_CONFIG, **files):
        # The script on ROWS, which it must accept; its output's lines.
        r, text = self.run_script({"ensembles": ROWS}, config, **files)
        self.assertEqual(r.returncode, 0, r.stderr)
        return text.splitlines()

    def test_size_one_rows_and_flags(self):
        lines = self.lines_for_rows()
        self.assertIn("| Adam | accuracy | 0.9306 ± 0.0020 | 0.9306 | +0.0000 | 0.0 | 0.0 |  |", lines)
        # 0.0008 is 0.4 of the std 0.002 sqrt(64 / 63), and 2.2 standard errors of a difference of two
        # 64-run means, 0.002 sqrt(64 / 63) sqrt(2 / 64): within both.
        self.assertIn("| SMS-UBU | accuracy | 0.9380 ± 0.0020 | 0.9372 | +0.0008 | 0.4 | 2.2 |  |", lines)
        self.assertIn("| SMS-UBU | ace | 0.0100 ± 0.0010 | 0.0032 | +0.0068 | 6.7 | 38.2 | explain |", lines)
        self.assertIn("| SMS-UBU | nll | 0.1980 ± 0.0000 | 0.1980 | +0.0000 | 0.0 | 0.0 |  |", lines)
        self.assertIn("| SMS-UBU | rps | 0.0180 ± 0.0000 | 0.0177 | +0.0003 | inf | inf | explain |", lines)
        self.assertIn("2 of 12 differences are larger than our standard deviation; of the others, 0 beyond z = 3.",
                      lines)
        self.assertIn("Ours: mean ± standard deviation over the 64 members. Published: means over the 64 runs of "
                      "the paper's reference code as attributed to it (not in the paper's text; its notebook is "
                      "published without outputs), SMS-UBU's in the Bayesian rows. z: the difference over the "
                      "standard error of a difference of two means, ours over 64 members and theirs over 64 runs, "
                      "their spread taken to be ours. A difference larger than our standard deviation, or beyond "
                      "z = 3, is marked *explain*.", lines)
        # What the notebook does otherwise is said under the table.
        at = lines.index("Where bnn follows the paper's text and the reference notebook differs (each may move the "
                         "published numbers):")
        self.assertEqual(len([l for l in lines[at + 2:at + 6] if l.startswith("- ")]), 3, lines[at:])

    def test_a_difference_within_one_std_but_beyond_the_noise_of_a_mean_is_marked(self):
        # SMS-UBU's accuracy 0.0012 below the published 0.9372 with a std of 0.002 over 64 members: 0.6 std,
        # but 0.0012 / (0.002 sqrt(64 / 63) sqrt(2 / 64)) = 3.4 standard errors.
        rows = [dict(r) for r in ROWS]
        rows[2] = row("bayes", 1, 64, (0.9360, 0.002), (0.0032, 0.001), (0.1980, 0.01), (0.0177, 0.001))
        r, text = self.run_script({"ensembles": rows}, PAPER_CONFIG)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = text.splitlines()
        self.assertIn("| SMS-UBU | accuracy | 0.9360 ± 0.0020 | 0.9372 | -0.0012 | 0.6 | 3.4 | explain |", lines)
        self.assertIn("0 of 12 differences are larger than our standard deviation; of the others, 1 beyond z = 3.",
                      lines)

    def test_the_setting_of_an_evaluation_folder_is_read_from_its_bnn_json(self):
        # `bnn evaluate --out DIR` writes no config.yaml: its bnn.json's settings stand for it, and the
        # burn-in and thinning it applied (uncertainty.json) are checked too.
        sys.path.insert(0, os.path.dirname(SCRIPT))
        import paper_comparison
        settings = paper_comparison.read_setting(os.path.join(os.path.dirname(SCRIPT), "..", "configs",
                                                              "fashion_mnist_paper.yaml"))
        self.assertEqual(self.lines_for_rows(), self.lines_for_rows(None, record=settings))
        self.assertEqual(self.lines_for_rows(), self.lines_for_rows(None, record=settings,
                                                                    selection={"burn_in_epochs": 10, "thin": 1}))
        text = "\n".join(self.lines_for_rows(None, record=settings, selection={"burn_in_epochs": 5, "thin": 2}))
        self.assertIn("it differs in sampler.burn_in 5 (the paper's 10); bnn evaluate --thin 2 (the paper's every "
                      "sample).", text)
        self.assertNotIn("explain", text)
        # The selection overrides a config.yaml's burn-in as well.
        self.assertIn("it differs in sampler.burn_in 20 (the paper's 10).",
                      "\n".join(self.lines_for_rows(selection={"burn_in_epochs": 20, "thin": 1})))

    def test_a_folder_whose_setting_cannot_be_read_is_not_flagged(self):
        lines = self.lines_for_rows(None)
        self.assertIn("This run is not in the paper's setting, so its differences are not marked: it differs in its "
                      "settings, which cannot be read (no config.yaml or bnn.json beside the metrics.json).",
                      "\n".join(lines))
        self.assertFalse([l for l in lines if "explain" in l], lines)

    def test_a_damaged_bnn_json_or_uncertainty_json_is_named(self):
        for files, message in [({"record": ["sampler.name"]}, "bnn.json: cannot read its settings"),
                               ({"record": {"sampler.name": "sms_ubu"}, "selection": "burn_in_epochs"},
                                "uncertainty.json: cannot read its selection")]:
            r, text = self.run_script({"ensembles": ROWS}, None, **files)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(message, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIsNone(text)

    def test_the_bayesian_method_is_named_by_the_runs_sampler(self):
        lines = self.lines_for_rows(PAPER_CONFIG.replace("name: sms_ubu", "name: sghmc"))
        self.assertIn("| SGHMC | ace | 0.0100 ± 0.0010 | 0.0032 | +0.0068 | 6.7 | 38.2 |  |", lines)
        self.assertIn("it differs in sampler.name sghmc (the paper's sms_ubu).", "\n".join(lines))
        self.assertTrue([l for l in lines if l.startswith("SGHMC's margin over the better of Adam and SWA")], lines)
        self.assertFalse([l for l in lines if l.startswith("| SMS-UBU") or l.startswith("SMS-UBU's")], lines)

    def test_a_run_outside_the_papers_setting_is_shown_unflagged(self):
        # configs/fashion_mnist_mlp.yaml's differences, a key the paper sets left out, and a number
        # written at full precision that equals the paper's (0.001) is no difference.
        config = (PAPER_CONFIG.replace("name: fmnist_cnn", "name: mlp").replace("lr: 0.01", "lr: 0.002")
                  .replace("  burn_in: 10\n", "").replace("lr: 0.001", "lr: 0.0010000000000000000208"))
        lines = self.lines_for_rows(config)
        self.assertIn("This run is not in the paper's setting, so its differences are not marked: it differs in "
                      "model.name mlp (the paper's fmnist_cnn); adam.lr 0.002 (the paper's 0.01); sampler.burn_in "
                      "(absent) (the paper's 10).", "\n".join(lines))
        self.assertIn("| SMS-UBU | ace | 0.0100 ± 0.0010 | 0.0032 | +0.0068 | 6.7 | 38.2 |  |", lines)
        self.assertIn("| SMS-UBU | rps | 0.0180 ± 0.0000 | 0.0177 | +0.0003 | inf | inf |  |", lines)
        self.assertFalse([l for l in lines if "explain" in l or "differences are larger" in l], lines)
        self.assertIn("Not in the paper's setting: the differences measure the settings as much as bnn.", lines)
        # The claims are the paper's for any model.
        self.assertIn("2 claim(s) not held over 2 ensemble size(s).", lines)

    def test_comments_quotes_and_autos_are_read_as_yaml_reads_them(self):
        # A section header with a comment, quoted values, a key whose value is only a comment (empty, so
        # absent), and rho_max and friction as `auto` (6 rho and 1 / rho) are all the paper's setting...
        config = (PAPER_CONFIG.replace("sampler:\n", "sampler:  # SMS-UBU\n")
                  .replace("name: fmnist_cnn", "name: 'fmnist_cnn'").replace("name: sms_ubu", 'name: "sms_ubu"')
                  .replace("rho_max: 0.84852813742385702", "rho_max: auto   # 6 rho")
                  .replace("friction: 7.0710678118654755", "friction: auto")
                  .replace("  path: \"\"\n", "  path: # none\n"))
        self.assertEqual(self.lines_for_rows(), self.lines_for_rows(config))
        # A config written by hand without bn_batches has bnn's default, the paper's 20; 50 is not.
        self.assertEqual(self.lines_for_rows(), self.lines_for_rows(PAPER_CONFIG.replace("  bn_batches: 20\n", "")))
        self.assertIn("it differs in evaluation.bn_batches 50 (the paper's 20).",
                      "\n".join(self.lines_for_rows(PAPER_CONFIG.replace("bn_batches: 20", "bn_batches: 50"))))
        # ... and a temperature, a step size and a friction of their own are not, each shown as written
        # to 12 digits.
        config = (PAPER_CONFIG.replace("temperature: 1", "temperature: 0.5")
                  .replace("step_size: 0.000125", "step_size: 0.00012500001")
                  .replace("friction: 7.0710678118654755", "friction: 1"))
        self.assertIn("it differs in sampler.step_size 0.00012500001 (the paper's 0.000125); sampler.friction 1 (the "
                      "paper's 7.07106781187); sampler.temperature 0.5 (the paper's 1).",
                      "\n".join(self.lines_for_rows(config)))

    def test_the_settings_are_those_of_the_configs(self):
        # The script's idea of the paper's setting is configs/fashion_mnist_paper.yaml's, comments and all;
        # the CPU-sized configs/fashion_mnist_mlp.yaml differs in its pixels, model and learning rates.
        sys.path.insert(0, os.path.dirname(SCRIPT))
        import paper_comparison
        configs = os.path.join(os.path.dirname(SCRIPT), "..", "configs")
        self.assertEqual(paper_comparison.setting_differences(os.path.join(configs, "fashion_mnist_paper.yaml")), [])
        self.assertEqual(paper_comparison.setting_differences(os.path.join(configs, "fashion_mnist_mlp.yaml")),
                         ["data.standardize true (the paper's false)", "model.name mlp (the paper's fmnist_cnn)",
                          "adam.lr 0.002 (the paper's 0.01)",
                          "swa.lr 0.0005 (the paper's 0.001)"])

    def test_the_spread_is_over_n_minus_1_whichever_bnn_wrote_the_file(self):
        # The reference code's Tensor.std() divides by n - 1: with the values, from them (a file's "std"
        # is not read); without them (an older bnn's "std", over n), rescaled; none for one group.
        import paper_comparison
        new = valued("bayes", 1, accuracy=[0.90, 0.92, 0.97], nll=[0.3, 0.3, 0.3])
        new["accuracy"]["std"] = 123.0
        new_one = valued("bayes", 64, accuracy=[0.93], nll=[0.3])  # "std": null, as bnn writes one group's
        old = row("adam", 4, 3, (0.93, 0.02), (0.01, 0.0), (0.3, 0.01), (0.02, 0.001))
        old_one = row("swa", 64, 1, (0.93, 0.0), (0.01, 0.0), (0.3, 0.0), (0.02, 0.0))
        rows = paper_comparison.ensembles_in({"ensembles": [new, new_one, old, old_one]}, "m.json",
                                             ["accuracy", "nll"])
        # 0.90, 0.92, 0.97: mean 0.93, squares 0.0009 + 0.0001 + 0.0016 over 2.
        self.assertAlmostEqual(rows[("bayes", 1)][1]["accuracy"][1], math.sqrt(0.0026 / 2), places=15)
        self.assertEqual(rows[("bayes", 1)][1]["nll"][1], 0.0)
        self.assertIsNone(rows[("bayes", 64)][1]["accuracy"][1])
        self.assertAlmostEqual(rows[("adam", 4)][1]["accuracy"][1], 0.02 * math.sqrt(1.5), places=15)
        self.assertIsNone(rows[("swa", 64)][1]["accuracy"][1])
        self.assertEqual(rows[("swa", 64)][1]["accuracy"][0], 0.93)

    def test_claims_size_by_size(self):
        lines = self.lines_for_rows()
        self.assertIn("| 1 | 64 | +0.0028 | +0.1291 | -0.0010 (not held) | +0.0028 | 3 of 4 |", lines)
        self.assertIn("| 2 | 32 | +0.0010 | +0.0700 | -0.0005 (not held) | +0.0015 | 3 of 4 |", lines)
        self.assertFalse([l for l in lines if l.startswith("| 4 |") or l.startswith("| 32 |")], lines)
        self.assertIn("2 claim(s) not held over 2 ensemble size(s).", lines)

    def test_paired_claims(self):
        r, text = self.run_script({"ensembles": VALUED_ROWS})
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = text.splitlines()
        # Size 1, two groups: the NLL differences (better minus ours) are 0.10 and 0.09, so the margin is
        # 0.095 with standard error sqrt(0.005^2 * 2 / 1) / sqrt(2) = 0.005; the others differ by the same
        # amount in both groups (error 0).
        self.assertIn("| 1 | 2 | +0.0100 ± 0.0000 | +0.0950 ± 0.0050 | +0.0070 ± 0.0000 | +0.0020 ± 0.0000 | 4 of 4 |",
                      lines)
        # Size 4: accuracy against Adam, differences 0.001, 0.0012, 0.0008, 0.001: standard deviation (ddof 1)
        # sqrt(8e-8 / 3) = 1.63e-4, error 8.2e-5. NLL 0.002 worse in every group with the same spread: not
        # held, 24 errors off. ACE 0.0003 worse on average, differences -0.0016, 0.001, -0.0016, 0.001:
        # error 7.5e-4, so within the noise. RPS 0.001 better in every group.
        # The paired t-test on 3 degrees of freedom: NLL t = 0.002 / 8.2e-5 = 24.5, p = 1.5e-4, below
        # 0.01 / 8 (two sizes of 2 and 4 groups, four claims each); ACE t = 0.40, p = 0.72.
        p_nll = student_t.t_two_sided(0.002 / (math.sqrt(8e-8 / 3) / 2), 3.0)
        p_ace = student_t.t_two_sided(0.0003 / (math.sqrt(4 * 0.0013 ** 2 / 3) / 2), 3.0)
        self.assertAlmostEqual(p_nll, 1.49e-4, delta=1e-6)
        self.assertAlmostEqual(p_ace, 0.716, delta=1e-3)
        self.assertIn(f"| 4 | 4 | +0.0010 ± 0.0001 | -0.0020 ± 0.0001 (not held, p = {p_nll:.2g}, beyond noise) | "
                      f"-0.0003 ± 0.0008 (not held, p = {p_ace:.2g}) | +0.0010 ± 0.0000 | 2 of 4 |", lines)
        # One group: no error, no test.
        self.assertIn("| 8 | 1 | +0.0100 | +0.0100 | +0.0010 | +0.0010 | 4 of 4 |", lines)
        self.assertIn("2 claim(s) not held over 3 ensemble size(s), 1 of them beyond noise (p below 0.01 / 8 = "
                      "0.0013).", lines)
        at = [i for i, l in enumerate(lines) if l.startswith("± is the margin's standard error over the groups, paired")]
        self.assertEqual(len(at), 1, lines)
        self.assertEqual((lines[at[0] - 1], lines[at[0] + 1]), ("", ""))  # a paragraph of its own
        # All held: no count of those beyond noise.
        held = [r for r in VALUED_ROWS if r["size"] != 4]
        r, text = self.run_script({"ensembles": held})
        self.assertIn("0 claim(s) not held over 2 ensemble size(s).", text.splitlines())
        # A file without the groups' values (an older bnn's) says so and gives the margins alone.
        self.assertIn("This metrics.json has no per-group values (written by an older bnn), so the margins come "
                      "without standard errors; `bnn evaluate` of the run writes them.", self.lines_for_rows())

    def test_paired_error_against_a_direct_computation(self):
        self.assertIsNone(student_t.paired_standard_error([0.3]))
        self.assertAlmostEqual(student_t.paired_standard_error([1.0, 2.0, 3.0, 6.0]),
                               (14.0 / 3.0) ** 0.5 / 2.0, places=15)  # mean 3, squares 4 + 1 + 0 + 9

    def test_a_claim_missed_alike_in_every_group_is_not_beyond_noise_by_rounding(self):
        # SMS-UBU's RPS at size 1 worse than Adam's by 0.001 in both groups: the differences agree up to
        # rounding, which must not pass for a spread (t would be huge); the sign test on two groups gives
        # p = 0.5, and a one-group size has no test at all.
        rows = [dict(r) for r in VALUED_ROWS]
        rows[2] = valued("bayes", 1, accuracy=[0.91, 0.92], nll=[0.20, 0.22], ace=[0.003, 0.004],
                         rps=[0.021, 0.022])
        rows[8] = valued("bayes", 8, accuracy=[0.94], nll=[0.24], ace=[0.004], rps=[0.014])
        r, text = self.run_script({"ensembles": rows})
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = text.splitlines()
        self.assertIn("| 1 | 2 | +0.0100 ± 0.0000 | +0.0950 ± 0.0050 | +0.0070 ± 0.0000 | -0.0010 ± 0.0000 (not "
                      "held, p = 0.5) | 3 of 4 |", lines)
        self.assertIn("| 8 | 1 | -0.0100 (not held) | +0.0100 | +0.0010 | +0.0010 | 3 of 4 |", lines)

    def test_bad_input_is_one_line_and_writes_nothing(self):
        cases = [
            ("{not json", "cannot read it as JSON"),
            ({"ensembles": [r for r in ROWS if r["method"] != "bayes"]},
             "no 'bayes' row of ensemble size 1 (is it a bnn run's metrics.json?)"),
            ({"ensembles": [{"method": "bayes", "size": 1}]}, "an ensemble row lacks or garbles 'accuracy'"),
            ({"ensembles": VALUED_ROWS[:2] + [dict(VALUED_ROWS[2], groups=3)]},
             "bayes size 1: the 2 values of accuracy do not belong to its 3 groups of mean 0.915"),
            ({"ensembles": VALUED_ROWS[:2] + [dict(VALUED_ROWS[2], nll={"mean": 0.3, "std": 0, "values": [0.2, 0.22]})]},
             "bayes size 1: the 2 values of nll do not belong to its 2 groups of mean 0.3"),
            ({"ensembles": VALUED_ROWS[:2] + [dict(VALUED_ROWS[2], ace={"mean": 0.3, "std": 0, "values": 0.3})]},
             "an ensemble row lacks or garbles"),
        ]
        for metrics, message in cases:
            r, text = self.run_script(metrics)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(message, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIsNone(text)

    def test_usage(self):
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: scripts/paper_comparison.py METRICS_JSON OUT_MD", r.stderr)


if __name__ == "__main__":
    unittest.main()
