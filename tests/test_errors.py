"""The typed errors form one hierarchy, and input errors are ValueErrors."""

import pytest

from attnproof import errors


ERRORS = [n for n in errors.__all__ if isinstance(getattr(errors, n), type)]
CHECKS = [n for n in errors.__all__ if n.startswith("check_")]


def test_errors_exports_error_classes_checks_and_located_only():
    assert set(ERRORS) | set(CHECKS) | {"located"} == set(errors.__all__) and len(CHECKS) == 3


@pytest.mark.parametrize("cls", [errors.DegenerateProbeError, errors.ShapeError, errors.QueryBudgetExceeded])
def test_located_says_where_keeps_the_type_and_chains(cls):
    original = cls("the reason")
    with pytest.raises(cls, match=r"^head 3 \(its reduced oracle\): the reason$") as info:
        with errors.located("head 3 (its reduced oracle)"):
            raise original
    assert info.value.__cause__ is original


def test_located_leaves_other_exceptions_and_success_alone():
    with errors.located("head 1"):
        x = 1
    assert x == 1
    with pytest.raises(KeyError) as info:
        with errors.located("head 1"):
            raise KeyError("k")
    assert info.value.__cause__ is None and "head 1" not in str(info.value)


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
