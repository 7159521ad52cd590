"""Shared test configuration: Hypothesis profiles and mpmath's global precision.

Shared helpers (``seeds``, ``rel``, ``cli``) live in ``tests/helpers.py``.
"""

from __future__ import annotations

import os

import mpmath
import pytest
from hypothesis import HealthCheck, settings

# "ci" (default): fast and derandomized, so CI is reproducible.
settings.register_profile(
    "ci",
    max_examples=30,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# "thorough" (opt-in: HYPOTHESIS_PROFILE=thorough): many random examples.
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _reset_mpmath_precision():
    """mpmath's precision is global state: every test starts at the default and restores it."""
    mpmath.mp.dps = 15
    yield
    mpmath.mp.dps = 15


@pytest.fixture(scope="session")
def full_certificate():
    """One verification of every registered identity (about a minute), shared by the test modules
    that read the whole certificate (tests/test_proof.py, tests/test_ledger.py)."""
    import attnproof  # noqa: F401  (importing the package registers every identity)
    from attnproof.verify import verify_all

    return verify_all()


@pytest.fixture(scope="session")
def html():
    """The built book's HTML folder: one build per session (through the execution cache, so after
    ``dev.py``'s own build step nothing is executed again), shared by test_book and test_browser.
    A failed build shows its whole output."""
    from helpers import BOOK, build

    r, seconds = build(BOOK)
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"book built in {seconds:.0f} s")
    return BOOK / "_build" / "html"


def pytest_addoption(parser):
    parser.addoption(
        "--ledger-results",
        metavar="PATH",
        default=None,
        help="write every test's outcome (with the commit and a timestamp) to PATH for `attnproof ledger`",
    )


def pytest_configure(config):
    """With ``--ledger-results PATH``, record outcomes for the verification ledger."""
    path = config.getoption("--ledger-results")
    if path:
        from attnproof.verify.outcomes import OutcomeRecorder

        config.pluginmanager.register(OutcomeRecorder(path), "attnproof-ledger-results")
