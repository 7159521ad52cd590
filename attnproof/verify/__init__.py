"""Verification: one graph of identities, learners and claims; evidence kinds; status; checkers.

Bhattamishra, Shah, Hahn and Kanade, *Provably Learning Attention with Queries* (arXiv
2601.16873): every identity the learners rely on is registered and checked, every claim of the
paper is linked to independent evidence, and every status is computed, never typed.

The modules, from the ground up (``tests/test_layers.py`` keeps them in this order):

``registry``
    the identity (:func:`~registry.identity`, :func:`~registry.bound`,
    :func:`~registry.run_check`) and learner (:func:`~registry.learner`) registries, and the
    SHA-256 :func:`~registry.content_hash` a citation pins (statement and expressions only);
``formulas``
    the paper's formulas (Sec. 3) written independently of the library, for right-hand sides;
``checkers``
    the engines, behind one :class:`~checkers.Checker` protocol (below);
``graph``
    one graph of typed nodes (identities, learners, claims) with one closure
    (:meth:`~graph.Graph.closure`) and one status rule (:meth:`~graph.Graph.resolve`);
``certificate``
    the verifier: :func:`~certificate.verify` one entry, :func:`~certificate.verify_all` into a
    :class:`~certificate.Certificate`;
``claims``
    what a claim and an erratum are, and :func:`~claims.register`, through which each room files
    its own (``theorems/<room>/claims.py``) in the paper's order;
``outcomes``
    the pytest outcome plugin and the subprocess that runs linked tests;
``render``
    Markdown, LaTeX and BibTeX, and the matplotlib map, apart from the logic;
``evidence``, ``ledger``, ``cli``
    the evidence kinds (one evaluator per link kind), the ledger's evaluation, and
    ``attnproof ledger``.  These sit above ``bench``, whose runners measure ``bench:`` links.

**The checker seam.**  Each certificate entry records every engine that checked it::

    "checkers": {"sympy": {"passed": true, "seconds": 0.12, "version": "1.13.3", "detail": "..."},
                 "mpmath": {"passed": true, "seconds": 0.03, "version": "1.3.0", "detail": "..."}}

(``learner-run`` for a run entry; ``passed`` is null when an engine has no evidence for that
entry).  A new engine (z3, cvc5, Arb, Coq) is one module ``attnproof/verify/<engine>_checker.py``
defining an object with ``engine``, ``kinds``, ``version()`` and ``check(ident, built) ->
Verdict`` and passing it to :func:`~checkers.register_checker` at import;
:func:`~checkers.discover` imports every such module before an entry is verified, so the
verifier is never edited.  An entry's own checks pass when some engine passed and none failed.
The SHA-256 never includes the checkers: a new engine leaves every published hash as it was.

Names are imported lazily from their modules (``from attnproof.verify import verify_all``), so
a room importing :mod:`attnproof.verify.registry` does not load the ledger above it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Where each public name lives (a name is imported from its module on first use).
_HOME = {
    "registry": ("Pair", "BoundClaim", "RunCheck", "Identity", "REGISTRY", "identity", "bound", "run_check",
                 "Learner", "LEARNERS", "learner", "content_hash"),
    "formulas": ("symbols", "recovery_checks", "paper_scores", "paper_weights", "paper_head"),
    "checkers": ("NUMERIC_DPS", "NUMERIC_TOL", "Verdict", "Checker", "CHECKERS", "register_checker",
                 "numeric_check", "expand_matrix"),
    "graph": ("Node", "Status", "Graph", "STATUSES"),
    "certificate": ("Entry", "LearnerEntry", "Certificate", "verify", "verify_all", "learner_status"),
    "claims": ("Claim", "Erratum", "CLAIMS", "ERRATA", "ORDER", "register", "register_claim",
               "register_erratum"),
    "outcomes": ("Outcomes", "OutcomeRecorder", "run_tests", "strict_xfails", "check_node_ids", "code_hash",
                 "RECORD"),
    "render": ("PAPER_URL", "PAPER_BIBTEX", "software_bibtex", "learner_markdown", "latex_escape",
               "display_math", "typeset", "COLOURS", "layout", "draw"),
    "evidence": ("INDEPENDENT_KINDS", "Link", "parse_check", "CheckResult", "EVALUATORS"),
    "ledger": ("Ledger", "ClaimResult", "ErratumResult", "evaluate", "closure", "write", "linked_node_ids",
               "linked_identities"),
}
_WHERE = {name: module for module, names in _HOME.items() for name in names}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = sorted(_WHERE)
