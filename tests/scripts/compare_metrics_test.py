#!/usr/bin/env python3
"""scripts/compare_metrics.py on metrics.json files written here, with known answers.

    python3 tests/scripts/compare_metrics_test.py   (ctest: CompareMetrics.Script)
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "compare_metrics.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import compare_metrics  # noqa: E402

METRICS = ["accuracy", "nll", "ace", "rps", "ece", "brier"]
MEMBERS = [f"member_{i:03d}" for i in range(4)]
SIXTEEN = [f"member_{i:03d}" for i in range(16)]


def row(method, size, groups, mean, std, **overrides):
    # Every metric at (mean, std) but those overridden with their own (mean, std).
    out = {"method": method, "size": size, "groups": groups, "entropy": {"mean": 0.2, "std": 0.0}}
    for m in METRICS:
        value = overrides.get(m, (mean, std))
        out[m] = {"mean": value[0], "std": value[1]}
    return out


class StudentT(unittest.TestCase):
    def test_known_tail_probabilities(self):
        # Two-sided critical values from the t table; df = 1 is the Cauchy distribution, whose tail is
        # 1 - 2 atan(t) / pi; a very large df is the normal distribution.
        self.assertAlmostEqual(compare_metrics.t_two_sided(2.228138852, 10), 0.05, places=9)
        self.assertAlmostEqual(compare_metrics.t_two_sided(5.840909309, 3), 0.01, places=9)
        self.assertAlmostEqual(compare_metrics.t_two_sided(12.70620474, 1), 0.05, places=9)
        for t in (0.3, 1.0, 7.0):
            self.assertAlmostEqual(compare_metrics.t_two_sided(t, 1), 1 - 2 * math.atan(t) / math.pi, places=12)
        self.assertAlmostEqual(compare_metrics.t_two_sided(3.0, 1e9), math.erfc(3 / math.sqrt(2)), places=8)
        self.assertEqual(compare_metrics.t_two_sided(0.0, 4), 1.0)

    def test_welch(self):
        # n = 5 groups each, std (ddof 1) 0.01 sqrt(5): standard errors 0.01, t = 0.05 / sqrt(2e-4), df = 8.
        s = 0.01 * math.sqrt(5)
        p = compare_metrics.welch_p((0.30, s), (0.25, s), 5, 5)
        self.assertAlmostEqual(p, compare_metrics.t_two_sided(0.05 / math.sqrt(2e-4), 8.0), places=12)
        # Unequal spreads and counts: standard errors^2 0.03^2 / 3 and 0.01^2 / 8, t = 2.8284, Welch's
        # df = 3.2531; p from an independent computation (mpmath's incomplete beta).
        s_a, s_b = 0.03 * math.sqrt(4 / 3), 0.01 * math.sqrt(9 / 8)
        self.assertAlmostEqual(compare_metrics.welch_p((0.30, s_a), (0.25, s_b), 4, 9), 0.0603041, places=7)
        self.assertAlmostEqual(compare_metrics.welch_p((0.25, s_b), (0.30, s_a), 9, 4), 0.0603041, places=7)
        self.assertIsNone(compare_metrics.welch_p((0.3, 0.0), (0.3, 0.01), 1, 4))
        self.assertEqual(compare_metrics.welch_p((0.3, 0.0), (0.3, 0.0), 4, 4), 1.0)
        # Neither run with a spread: the exact rank test for two samples apart, 2 / C(n_a + n_b, n_a), not 0.
        self.assertEqual(compare_metrics.welch_p((0.3, 0.0), (0.2, 0.0), 4, 4), 2.0 / 70)
        self.assertEqual(compare_metrics.welch_p((0.3, 0.0), (0.2, 0.0), 2, 2), 1.0 / 3)
        self.assertEqual(compare_metrics.welch_p((0.3, 0.0), (0.2, 0.0), 2, 5), 2.0 / 21)
        # Spreads of rounding only (an accuracy in steps of one image, the same in every group) count as none.
        self.assertEqual(compare_metrics.welch_p((0.9001, 1e-17), (0.9002, 0.0), 16, 16), 2.0 / math.comb(32, 16))
        self.assertEqual(compare_metrics.welch_p((0.9, 1e-17), (0.9 + 1e-16, 0.0), 3, 3), 1.0)
        # One run with a real spread: Welch's t, finite, on the other's zero spread.
        self.assertAlmostEqual(compare_metrics.welch_p((0.30, s), (0.25, 0.0), 5, 5),
                               compare_metrics.t_two_sided(0.05 / 0.01, 4.0), places=12)


def valued(method, size, values, **overrides):
    # Every metric with these per-group values but those overridden with their own, as bnn writes them
    # (mean, std ddof 1, values).
    out = {"method": method, "size": size, "groups": len(values), "entropy": {"mean": 0.2, "std": 0.0}}
    for m in METRICS:
        v = overrides.get(m, values)
        mean = sum(v) / len(v)
        std = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else None
        out[m] = {"mean": mean, "std": std, "values": v}
    return out


class Paired(unittest.TestCase):
    def test_paired_p(self):
        # Differences 1, 2, 3, 6: mean 3, standard deviation (ddof 1) sqrt(14 / 3), t = 3 / (sqrt(14 / 3) / 2)
        # on 3 degrees of freedom.
        t = 3 / (math.sqrt(14 / 3) / 2)
        self.assertAlmostEqual(compare_metrics.paired_p([2, 4, 6, 12], [1, 2, 3, 6]),
                               compare_metrics.t_two_sided(t, 3.0), places=15)
        self.assertEqual(compare_metrics.paired_p([1, 2], [1, 2]), 1.0)
        # Every group shifted by the same amount: no spread for t, so the exact sign test, 2 / 2^n.
        self.assertEqual(compare_metrics.paired_p([1, 2], [0, 1]), 0.5)
        self.assertEqual(compare_metrics.paired_p([1.0] * 16, [0.0] * 16), 2.0 / 2 ** 16)
        # One test image more in each of four groups of 10,000: the differences are 1e-4 up to the rounding
        # of the accuracies (about 1e-16), which must not pass for a spread (t would be ~1e12).
        shifted = [0.9013, 0.9021, 0.9005, 0.9030]
        self.assertEqual(compare_metrics.paired_p(shifted, [a - 1e-4 for a in shifted]), 0.125)
        self.assertEqual(compare_metrics.paired_p(shifted, [0.9012, 0.9020, 0.9004, 0.9029]), 0.125)
        # A spread above the tolerance (1e-9 of the values' size) is t's again: differences 0.5 +- 1e-8
        # give t ~ 1.2e8, where the sign test would say 0.125.
        p = compare_metrics.paired_p([1.0, 1.0 + 1e-8, 1.0 - 1e-8, 1.0], [0.5] * 4)
        self.assertLess(p, 1e-20)
        self.assertIsNone(compare_metrics.paired_p([1], [2]))


class CompareMetrics(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bnn_compare_metrics")
        self.addCleanup(shutil.rmtree, self.dir)

    def run_script(self, a, b, *options, members=(MEMBERS, MEMBERS)):
        # Tables as bnn writes them, each with its list of members (None: none, as an older bnn's).
        paths = []
        for name, table, names in (("a.json", a, members[0]), ("b.json", b, members[1])):
            path = os.path.join(self.dir, name)
            data = {"ensembles": table} if names is None else {"ensembles": table, "members": names}
            with open(path, "w") as f:
                f.write(table if isinstance(table, str) else json.dumps(data))
            paths.append(path)
        return subprocess.run([sys.executable, SCRIPT, *options, *paths], capture_output=True, text=True)

    def test_the_same_table_differs_nowhere(self):
        table = [row("adam", 1, 16, 0.3, 0.01), row("bayes", 1, 16, 0.2, 0.01), row("bayes", 16, 1, 0.2, 0.0)]
        r = self.run_script(table, table, "--labels", "cpu", "gpu")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "| method | size | groups (cpu, gpu) | metric | cpu | gpu | cpu - gpu | p | |")
        self.assertIn("| bayes | 1 | 16, 16 | nll | 0.2000 | 0.2000 | +0.0000 | 1 |  |", lines)
        self.assertIn("| bayes | 16 | 1, 1 | nll | 0.2000 | 0.2000 | +0.0000 | n/a |  |", lines)
        self.assertEqual(lines[-1], "0 of 12 differences are marked: p below 0.01 / 12 = 0.00083 (Welch's t-test; "
                                    "sizes with one group in either run are not tested).")

    def test_a_shift_of_a_few_standard_errors_is_marked(self):
        # Size 1, 16 groups, std 0.004: standard error 0.004 / sqrt(15) = 0.00103 a side. An NLL 0.01 higher
        # is t = 6.8 on 30 degrees of freedom, p ~ 1.4e-7: marked. An ACE 0.003 higher is t = 2.05, p ~ 0.05:
        # not, with 6 tests at 0.01 / 6.
        a = [row("bayes", 1, 16, 0.2, 0.004)]
        b = [row("bayes", 1, 16, 0.2, 0.004, nll=(0.21, 0.004), ace=(0.203, 0.004))]
        r = self.run_script(a, b)
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stdout.splitlines()
        t = 0.01 / math.sqrt(2 * 0.004 ** 2 / 15)
        p = compare_metrics.t_two_sided(t, 30.0)
        self.assertIn(f"| bayes | 1 | 16, 16 | nll | 0.2000 | 0.2100 | -0.0100 | {p:.2g} | differs |", lines)
        self.assertTrue(1e-7 < p < 1e-6, p)
        ace = [line for line in lines if "| ace |" in line][0]
        self.assertTrue(ace.endswith(" |  |"), ace)
        self.assertEqual(lines[-1], "1 of 6 differences are marked: p below 0.01 / 6 = 0.0017 (Welch's t-test; "
                                    "sizes with one group in either run are not tested).")

    def test_two_groups_are_not_over_read(self):
        # Two groups a side whose spreads happen to be small: the difference is 11 of its estimated standard
        # errors, which a normal test would mark (p ~ 1e-29), but the spread of two values is itself a guess
        # (Welch's df = 2 here), and p = 0.0077 is not below 0.01 / 6.
        a = [row("adam", 4, 2, 0.9012, 0.00005)]
        b = [row("adam", 4, 2, 0.9020, 0.00005)]
        r = self.run_script(a, b)
        self.assertEqual(r.returncode, 0, r.stderr)
        p = compare_metrics.t_two_sided(0.0008 / math.sqrt(2 * 0.00005 ** 2), 2.0)
        self.assertAlmostEqual(p, 0.0077, places=4)
        self.assertIn(f"| adam | 4 | 2, 2 | accuracy | 0.9012 | 0.9020 | -0.0008 | {p:.2g} |  |", r.stdout.splitlines())

    def test_paired_sees_what_the_members_share_cancel(self):
        # Four groups whose accuracies spread by 0.013 (std) in both runs, B higher by 0.001, 0.0012, 0.0008
        # and 0.001 group by group. Welch sees a shift of 0.1 standard deviations; paired, the differences'
        # standard error is sqrt(8e-8 / 3) / 2 = 8.2e-5, t = 12.2 on 3 degrees of freedom, p = 0.0012, under
        # 0.01 / 2. ACE is B's by a constant: no spread, so the sign test, 2 / 2^4 = 0.125, not marked. The
        # other four metrics are equal group by group: shown as the same and left out of the bound's count.
        groups = [0.90, 0.92, 0.91, 0.93]
        a = [valued("bayes", 4, groups), valued("bayes", 16, [0.95])]
        b = [valued("bayes", 4, groups, accuracy=[0.901, 0.9212, 0.9108, 0.931],
                    ace=[g + 0.0005 for g in groups]), valued("bayes", 16, [0.96])]
        r = self.run_script(a, b)
        self.assertEqual(r.returncode, 0, r.stderr)  # unpaired, both shifts are lost in the groups' spread
        self.assertTrue(r.stdout.splitlines()[-1].startswith("0 of 6 differences are marked"), r.stdout)
        r = self.run_script(a, b, "--paired", members=(SIXTEEN, SIXTEEN))
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stdout.splitlines()
        p = compare_metrics.t_two_sided(0.001 / (math.sqrt(8e-8 / 3) / 2), 3.0)
        self.assertTrue(0.001 < p < 0.0013, p)
        self.assertIn(f"| bayes | 4 | 4, 4 | accuracy | 0.9150 | 0.9160 | -0.0010 | {p:.2g} | differs |", lines)
        self.assertIn("| bayes | 4 | 4, 4 | nll | 0.9150 | 0.9150 | +0.0000 | same |  |", lines)
        self.assertIn("| bayes | 4 | 4, 4 | ace | 0.9150 | 0.9155 | -0.0005 | 0.12 |  |", lines)
        self.assertIn("| bayes | 16 | 1, 1 | accuracy | 0.9500 | 0.9600 | -0.0100 | n/a |  |", lines)
        self.assertEqual(lines[-1], "1 of 2 differences are marked: p below 0.01 / 2 = 0.005 (paired t-test over "
                                    "the groups; sizes with one group and rows equal group by group are not "
                                    "tested).")
        # Equal means from other groups are not the same rows: tested, p = 1.
        c = [valued("bayes", 4, groups, nll=[0.91, 0.93, 0.90, 0.92])]
        r = self.run_script(a[:1], c, "--paired", members=(SIXTEEN, SIXTEEN))
        self.assertIn("| bayes | 4 | 4, 4 | nll | 0.9150 | 0.9150 | +0.0000 | 1 |  |", r.stdout.splitlines())

    def test_paired_refuses_what_it_cannot_pair(self):
        valued_a = [valued("adam", 2, [0.9, 0.91])]
        cases = [
            ([row("adam", 2, 2, 0.9, 0.01)], valued_a,
             "--paired: A's adam size 2 has no per-group values of accuracy (a metrics.json from an older bnn: "
             "run `bnn evaluate` on the run again)"),
            (valued_a, [valued("adam", 2, [0.9, 0.91, 0.92])],
             "--paired: adam size 2 has 2 groups in A and 3 in B; pairing needs the same members in both runs"),
            (valued_a, [dict(valued("adam", 2, [0.9, 0.91]), groups=3)],
             "adam size 2: the 2 values of accuracy do not belong to its 3 groups of mean 0.905"),
        ]
        others = [f"member_{i:03d}" for i in (0, 1, 3, 2)]
        member_cases = [
            ((None, MEMBERS), "--paired: A's " + os.path.join(self.dir, "a.json") + " does not name its members "
             "(a metrics.json from an older bnn: run `bnn evaluate` on the run again)"),
            ((MEMBERS, others), "--paired: position 2 holds member_002 in A and member_003 in B; pairing needs the "
             "same members in the same order in both runs"),
            ((MEMBERS, MEMBERS[:3]), "--paired: A has 4 members and B 3; pairing needs the same members in both "
             "runs"),
            # Two groups of size 2 are four members; a list of six (as for a table of other members) is refused.
            ((MEMBERS + ["member_004", "member_005"],) * 2, "--paired: adam size 2 has 2 groups, but the 6 members "
             "the files name make 3; the table and its list of members disagree"),
        ]
        cases += [(valued_a, valued_a, message, members) for members, message in member_cases]
        for a, b, message, *members in cases:
            r = self.run_script(a, b, "--paired", **({"members": members[0]} if members else {}))
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(message, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertEqual(r.stdout, "")
        # Unpaired, the members are not compared.
        self.assertEqual(self.run_script(valued_a, valued_a, members=(MEMBERS, others)).returncode, 0)

    def test_bad_input_is_one_line(self):
        good = [row("adam", 1, 4, 0.3, 0.01)]
        cases = [
            ("{not json", good, "cannot read it as JSON"),
            ([], good, "no ensemble rows (is it a bnn run's metrics.json?)"),
            ([{"method": "adam", "size": 1, "groups": 4}], good, "an ensemble row lacks or garbles 'accuracy'"),
            ([row("swa", 1, 4, 0.3, 0.01)], good, "the two tables share no method and ensemble size"),
        ]
        for a, b, message in cases:
            r = self.run_script(a, b)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(message, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertEqual(r.stdout, "")
        for options in (["--alpha", "2"], ["--alpha", "x"], ["--labels", "a"], ["--bogus"]):
            r = self.run_script(good, good, *options)
            self.assertEqual(r.returncode, 2, options)
            self.assertIn("usage: scripts/compare_metrics.py [--labels A B] [--alpha P] [--paired] METRICS_A METRICS_B",
                          r.stderr)


if __name__ == "__main__":
    unittest.main()
