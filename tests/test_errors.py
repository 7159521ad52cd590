"""The typed errors form one hierarchy, and input errors are ValueErrors."""

import pytest

from attnproof import errors


ERRORS = [n for n in errors.__all__ if isinstance(getattr(errors, n), type)]
CHECKS = [n for n in errors.__all__ if n.startswith("check_")]


def test_errors_exports_error_classes_and_checks_only():
    assert set(ERRORS) | set(CHECKS) == set(errors.__all__) and len(CHECKS) == 3


@pytest.mark.parametrize("name", [n for n in ERRORS if n != "AttnproofError"])
def test_every_error_is_an_attnproof_error(name):
    assert issubclass(getattr(errors, name), errors.AttnproofError)


@pytest.mark.parametrize("cls", [errors.ShapeError, errors.NonFiniteError, errors.InvalidInputError])
def test_input_errors_are_value_errors(cls):
    assert issubclass(cls, ValueError)


def test_algorithmic_errors_are_not_input_errors():
    for cls in (errors.NonIdentifiableError, errors.DegenerateProbeError, errors.PrecisionLossError,
                errors.QueryBudgetExceeded, errors.ToleranceViolation, errors.AssumptionError):
        assert not issubclass(cls, errors.InvalidInputError)
