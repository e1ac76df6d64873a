#!/usr/bin/env python3
"""Student's t tail probabilities and the paired t-test, for scripts/compare_metrics.py and
scripts/paper_comparison.py. Standard library only."""
import math


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


def sample_variance(values):
    """The variance over n - 1 (ddof 1); None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return sum((v - mean) ** 2 for v in values) / (n - 1)


def sample_std(values):
    """The standard deviation over n - 1 (ddof 1), as bnn and the reference code report it; None for one."""
    variance = sample_variance(values)
    return None if variance is None else math.sqrt(variance)


def paired_standard_error(differences):
    """The standard error of the mean of paired differences (ddof 1); None for fewer than two."""
    variance = sample_variance(differences)
    return None if variance is None else math.sqrt(variance / len(differences))


def paired_p_value(differences, scale):
    """Two-sided p-value that paired differences have mean 0: Student's t on their mean over its standard
    error (paired_standard_error) with n - 1 degrees of freedom; None for n < 2.

    Where the differences are equal up to rounding (their standard deviation at most 1e-9 of `scale`, the
    size of the values they were taken from), t is meaningless: a metric that moves in steps, such as an
    accuracy in steps of one test image, can shift every group by the same step, and the rounding of the
    values alone would then make t as large as it likes. There the test is the exact sign test instead:
    all zero is p = 1, and n differences of one sign, each as likely as the other under the hypothesis,
    have p = 2 / 2^n."""
    error = paired_standard_error(differences)
    if error is None:
        return None
    n = len(differences)
    mean = sum(differences) / n
    tolerance = 1e-9 * scale
    if error * math.sqrt(n) <= tolerance:  # the differences' standard deviation
        return 1.0 if abs(mean) <= tolerance else min(1.0, 2.0 * 0.5 ** n)
    return t_two_sided(mean / error, n - 1.0)


def paired_p(values_a, values_b):
    """paired_p_value of the group-by-group differences of two lists of values, scaled by their size.
    Two-sided, so the order of the two lists does not matter."""
    scale = max([abs(v) for v in values_a + values_b] or [0.0])
    return paired_p_value([a - b for a, b in zip(values_a, values_b)], scale)
