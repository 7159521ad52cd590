"""The README's examples run as written, and every number it states that a test can check holds
(what a new user copies first, and what a reviewer quotes)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from attnproof import Attention, ValueOracle
from attnproof.bench import theorem_tolerances
from attnproof.cli import main as cli_main
from attnproof.measure import PILOT_SLACK
from attnproof.theorems.noisy import BETA_STAR, PAPER, guarantee, learn_noisy

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def run_block(block: str) -> tuple[list[float], dict]:
    out, namespace = io.StringIO(), {}
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), namespace)
    return [float(x) for x in out.getvalue().split()], namespace


def five_lines(seed: int = 0, d: int = 8) -> str:
    """The README's five-line example, with another seed or width substituted."""
    block = python_blocks()[0]
    assert "default_rng(0)" in block and "(8, 8)" in block and "(8)" in block
    return block.replace("default_rng(0)", f"default_rng({seed})").replace("(8, 8)", f"({d}, {d})").replace(
        "standard_normal(8)", f"standard_normal({d})")


@pytest.mark.parametrize("seed", range(6))
def test_the_five_line_example_keeps_what_the_readme_guarantees(seed):
    (queries, reasked, error, bound), ns = run_block(five_lines(seed))
    assert queries == 8 + 8**2 + reasked, "queries = d + d^2 plus the counted re-asks"
    assert error <= bound, "the error is within the reported bound"
    assert 1e-14 < error < 1e-11, "the error range the README quotes"
    if seed == 0:
        assert reasked == 0, "the README says seed 0 re-asks nothing"


@pytest.mark.parametrize("d", [16, 64])
def test_far_from_unit_scale_the_reasks_stay_within_the_stated_slack(d):
    """The README states PILOT_SLACK's value; the five lines at width d (W ~ N(0, 1): logits of
    tens, which once cost over a thousand re-asks at d = 64) stay within it."""
    assert f"`attnproof.measure.PILOT_SLACK` = {PILOT_SLACK}" in README.read_text()
    (queries, reasked, error, bound), _ = run_block(five_lines(0, d))
    assert reasked <= PILOT_SLACK and queries == d + d**2 + reasked and error <= bound


def test_the_mpmath_recovery_the_readme_quotes(capsys):
    text = README.read_text()
    assert "`attnproof recover exact --d 16 --arith mp:60` (d + d^2 = 272 queries" in text
    assert cli_main(["recover", "exact", "--d", "16", "--arith", "mp:60", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["queries"] == 16 + 16**2 + r["diagnostics"]["reasked_queries"]
    assert r["err_W"] <= r["error_bound"] < 1e-50, "within its reported bound, below 1e-50"


def test_the_noisy_numbers_the_readme_quotes():
    text = README.read_text()
    beta = re.search(r"logit band beta = (\d\.\d+)", text)
    assert beta and float(beta[1]) == round(BETA_STAR, len(beta[1]) - 2)
    ratio = re.search(r"at a (\d+\.\d)x larger\s+tolerance", text)
    tol = {n: theorem_tolerances(n, 0.1, 0.1, 2.0, 0.5, 4).tau for n in ("paper", "tuned")}
    assert ratio and float(ratio[1]) == round(tol["tuned"] / tol["paper"], 1)
    err = re.search(r"W\* = \[\[sqrt 2, 0\], \[sqrt 2, 0\]\], W = 2, v\* = \(0, 1\), mu = 1/2: "
                    r"error (\d\.\d+) > eps_W", text)
    W_star, v_star = np.array([[2**0.5, 0.0], [2**0.5, 0.0]]), np.array([0.0, 1.0])
    rec = learn_noisy(ValueOracle(Attention(W_star, v_star)), W_bound=2.0, mu=0.5, tau=0.0, design=PAPER)
    assert err and float(err[1]) == round(guarantee(rec, W_star, v_star)["err_W"], 2)


def test_every_cli_example_in_the_readme_parses():
    """Each concrete ``attnproof recover|bench ...`` the README shows is a valid command line (the
    options a learner or sweep declares, spelled as the README spells them); bracketed forms are
    synopses, not examples."""
    from attnproof.cli import _learner_first, build_parser

    examples = [c for c in re.findall(r"`attnproof ((?:recover|bench) [^`]*)`", README.read_text())
                if not re.search(r"[\[<]|[A-Z]{4,}", c)]
    assert len(examples) >= 10
    for command in examples:
        args = build_parser().parse_args(_learner_first(command.split()))
        assert args.command in ("recover", "bench"), command


def test_the_default_promise_the_readme_quotes_is_the_codes():
    """"a fifth of the working digits: X ||W_hat||_F in float64" is FLOAT64.resolution ** 0.2."""
    from attnproof.arith import FLOAT64

    promise = re.search(r"a fifth\s+of the working digits: ([0-9.e+-]+) \|\|W_hat\|\|_F", README.read_text())
    assert promise and float(promise[1]) == float(f"{FLOAT64.resolution ** 0.2:.1e}")
