"""The ledger's claims of Lemma A.1 and Thm 6.1 (approximate value queries), with the erratum E1
and the slips S1, S2.

Bhattamishra et al., *Provably Learning Attention with Queries* (arXiv 2601.16873).  Each claim
links its checks one per line (``id:``, ``test:``, ``xfail:``, ``bench:``, ``learner:``; see
:mod:`attnproof.verify.claims`); :func:`~attnproof.verify.claims.register` files them in the
ledger at :data:`PLACE`, in this list's order.
"""

from __future__ import annotations

from ...verify.claims import Erratum, T, claim, register

#: This room's place in the ledger's order (the paper's section).
PLACE = (6,)

register(PLACE, claims=[
    claim("lemmaA.1", "Lemma A.1", "result", "noisy",
       r"$\vert\sigma^{-1}(\mathrm{clip}(\hat\alpha)) - \sigma^{-1}(\alpha^\star)\vert \le L_{\tau_{clip}}"
       r"\vert\hat\alpha - \alpha^\star\vert \le 5 \vert\hat\alpha - \alpha^\star\vert$",
       "id:lemmaA.1/lipschitz-bound",
       "id:lemmaA.1/logit-derivative",
       "id:lemmaA.1/lipschitz-closed-form",
       f"test:{T}noisy.py::test_lemma_a1_clipped_logit_is_5_lipschitz",
       f"test:{T}noisy.py::test_lipschitz_enclosure_is_the_library_constant"),
    claim("thm6.1/eq3-4", "Thm 6.1, Eqs. (3)-(4)", "equation", "noisy",
       r"$f(X) = x^\top v + \alpha_1 (u^\top v - x^\top v)$, $\alpha_1 = \sigma(u^\top W x - x^\top W x)$;"
       r" the probe's logit is $ab\,W_{ij}$",
       "id:thm6.1/probe-logit",
       f"test:{T}noisy.py::test_margin_is_checked_with_an_exact_oracle",
       depends=("sec3/model",)),
    claim("thm6.1/eq5-6", "Thm 6.1, Eqs. (5)-(6) and the tolerance choices", "equation", "noisy",
       r"$\vert\hat\alpha_1 - \alpha_1^\star\vert \le \frac{2W}{\mu}\tau_f + \frac{W+2}{\mu}\tau_v \le "
       r"\epsilon_W/(10Wd)$",
       "id:thm6.1/tolerance-algebra",
       f"test:{T}noisy.py::test_tolerance_is_explicit",
       "id:thm6.1/paper-tolerances",
       depends=("thm6.1/eq3-4",)),
    claim("thm6.1/queries", "Thm 6.1", "query count", "noisy",
       r"$d + d^2$ approximate value queries with $\tau = O(\min\{\mu, \epsilon_v/\sqrt d, "
       r"\mu\epsilon_W/(W^2 d)\})$",
       "bench:noisy d=3",
       f"test:{T}noisy.py::test_tolerance_is_explicit",
       depends=("thm6.1/eq5-6",)),
    claim("thm6.1", "Thm 6.1", "result", "noisy",
       r"Under $\Vert W^\star\Vert_F \le W$, $\Vert v^\star\Vert \le 1$, margin $\mu$: "
       r"$\Vert\hat v - v^\star\Vert \le \epsilon_v$, $\Vert\hat W - W^\star\Vert_F \le \epsilon_W$ "
       r"from AVQ with $O(d^2)$ queries",
       f"test:{T}noisy.py::test_paper_design_has_no_valid_tolerance",
       depends=("lemmaA.1", "thm6.1/eq3-4", "thm6.1/eq5-6", "thm6.1/queries"),
       reason="false as stated (Erratum E1): the erratum's witnesses and the corrected claim "
              "thm6.1/corrected carry the evidence"),
    claim("thm6.1/corrected", "Thm 6.1, corrected (Erratum E1)", "result", "noisy",
       r"Thm 6.1 holds with the paired probes scaled by $1/\sqrt 2$ (and $\tau_v \le \epsilon_v/\sqrt d$)",
       "learner:noisy",
       "id:thm6.1/paired-logit-corrected",
       "id:thm6.1/design-tolerances",
       "id:thm6.1/support-split",
       "id:thm6.1/estimator",
       "id:thm6.1/run-float64",
       f"test:{T}noisy.py::test_corrected_theorem_6_1",
       "bench:noisy d=3 design=corrected",
       "bench:noisy d=4 design=tuned",
       depends=("lemmaA.1", "thm6.1/eq3-4", "thm6.1/eq5-6", "thm6.1/queries")),
], errata=[
    Erratum(
        id="E1",
        claim="thm6.1",
        kind="erratum",
        statement="Thm 6.1's proof, case $v^\\star_i = 0$: the paired probe $u = e_i + e_p$ at the same "
                  "scale $b = 1/W$ keeps the logit in $[-1/2, 1/2]$.",
        counterexample="$W^\\star = [[\\sqrt2, 0], [\\sqrt2, 0]]$, $W = 2$, $v^\\star = (0, 1)$, "
                       "$\\mu = 1/2$: the paired logit is $ab(W_{11} + W_{21}) = \\sqrt2/2 = 0.707 > 1/2$, "
                       "clipping returns "
                       "$2$ instead of $2\\sqrt2$, and $\\|\\hat W - W^\\star\\|_F = 0.83 > \\epsilon_W$ for "
                       "every tolerance, $\\tau = 0$ included.",
        failing_step="'following the same line of analysis': $\\alpha^\\star$ leaves the clipping band, so "
                     "Lemma A.1's premise fails.",
        correction="Scale the paired probes by $1/\\sqrt2$ ($b_{pair} = b/\\sqrt2$): by Cauchy-Schwarz "
                   "$|W_{ij}| + |W_{pj}| \\le \\sqrt2 W$, so the logit is back in $[-1/2, 1/2]$.",
        checks=(f"xfail:{T}noisy.py::test_theorem_6_1_as_stated",
                f"test:{T}noisy.py::test_erratum_e1_fails_for_every_tolerance",
                "id:thm6.1/erratum-E1"),
        corrected="thm6.1/corrected",
        source="attnproof/theorems/noisy.py; book/noisy.md; tests/test_noisy.py (commits 1d105ab, 847a8bf)",
    ),
    Erratum(
        id="S1",
        claim="thm6.1",
        kind="slip",
        statement="Thm 6.1's proof picks a pivot $p$ with $|v^\\star_p| > \\mu$ (strict).",
        counterexample="$v^\\star = (\\mu, 0)$ (every nonzero entry equal to $\\mu$): no such $p$ exists.",
        failing_step="the choice of the pivot $p$ before the paired probes.",
        correction="$|v^\\star_p| \\ge \\mu$ suffices (the margin assumption) and is what the learner uses.",
        checks=(f"test:{T}noisy.py::test_corrected_theorem_6_1",),
        corrected="thm6.1/corrected",
        source="book/noisy.md (commit a85d244)",
    ),
    Erratum(
        id="S2",
        claim="thm6.1",
        kind="slip",
        statement="Thm 6.1's displayed tolerance choice "
                  "$\\tau_v \\le \\min\\{\\mu/2, \\mu\\epsilon_W/(80W^2d)\\}$.",
        counterexample="It omits $\\epsilon_v/\\sqrt d$: for $\\epsilon_v \\ll \\mu\\epsilon_W/(W^2 d)$ the "
                       "$v$ guarantee $\\|\\hat v - v^\\star\\| \\le \\sqrt d\\,\\tau_v \\le \\epsilon_v$ "
                       "is missed.",
        failing_step="'With the choices ... we obtain': the $v$ part needs "
                     "$\\tau_v \\le \\epsilon_v/\\sqrt d$ (stated earlier in the proof, dropped from the "
                     "display).",
        correction="$\\tau_v \\le \\min\\{\\mu/2, \\epsilon_v/\\sqrt d, \\mu\\epsilon_W/(80W^2d)\\}$ "
                   "(computed by `design_tolerances`).",
        checks=("id:thm6.1/tolerance-algebra", f"test:{T}noisy.py::test_corrected_theorem_6_1"),
        corrected="thm6.1/corrected",
        source="book/noisy.md (commit a85d244)",
    ),
])
