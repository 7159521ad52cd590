"""The paper's claims and errata, as data, with a small registration API.

*Provably Learning Attention with Queries* (Bhattamishra et al., arXiv 2601.16873) states
numbered results (Thm 4.1, Sec. 4.1's reduction, Thm 5.1 with the cited Thm A.2 and Def. 2.1 of
Cai and Zhang, Thm 6.1, Lemma A.1, Prop. 7.1, Thm B.1, Assumption C.1, Prop. C.2 and the App. C
conjecture), displayed equations its proofs rely on, query counts and probability statements.
:data:`CLAIMS` lists them with stable IDs, :data:`ERRATA` every erratum and slip found; each links
to checks written as one string each (:mod:`attnproof.verify.evidence` reads them), so that adding
a link is a one-line change.  :func:`register_claim` and :func:`register_erratum` add more (a
room can register its own claims next to its learner).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import AttnproofError

@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or a claim the project adds beyond it).

    Attributes
    ----------
    id : str
        Stable ID, ``<result>`` or ``<result>/<part>`` (never renumbered).
    paper : str
        Where the paper states it (``"Thm 4.1, Eq. (1)"``).
    kind : str
        ``result``, ``definition``, ``equation``, ``query count``, ``probability``,
        ``assumption``, ``cited``, ``conjecture`` or ``beyond the paper``.
    statement : str
        The claim in one line (Markdown, inline math allowed).
    chapter : str
        The book chapter that discusses it (a docname of ``book/``).
    checks : tuple of str
        Linked checks (see the module docstring).
    depends : tuple of str
        Claims this one rests on.
    reason : str
        Why it has fewer than two independent kinds of check (or none), when it has.
    open : bool
        A conjecture: its status is *open* whatever its supporting checks say (a failing
        supporting check still fails it).
    """

    id: str
    paper: str
    kind: str
    statement: str
    chapter: str
    checks: tuple[str, ...] = ()
    depends: tuple[str, ...] = ()
    reason: str = ""
    open: bool = False


@dataclass(frozen=True)
class Erratum:
    """An erratum (the claim as stated is false) or a slip (a step is wrong, the claim holds).

    ``checks`` witness the counterexample (for an erratum) or prove the corrected step (for a
    slip); ``corrected`` names the claim that states the correction, whose status is reported.
    """

    id: str
    claim: str
    kind: str  # "erratum", "slip" or "typo"
    statement: str
    counterexample: str
    failing_step: str
    correction: str
    checks: tuple[str, ...]
    corrected: str = ""
    source: str = ""


def claim(id: str, paper: str, kind: str, chapter: str, statement: str, *checks: str,
       depends: Sequence[str] = (), reason: str = "", open: bool = False) -> Claim:
    """A :class:`Claim`, its check links written one per argument (one line each in the data)."""
    return Claim(id, paper, kind, statement, chapter, tuple(checks), tuple(depends), reason, open)


T = "tests/test_"  # node IDs below are relative to the repository root

#: Every claim of the paper, in the paper's order, plus the corrections and the claims the
#: project adds beyond it.  One link per line: adding a check is a one-line change.
CLAIMS: list[Claim] = [
    # --- Sec. 3: definitions --------------------------------------------------------------
    claim("sec3/model", "Sec. 3", "definition", "intro",
       r"$f_{W,v}(X) = \alpha(X, W)^\top X v$ with $\alpha = \mathrm{softmax}(x_i^\top W x_N)_i$",
       f"test:{T}models.py::test_float_model_matches_mpmath_reference",
       f"test:{T}models.py::test_batch_equals_one_by_one",
       reason="a definition: checked by two independent implementations (float64 vs an mpmath reference)"),
    claim("sec3/qkv-merge", "Sec. 3", "equation", "intro",
       r"$x_i^\top K^\top Q x_N = x_i^\top W x_N$ and $X V^\top w_o = X v$",
       "id:sec3/qkv-merge",
       "id:sec3/qkv-merge-all-d",
       f"test:{T}models.py::test_from_qkv_merges_as_in_sec3",
       depends=("sec3/model",)),
    # --- Thm 4.1 --------------------------------------------------------------------------
    claim("thm4.1/phase-i", "Thm 4.1, proof (i)", "equation", "exact",
       r"$f([x^\top]) = x^\top v$, independent of $W$: $d$ one-row queries give $v^\star$",
       "id:thm4.1/one-token",
       f"test:{T}models.py::test_one_token_is_linear_and_ignores_W",
       depends=("sec3/model",)),
    claim("thm4.1/eq1", "Thm 4.1, Eq. (1)", "equation", "exact",
       r"$\alpha(u; j) = \sigma(s_1 - s_2) = \sigma(u^\top w_j)$ for $X = [(u + e_j)^\top; e_j^\top]$",
       "id:thm4.1/softmax-to-sigmoid",
       "id:thm4.1/score-difference",
       "id:thm4.1/probes-all-d",
       f"test:{T}measure.py::test_session_measures_p_W_q_within_its_error_model",
       depends=("sec3/model",)),
    claim("thm4.1/label", "Thm 4.1, proof (ii)", "equation", "exact",
       r"$y = v_j + \alpha(u; j)\, u^\top v$, so $u^\top w_j = \sigma^{-1}((y - v_j)/u^\top v)$",
       "id:thm4.1/label-affine",
       f"test:{T}measure.py::test_session_measurements_are_exact_in_mpmath_to_the_working_precision",
       depends=("thm4.1/eq1",)),
    claim("thm4.1/basis-probes", "Thm 4.1, proof (ii)", "equation", "exact",
       r"$u_\ell = e_\ell$ if $v_\ell \ne 0$, else $e_\ell + e_p$: $t_\ell = W_{\ell j}$ or "
       r"$W_{\ell j} + W_{pj}$",
       f"test:{T}exact.py::test_sparse_v_uses_the_papers_paired_probes",
       "id:thm4.1/end-to-end-paired",
       "bench:exact d=4 probes=basis",
       depends=("thm4.1/label",)),
    claim("thm4.1/gaussian-probes", "Thm 4.1, proof (ii)", "probability", "exact",
       r"Gaussian $u_1, \dots, u_d$ are independent with $u_\ell^\top v \ne 0$ almost surely",
       f"test:{T}exact.py::test_degenerate_gaussian_row_is_redrawn_and_reported",
       "bench:exact d=16 probes=gaussian",
       depends=("thm4.1/label",)),
    claim("thm4.1/queries", "Thm 4.1", "query count", "exact",
       r"$d + d^2$ value queries",
       "id:thm4.1/query-count",
       f"test:{T}exact.py::test_exactly_d_plus_d2_queries_when_no_probe_saturates",
       "bench:exact d=8",
       depends=("thm4.1/phase-i",)),
    claim("thm4.1/v-zero", "Thm 4.1, proof", "result", "exact",
       r"If $v^\star = 0$ then $f \equiv 0$ and $W^\star$ is not identifiable",
       f"test:{T}exact.py::test_v_zero_is_not_identifiable",
       f"test:{T}strategies.py::test_zero_v_targets",
       reason="a negative statement: shown by the learner's typed refusal on v* = 0 targets"),
    claim("thm4.1", "Thm 4.1", "result", "exact",
       r"For $v^\star \ne 0$, $(W^\star, v^\star)$ is exactly learnable in polynomial time with "
       r"$O(d^2)$ value queries",
       "learner:exact",
       "id:thm4.1/end-to-end-d2",
       "id:thm4.1/end-to-end-d3",
       "id:thm4.1/end-to-end-bias",
       "id:bias/expansion-all-d",
       "id:thm4.1/run-high-precision",
       f"test:{T}exact.py::test_sympy_recovery_is_exact",
       f"test:{T}exact.py::test_float64_recovery_within_derived_bound",
       "bench:exact d=8",
       "bench:exact d=6 arith=mp:60",
       depends=("thm4.1/phase-i", "thm4.1/eq1", "thm4.1/label", "thm4.1/basis-probes",
                "thm4.1/gaussian-probes", "thm4.1/queries")),
    # --- Sec. 4.1 -------------------------------------------------------------------------
    claim("sec4.1/ffn-restriction", "Sec. 4.1", "equation", "transformer",
       r"$\mathrm{VQ}([x^\top]) = w_o^\top \mathrm{ReLU}(x^\top A)$: length-1 queries see the FFN",
       f"test:{T}transformer.py::test_ffn_float64_recovers_every_kind",
       "bench:ffn d=3",
       depends=("sec3/model",)),
    claim("sec4.1/antisymmetry", "Sec. 4.1", "equation", "transformer",
       r"$\widetilde{\mathrm{VQ}}(X) = \mathrm{VQ}(X) - \mathrm{VQ}(-X) = \alpha(X, W)^\top X v$, "
       r"$v = A w_o$",
       "id:sec4.1/relu-as-abs",
       "id:sec4.1/relu-antisymmetry",
       f"test:{T}transformer.py::test_even_ffn_hides_W_from_vq_tilde_but_not_from_vq",
       depends=("sec3/model",)),
    claim("sec4.1/a-ffn", "Sec. 4.1 (assumed algorithm; built beyond the paper)", "beyond the paper",
       "transformer",
       r"An $\mathcal{A}_{\mathrm{FFN}}$ learning a bias-free ReLU FFN exactly from value queries",
       "learner:ffn",
       "id:sec4.1/ffn-end-to-end",
       f"test:{T}transformer.py::test_ffn_sympy_is_exact",
       "bench:ffn d=3",
       "bench:ffn d=3 arith=mp:60",
       depends=("sec4.1/ffn-restriction",)),
    claim("sec4.1/v-zero", "Sec. 4.1", "result", "transformer",
       r"If $A^\star w_o^\star = 0$ then $\widetilde{\mathrm{VQ}} \equiv 0$ and $W^\star$ is not "
       r"identifiable from such queries",
       f"test:{T}transformer.py::test_transformer_with_zero_ffn_is_not_identifiable",
       "id:sec4.1/cone-probe",
       depends=("sec4.1/antisymmetry",)),
    claim("sec4.1/queries", "Sec. 4.1", "query count", "transformer",
       r"$Q_{\mathrm{FFN}}(d, m) + O(d^2)$: each $\widetilde{\mathrm{VQ}}$ costs two value queries",
       f"test:{T}transformer.py::test_ffn_query_ledger_explains_every_extra_query",
       "bench:transformer d=3",
       depends=("thm4.1/queries",)),
    claim("sec4.1", "Sec. 4.1", "result", "transformer",
       r"A one-layer single-head Transformer is learnable from value queries given "
       r"$\mathcal{A}_{\mathrm{FFN}}$ (Thm 4.1 on $\widetilde{\mathrm{VQ}}$)",
       "learner:transformer",
       "id:sec4.1/end-to-end",
       "id:sec4.1/run-high-precision",
       f"test:{T}transformer.py::test_transformer_sympy_exact_both_routes",
       f"test:{T}transformer.py::test_transformer_float64",
       "bench:transformer d=3",
       "bench:transformer d=3 arith=mp:60",
       depends=("sec4.1/antisymmetry", "sec4.1/a-ffn", "sec4.1/queries", "thm4.1")),
    # --- Thm 5.1, Thm A.2, Def. 2.1 --------------------------------------------------------
    claim("def2.1", "App. A.1 (Cai and Zhang 2015, Def. 2.1)", "cited", "lowrank",
       r"Restricted uniform boundedness (RUB) of the ROP operator $\mathcal{A}$",
       reason="a property of random operators that the library does not compute; Thm A.2 is "
              "measured through the nuclear-norm learner instead"),
    claim("thmA.2", "Thm A.2 (Cai and Zhang 2015, Thm 2.2, Cor. 2.1)", "cited", "lowrank",
       r"With $m = \Omega(r(d_1 + d_2))$ Gaussian rank-one projections, w.p. $1 - e^{-\Omega(m)}$ "
       r"the nuclear-norm program (7) recovers every rank-$\le r$ matrix",
       f"test:{T}lowrank.py::test_nuclear_norm_learner_recovers_a_small_target",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       depends=("def2.1",)),
    claim("thm5.1/measurement", "Thm 5.1, proof", "equation", "lowrank",
       r"$X = [(a + b)^\top; b^\top]$: $\alpha = \sigma(a^\top W b)$, "
       r"$t = \sigma^{-1}((y - b^\top v)/a^\top v) = \langle a b^\top, W \rangle$",
       "id:thm5.1/rank-one-measurement",
       "id:thm5.1/rank-one-all-d",
       f"test:{T}measure.py::test_probe_batch_builds_the_documented_tokens",
       depends=("thm4.1/eq1", "thm4.1/label")),
    claim("thm5.1/a-not-perp-v", "Thm 5.1, proof", "probability", "lowrank",
       r"$a^\top v^\star \ne 0$ almost surely for Gaussian $a$ when $v^\star \ne 0$",
       f"test:{T}lowrank.py::test_cvx_redraws_probes_with_a_orthogonal_to_v",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       depends=("thm5.1/measurement",)),
    claim("thm5.1/eq2", "Thm 5.1, Eq. (2)", "equation", "lowrank",
       r"$\hat W \in \arg\min \Vert W\Vert_*$ s.t. $\langle a_k b_k^\top, W \rangle = t_k$: convex, "
       r"polynomial time",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       f"test:{T}lowrank.py::test_nuclear_norm_learner_recovers_a_small_target",
       depends=("thm5.1/measurement",)),
    claim("thm5.1/queries", "Thm 5.1", "query count", "lowrank",
       r"$d + m$ queries with $m = O(rd)$",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       f"test:{T}bench.py::test_queries_are_the_learners_formula_plus_counted_reasks",
       depends=("thm4.1/phase-i",)),
    claim("thm5.1", "Thm 5.1", "result", "lowrank",
       r"For $v^\star \ne 0$ and rank $W^\star \le r$, w.p. $\ge 1 - e^{-\Omega(m)}$ exact recovery "
       r"with $d + m$ queries, $m = O(rd)$",
       "learner:lowrank-cvx",
       "id:thm5.1/run-cvx",
       f"test:{T}lowrank.py::test_nuclear_norm_learner_recovers_a_small_target",
       "bench:lowrank-cvx d=4 rank=1 tol=1e-6",
       depends=("thmA.2", "thm5.1/measurement", "thm5.1/a-not-perp-v", "thm5.1/eq2", "thm5.1/queries"),
       reason="the probability 1 - exp(-Omega(m)) is the cited Thm A.2's, with an unstated constant: "
              "measured, not proven"),
    claim("thm5.1/skeleton", "beyond Thm 5.1", "beyond the paper", "lowrank",
       r"Deterministic exact recovery at the floor $d + r(2d - r)$ queries (cross approximation)",
       "learner:skeleton",
       "id:thm5.1/skeleton-reconstruction",
       "id:thm5.1/skeleton-end-to-end",
       "id:thm5.1/run-high-precision",
       "id:thm5.1/query-count",
       f"test:{T}lowrank.py::test_skeleton_uses_exactly_the_floor_and_is_accurate",
       f"test:{T}lowrank.py::test_skeleton_is_exact_in_mpmath",
       "bench:skeleton d=6 rank=2",
       "bench:skeleton d=6 rank=2 arith=mp:60",
       depends=("thm5.1/measurement",)),
    # --- Lemma A.1 and Thm 6.1 ------------------------------------------------------------
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
    # --- Prop. 7.1 and Sec. 7 --------------------------------------------------------------
    claim("prop7.1", "Prop. 7.1", "result", "multihead",
       r"Equal $W^{(h)} = A$ and $v^{(h)} = \lambda_h b$ with $\sum \lambda_h = 1$ give the same "
       r"function: multi-head attention is not identifiable",
       "id:prop7.1/multihead-collapse",
       "id:prop7.1/collapse-all-d",
       f"test:{T}multihead.py::test_equivalent_pairs_compute_the_same_function",
       f"test:{T}multihead.py::test_equivalent_pairs_agree_to_mpmath_precision",
       depends=("appC/merge",)),
    claim("sec7/short-inputs", "Sec. 7 (beyond the paper)", "beyond the paper", "multihead",
       r"On inputs of length $\le 2$ the heads $(W, v), (-W, v)$ equal the single head $(0, 2v)$",
       "id:sec7/short-input-decomposition",
       "id:sec7/short-input-flip",
       "id:sec7/short-input-collapse",
       f"test:{T}multihead.py::test_collapse_pair_equal_below_three_tokens_differs_at_three",
       depends=("appC/merge",)),
    # --- App. C ---------------------------------------------------------------------------
    claim("appC/merge", "App. C", "equation", "multihead",
       r"$f^H_\theta(X) = \sum_h \alpha^{(h)}(X, W^{(h)})^\top X v^{(h)}$, "
       r"$v^{(h)} = V^{(h)\top} w_o^{(h)}$",
       f"test:{T}models.py::test_transformer_and_multihead_shapes_and_values",
       "id:prop7.1/symmetries",
       depends=("sec3/model",)),
    claim("assumptionC.1", "Assumption C.1", "assumption", "multihead",
       r"Heads in pairwise orthogonal subspaces: $P_g W^{(h)} = W^{(h)} P_g = 0$, "
       r"$v^{(h)} \in U_h \setminus \{0\}$",
       f"test:{T}multihead.py::test_c1_violation_is_never_silently_recovered",
       f"test:{T}multihead.py::test_bad_bases_raise_typed_errors",
       reason="an assumption: checked by the learner's refusal of targets that violate it"),
    claim("propC.2/reduction", "Prop. C.2, proof", "equation", "multihead",
       r"On inputs in $U_h$ only head $h$ contributes, as the single head "
       r"$(E_h^\top W^{(h)} E_h, E_h^\top v^{(h)})$ in dimension $d_h$",
       "id:propC.2/one-head",
       "id:propC.2/reduced-head",
       f"test:{T}multihead.py::test_reduced_oracle_counts_every_query_in_both_places",
       depends=("assumptionC.1", "appC/merge")),
    claim("propC.2/queries", "Prop. C.2, proof", "query count", "multihead",
       r"$\sum_h (d_h + d_h^2)$ queries when the bases are known",
       f"test:{T}multihead.py::test_orthogonal_heads_exact_query_count_without_checks",
       "bench:orthogonal-heads d=4",
       depends=("thm4.1/queries",)),
    claim("propC.2", "Prop. C.2", "result", "multihead",
       r"Under Assumption C.1 multi-head attention is identifiable, uniquely up to a permutation of "
       r"the heads",
       "learner:orthogonal-heads",
       "id:propC.2/end-to-end",
       "id:propC.2/run-high-precision",
       f"test:{T}multihead.py::test_orthogonal_heads_sympy_is_exact",
       f"test:{T}multihead.py::test_orthogonal_heads_float64_within_bound",
       "bench:orthogonal-heads d=4",
       "bench:orthogonal-heads d=4 arith=mp:60",
       depends=("propC.2/reduction", "propC.2/queries", "thm4.1")),
    claim("appC/hessian", "App. C, conjecture", "equation", "multihead",
       r"$\nabla^2 F = U D_2 U^\top + U D_1 V^\top + (U D_1 V^\top)^\top$ and "
       r"$4 \nabla^2 F(0) = U V^\top + V U^\top$",
       "id:sec7/probe-hessian",
       "id:sec7/hessian-at-zero",
       f"test:{T}multihead.py::test_fd_hessian_matches_closed_form_and_counts_queries",
       depends=("appC/merge",)),
    claim("appC/invariance", "App. C, conjecture", "equation", "multihead",
       r"Each $A^{(j)} = U^{(j)} V^\top + V U^{(j)\top}$ leaves every $S_i$ invariant (block-diagonal "
       r"in a basis of the subspaces)",
       "id:sec7/hessian-invariant",
       f"test:{T}multihead.py::test_commutant_recovers_subspaces_from_max_2_dh_minus_1_hessians",
       depends=("appC/hessian", "assumptionC.1")),
    claim("appC/conjecture", "App. C, conjecture", "conjecture", "multihead",
       r"Under Assumption C.1 multi-head attention is learnable from value (or Hessian) queries",
       "learner:multihead-sbd",
       "id:sec7/run-sbd",
       f"test:{T}multihead.py::test_sbd_end_to_end_float64_and_mpmath",
       "bench:multihead-sbd d=4 tol=1e-5",
       depends=("appC/invariance", "propC.2"),
       open=True),
    # --- App. B: Thm B.1 ------------------------------------------------------------------
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
]

#: Every erratum and slip found in the paper, with the checks that witness it.
ERRATA: list[Erratum] = [
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
]


def register_claim(c: Claim) -> Claim:
    """Add the claim ``c`` to :data:`CLAIMS` (after the claims registered before it).

    Raises
    ------
    AttnproofError
        If a claim of that ID is already registered (IDs are stable and unique).
    """
    if any(x.id == c.id for x in CLAIMS):
        raise AttnproofError(f"claim {c.id!r} is registered twice")
    CLAIMS.append(c)
    return c


def register_erratum(e: Erratum) -> Erratum:
    """Add the erratum ``e`` to :data:`ERRATA`.

    Raises
    ------
    AttnproofError
        If an erratum of that ID is already registered.
    """
    if any(x.id == e.id for x in ERRATA):
        raise AttnproofError(f"erratum {e.id!r} is registered twice")
    ERRATA.append(e)
    return e


__all__ = ["Claim", "Erratum", "claim", "CLAIMS", "ERRATA", "register_claim", "register_erratum"]
