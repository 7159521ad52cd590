"""The ledger's claims of App. B, Thm B.1 (membership queries), with the slips S3, S4.

Bhattamishra et al., *Provably Learning Attention with Queries* (arXiv 2601.16873).  Each claim
links its checks one per line (``id:``, ``test:``, ``xfail:``, ``bench:``, ``learner:``; see
:mod:`attnproof.verify.claims`); :func:`~attnproof.verify.claims.register` files them in the
ledger at :data:`PLACE`, in this list's order.
"""

from __future__ import annotations

from ...verify.claims import Erratum, T, claim, register

#: This room's place in the ledger's order (the paper's section).
# App. B is announced at the end of Sec. 6; the ledger has always listed it last, after App. C, and
# keeps that order (a place of (6, 1) would list it right after Thm 6.1).
PLACE = (8,)

register(PLACE, claims=[
    claim("thmB.1/eq12", "App. B, Eqs. (12)-(13)", "equation", "membership",
       r"$\mathbb{E}[\mathrm{sign}(v^\top x) x] = R\, v/\Vert v\Vert$, $R = \Gamma(d/2)/(\sqrt\pi\,"
       r"\Gamma((d+1)/2))$",
       "id:thmB.1/sphere-constant",
       "id:thmB.1/halfspace-mean-d2",
       f"test:{T}membership.py::test_eq_12_halfspace_mean_by_sampling",
       f"test:{T}membership.py::test_sphere_constant_closed_forms"),
    claim("thmB.1/eq15", "App. B, Eq. (15)", "probability", "membership",
       r"Hoeffding: $\Vert\hat v - v^\star\Vert_\infty \le \epsilon_v$ w.p. $1 - \delta$ with "
       r"$k = \frac{2}{t^2 R^2}\log\frac{2d}{\delta}$ queries",
       "id:thmB.1/hoeffding-count",
       f"test:{T}membership.py::test_paper_failure_rate_is_below_delta",
       f"test:{T}membership.py::test_the_verbatim_hoeffding_count_is_astronomical",
       depends=("thmB.1/eq12",)),
    claim("thmB.1/eq16-19", "App. B, Eqs. (16)-(19)", "equation", "membership",
       r"$h(X(a)) = \mathrm{sign}(v_i)\,\mathrm{sign}(F(a))$, $F(a) = a\alpha + \sigma(W_{ij}s)s/a$",
       "id:thmB.1/probe-value",
       f"test:{T}membership.py::test_oracle_answers_the_indicator_and_counts_like_a_value_oracle",
       depends=("thm6.1/eq3-4",)),
    claim("thmB.1/eq20", "App. B, Eq. (20)", "equation", "membership",
       r"$F'(a) = \alpha - \sigma(W_{ij}s)s/a^2$ has constant sign: one sign flip in $a > 0$",
       "id:thmB.1/monotone-derivative",
       "id:thmB.1/monotone",
       f"test:{T}membership.py::test_every_bisection_stops_at_the_floor",
       depends=("thmB.1/eq16-19",)),
    claim("thmB.1/eq21-22", "App. B, Eqs. (21)-(22)", "equation", "membership",
       r"$\sqrt{\mu/(8W)} \le a \le \sqrt{1/(2W\mu)}$",
       "id:thmB.1/apriori-interval",
       f"test:{T}membership.py::test_bisect_meets_theorem_b1",
       depends=("thmB.1/eq20",)),
    claim("thmB.1/delta-alpha", "App. B, the $\\Delta_\\alpha$ display", "equation", "membership",
       r"$\vert\Delta_\alpha\vert \le 2\epsilon_v/(\mu(\mu - \epsilon_v)) \le 4\epsilon_v/\mu^2$",
       "id:thmB.1/ratio-error",
       "id:thmB.1/ratio-bound",
       f"test:{T}membership.py::test_paper_verbatim_meets_theorem_b1_at_d1",
       depends=("thmB.1/eq15",)),
    claim("thmB.1/eq26-29", "App. B, Eqs. (26)-(29)", "equation", "membership",
       r"The bisection and ratio errors give every entry within $\eta_W = \epsilon_W/d$",
       "id:thmB.1/accuracy-algebra",
       f"test:{T}membership.py::test_paper_verbatim_meets_theorem_b1_at_d1",
       depends=("thmB.1/eq21-22", "thmB.1/delta-alpha", "lemmaA.1")),
    claim("thmB.1/queries", "Thm B.1", "query count", "membership",
       r"$O(\frac{d}{\epsilon_v^2}\log\frac{d^2}{\delta} + d^2\log\frac{d}{\epsilon_W\mu})$ "
       r"membership queries",
       f"test:{T}membership.py::test_step_counts_are_exact",
       "bench:membership d=3",
       depends=("thmB.1/eq15", "thmB.1/eq21-22")),
    claim("thmB.1", "Thm B.1", "result", "membership",
       r"From membership queries, w.p. $1 - \delta$: $\Vert\hat v - v^\star\Vert_\infty \le \epsilon_v$, "
       r"$\Vert\hat W - W^\star\Vert_F \le \epsilon_W$",
       "learner:membership",
       "id:thmB.1/run",
       f"test:{T}membership.py::test_bisect_meets_theorem_b1",
       f"test:{T}membership.py::test_paper_verbatim_meets_theorem_b1_at_d1",
       "bench:membership d=3",
       "bench:membership d=3 arith=mp:40",
       depends=("thmB.1/eq12", "thmB.1/eq15", "thmB.1/eq16-19", "thmB.1/eq20", "thmB.1/eq21-22",
                "thmB.1/delta-alpha", "thmB.1/eq26-29", "thmB.1/queries")),
    claim("thmB.1/rotated", "beyond Thm B.1", "beyond the paper", "membership",
       r"Thm B.1 without the margin, by rotating the tokens",
       "learner:membership-rotated",
       "id:thmB.1/run-rotated",
       "id:thmB.1/rotation",
       f"test:{T}membership.py::test_rotated_learner_needs_no_margin",
       f"test:{T}membership.py::test_rotation_margin_holds_with_the_stated_probability",
       "bench:membership-rotated d=3 arith=mp:30 eps_W=1e-2",
       depends=("thmB.1",)),
], errata=[
    Erratum(
        id="S3",
        claim="thmB.1/eq26-29",
        kind="slip",
        statement="Thm B.1's accuracy algebra sets $\\tau = \\frac{\\eta_W\\mu^3}{8LW^2}\\cdot Const$ with "
                  "$L < 5$ and an unnamed Const.",
        counterexample="With $L = 5$ the $\\epsilon_v$ term alone, "
                       "$2\\epsilon_v/(W\\mu^3) = \\eta_W/(20W^2)$, "
                       "equals the whole budget $\\eta_W/(4W^2L)$, leaving nothing for the bisection error.",
        failing_step="the final budget split: it closes only because $L = 2 + 2\\cosh(1/2) = 4.255 < 5$.",
        correction="Take $Const = 1/8$ and $L = 4.26$: every entry is within $0.51\\,\\eta_W$ (interval "
                   "arithmetic over all $\\mu \\le 1$, $W \\ge 2$, $\\epsilon_W/d \\le 1$).",
        checks=("id:thmB.1/accuracy-algebra",
                f"test:{T}membership.py::test_paper_verbatim_meets_theorem_b1_at_d1"),
        corrected="thmB.1",
        source="attnproof/theorems/membership.py; book/membership.md (commit baa4a67)",
    ),
    Erratum(
        id="S4",
        claim="thmB.1/delta-alpha",
        kind="typo",
        statement="The $\\Delta_\\alpha$ display of App. B.",
        counterexample="Its denominator reads $v_i(v_i - \\Delta_i)$ and its numerator "
                       "$v_i\\Delta_j + v_j\\Delta_i$.",
        failing_step="the middle equalities of the display (the final bound is unaffected).",
        correction="$\\hat\\alpha - \\alpha = (v_i\\Delta_j - v_j\\Delta_i)/(v_i(v_i + \\Delta_i))$.",
        checks=("id:thmB.1/ratio-error", "id:thmB.1/ratio-bound"),
        corrected="thmB.1/delta-alpha",
        source="attnproof/theorems/membership.py; book/membership.md (commit baa4a67)",
    ),
])
