"""One module per result of the paper; importing this package registers every identity."""

from . import bias, definitions, exact_identities, lowrank_identities, multihead, noisy_identities, transformer  # noqa: F401

__all__ = ["bias", "definitions", "exact_identities", "lowrank_identities", "multihead", "noisy_identities", "transformer"]
