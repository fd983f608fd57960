"""`privspec convert`: Table 3 of Gomez et al. 2025 and the reverse direction, by an independent route."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from privspec.cli import main
from privspec.numerics.gdp import epsilon_from_mu_delta, gaussian_delta, mu_from_epsilon_delta

# Seed 000, Table 3: μ of the Gaussian mechanism meeting (ε, δ), to two decimals.
TABLE3 = {
    0.1: (0.03, 0.03, 0.02),
    0.5: (0.14, 0.12, 0.09),
    1.0: (0.27, 0.24, 0.18),
    2.0: (0.50, 0.45, 0.35),
    4.0: (0.92, 0.84, 0.67),
    6.0: (1.31, 1.20, 0.97),
    8.0: (1.67, 1.53, 1.26),
    10.0: (2.00, 1.85, 1.54),
}
DELTAS = (1e-5, 1e-6, 1e-9)


@pytest.mark.parametrize("epsilon", sorted(TABLE3))
def test_table3(epsilon: float) -> None:
    for delta, expected in zip(DELTAS, TABLE3[epsilon], strict=True):
        mu = mu_from_epsilon_delta(epsilon, delta)
        assert round(mu, 2) == pytest.approx(expected, abs=1e-9)


def test_mu_meets_the_claim_and_never_understates() -> None:
    for epsilon in (0.1, 1.0, 8.0):
        for delta in DELTAS:
            mu = mu_from_epsilon_delta(epsilon, delta)
            # Independent route: Dong, Roth & Su Cor. 2.13 written with scipy.stats.
            independent = norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(
                -epsilon / mu - mu / 2)
            assert independent == pytest.approx(delta, rel=1e-7)
            assert gaussian_delta(epsilon, mu) >= delta * (1 - 1e-9)


def test_round_trip() -> None:
    for mu in (0.1, 0.5, 1.0, 1.5683, 3.0):
        for delta in DELTAS:
            epsilon = epsilon_from_mu_delta(mu, delta)
            assert gaussian_delta(epsilon, mu) <= delta * (1 + 1e-9)
            assert mu_from_epsilon_delta(epsilon, delta) == pytest.approx(mu, rel=1e-9)


def test_cli_table_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "--table"]) == 0
    out = capsys.readouterr().out
    assert "| 8 | 1.67 | 1.54 | 1.27 |" in out  # three digits, rounded up
    assert main(["convert", "--epsilon", "1"]) == 2
    assert "give --delta" in capsys.readouterr().err
    for huge in ("1e20", "inf"):  # (the solver's range ended near 10¹²: a traceback)
        assert main(["convert", "--epsilon", huge, "--delta", "1e-5"]) == 2
        assert "ε must be at most 1e+11" in capsys.readouterr().err
    assert main(["convert", "--mu", "1", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("μ-GDP with μ = 1: ε = 4.38 at δ = 10⁻⁵")  # not "μ = 1-GDP"
    assert main(["convert", "--mu", "1", "--delta", "2"]) == 2
