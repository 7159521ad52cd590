(* Theorem 6.1 and Theorem B.1 of "Provably Learning Attention with Queries" (arXiv 2601.16873):
   the tolerance algebra, Erratum E1 and its correction, the support split, and App. B's ratio
   error and accuracy algebra with the true Lipschitz constant. Depends on Lipschitz.v (compiled first, logical path AttnProof).

   Registry ID                    | Coq theorem
   -------------------------------+-------------------------------------------
   thm6.1/tolerance-algebra       | thm6_1__tolerance_algebra
   thm6.1/erratum-E1              | thm6_1__erratum_E1
   thm6.1/paired-logit-corrected  | thm6_1__paired_logit_corrected
   thmB.1/accuracy-algebra        | thmB_1__accuracy_algebra
   thmB.1/ratio-error             | thmB_1__ratio_error
   thmB.1/ratio-bound             | thmB_1__ratio_bound
   thm6.1/support-split           | thm6_1__support_split
*)
From Coq Require Import Reals Lra.
From AttnProof Require Import Lipschitz.
Open Scope R_scope.

(* thm6.1/tolerance-algebra (Thm 6.1, proof), scope "scalar (every d)": for all mu, eps_W, d > 0
   and W >= 2, with tau_f = tau_v = mu eps_W / (80 W^2 d), a = 1/2, b = 1/W:
   (2W/mu) tau_f + ((W + 2)/mu) tau_v <= eps_W / (10 W d)  and  (5/(ab)) eps_W / (10 W d) <= eps_W / d.
   Same statement; the registry writes W = 2 + s, s >= 0. (The first inequality needs only
   W >= 2/5: 3W + 2 <= 8W.) *)
Theorem thm6_1__tolerance_algebra (mu eps d W : R) :
  0 < mu -> 0 < eps -> 0 < d -> 2 <= W ->
  let tau := mu * eps / (80 * W ^ 2 * d) in
  let a := 1 / 2 in let b := 1 / W in
  2 * W / mu * tau + (W + 2) / mu * tau <= eps / (10 * W * d)
  /\ 5 / (a * b) * (eps / (10 * W * d)) <= eps / d.
Proof.
  intros Hm He Hd HW tau a b; unfold tau, a, b.
  split.
  - replace (2 * W / mu * (mu * eps / (80 * W ^ 2 * d)) + (W + 2) / mu * (mu * eps / (80 * W ^ 2 * d)))
      with (eps / (10 * W * d) * ((3 * W + 2) / (8 * W))) by (field; lra).
    rewrite <- (Rmult_1_r (eps / (10 * W * d))) at 2.
    apply Rmult_le_compat_l.
    + apply Rlt_le, Rdiv_lt_0_compat; [lra | apply Rmult_lt_0_compat; nra].
    + apply Rmult_le_reg_r with (8 * W); [lra|].
      unfold Rdiv; rewrite Rmult_assoc, Rinv_l by lra; lra.
  - right; field; lra.
Qed.

(* thm6.1/erratum-E1 (Thm 6.1, proof, case v*_i = 0; Erratum E1), scope "a counterexample at
   d = 2": W* = [[sqrt 2, 0], [sqrt 2, 0]] and W = 2 satisfy ||W*||_F <= W, but with the paper's
   a = 1/2, b = 1/W the paired logit a b (W*_11 + W*_21) = sqrt 2 / 2 exceeds the band 1/2.
   Same statement (||W*||_F = sqrt(W11^2 + W12^2 + W21^2 + W22^2) with the zero entries). *)
Theorem thm6_1__erratum_E1 :
  let W11 := sqrt 2 in let W12 := 0 in let W21 := sqrt 2 in let W22 := 0 in
  let W := 2 in let a := 1 / 2 in let b := 1 / W in
  sqrt (W11 ^ 2 + W12 ^ 2 + W21 ^ 2 + W22 ^ 2) <= W
  /\ a * b * (W11 + W21) = sqrt 2 / 2
  /\ a * b * (W11 + W21) > 1 / 2.
Proof.
  intros W11 W12 W21 W22 W a b; unfold b, a, W, W11, W12, W21, W22.
  pose proof (sqrt_pos 2); pose proof (sqrt_sqrt 2 ltac:(lra)) as S.
  assert (S2 : sqrt 2 ^ 2 = 2) by (simpl; rewrite Rmult_1_r; exact S).
  assert (G : 1 < sqrt 2).
  { rewrite <- sqrt_1; apply sqrt_lt_1; lra. }
  split; [|split].
  - replace (sqrt 2 ^ 2 + 0 ^ 2 + sqrt 2 ^ 2 + 0 ^ 2) with (2 * 2) by (rewrite S2; ring).
    rewrite sqrt_square; lra.
  - field.
  - lra.
Qed.

(* thm6.1/paired-logit-corrected (Thm 6.1 corrected, Erratum E1), scope "scalar":
   with b_pair = b / sqrt 2, a = 1/2, b = 2 beta / W:
   |a b_pair (W_ij + W_pj)| <= (a b / sqrt 2) sqrt 2 sqrt(W_ij^2 + W_pj^2) <= a b W = beta.
   The registry checks the two algebraic steps ((X + Y)^2 <= 2 (X^2 + Y^2) for X, Y >= 0 and
   beta - a (b / sqrt 2) sqrt 2 W = 0); here the whole chain for every real W_ij, W_pj with
   W_ij^2 + W_pj^2 <= W^2 (the entries of a W* with ||W*||_F <= W), beta > 0, W > 0. *)
Theorem thm6_1__paired_logit_corrected (Wij Wpj W beta : R) :
  0 < W -> 0 < beta -> Wij ^ 2 + Wpj ^ 2 <= W ^ 2 ->
  let a := 1 / 2 in let b := 2 * beta / W in
  Rabs (a * (b / sqrt 2) * (Wij + Wpj)) <= a * b * W /\ a * b * W = beta.
Proof.
  intros HW Hb HF a b; unfold a, b.
  pose proof (sqrt_lt_R0 2 ltac:(lra)) as P; pose proof (sqrt_sqrt 2 ltac:(lra)) as S.
  assert (CS : Rabs (Wij + Wpj) <= sqrt 2 * W).
  { rewrite <- (Rabs_right (sqrt 2 * W)) by nra.
    apply Rsqr_le_abs_0; rewrite Rsqr_mult, Rsqr_sqrt by lra.
    unfold Rsqr; pose proof (pow2_ge_0 (Wij - Wpj)); nra. }
  split; [|field; lra].
  rewrite !Rabs_mult, (Rabs_right (1 / 2)) by lra.
  rewrite (Rabs_right (2 * beta / W / sqrt 2)).
  2: { apply Rle_ge, Rlt_le, Rdiv_lt_0_compat; [apply Rdiv_lt_0_compat|]; lra. }
  replace (1 / 2 * (2 * beta / W) * W) with (1 / 2 * (2 * beta / W / sqrt 2) * (sqrt 2 * W))
    by (field; lra).
  apply Rmult_le_compat_l; [|exact CS].
  apply Rmult_le_pos; [lra|]; apply Rlt_le, Rdiv_lt_0_compat; [apply Rdiv_lt_0_compat|]; lra.
Qed.

(* App. B, Eqs. (26)-(29): the library's entry_error_bound(W, mu, tau, eps_v) =
   2 W L [2 W (1/mu + Delta) sqrt(2 / (W mu)) tau + Delta / mu],
   Delta = 2 eps_v / (mu (mu - eps_v)) (thmB.1/ratio-bound), at the theorem's
   tau = paper_tau = (eps_W / d) mu^3 Const / (8 L_tau W^2) with Const = TAU_CONST = 1/8 and
   eps_v = paper_eps_v = eps_W mu^3 / (40 W d), is at most eta_W = eps_W / d, for every
   mu in (0, 1], W >= 2, eps_W / d in (0, 1], every Lipschitz constant 0 < L <= 5 of sigma^{-1}
   on the band, and any L_tau >= L used to set tau (the learner: L_tau = L_BAND = 4.26). *)
Lemma accuracy_algebra_general (mu W eps d L Lt : R) :
  0 < mu <= 1 -> 2 <= W -> 0 < d -> 0 < eps -> eps / d <= 1 -> 0 < L <= Lt -> L <= 5 ->
  let tau := eps / d * mu ^ 3 * (1 / 8) / (8 * Lt * W ^ 2) in
  let ev := eps * mu ^ 3 / (40 * W * d) in
  let D := 2 * ev / (mu * (mu - ev)) in
  2 * W * L * (2 * W * (1 / mu + D) * sqrt (2 / (W * mu)) * tau + D / mu) <= eps / d.
Proof.
  intros [Hm Hm1] HW Hd He Hed [HL HLt] HL5 tau ev D.
  set (e := eps / d) in *.
  assert (He0 : 0 < e) by (apply Rdiv_lt_0_compat; lra).
  set (s := sqrt (2 / (W * mu))).
  assert (Hs0 : 0 <= s) by apply sqrt_pos.
  assert (Hs2 : s * s = 2 / (W * mu)) by (apply sqrt_sqrt, Rlt_le, Rdiv_lt_0_compat; nra).
  set (g := e * mu ^ 2 / (40 * W)).
  assert (Hg0 : 0 < g)
    by (apply Rdiv_lt_0_compat; [apply Rmult_lt_0_compat; [lra | apply pow_lt; lra] | lra]).
  assert (Hg1 : g <= 1 / 80).
  { unfold g; apply Rmult_le_reg_r with (40 * W); [lra|].
    unfold Rdiv; rewrite Rmult_assoc, Rinv_l by lra.
    assert (mu ^ 2 <= 1) by nra. nra. }
  assert (Hev : ev = g * mu) by (unfold ev, g, e; field; lra).
  assert (Hem : e * mu ^ 2 <= 1) by (assert (mu ^ 2 <= 1) by nra; nra).
  assert (E : 2 * W * L * (2 * W * (1 / mu + D) * s * tau + D / mu)
              = e / (1 - g) * ((L / Lt) * (mu ^ 2 * s) * (1 + g) / 16 + L / 10)).
  { unfold D, tau; rewrite Hev; unfold g; field; repeat split; try lra.
    replace (mu * (40 * W) - e * mu ^ 2 * mu) with (mu * (40 * W - e * mu ^ 2)) by ring.
    apply Rmult_integral_contrapositive_currified; lra. }
  rewrite E.
  (* mu^2 s <= 1: (mu^2 s)^2 = 2 mu^3 / W <= mu^3 <= 1. *)
  assert (Hq : mu ^ 2 * s <= 1).
  { assert (Q2 : (mu ^ 2 * s) * (mu ^ 2 * s) = 2 * mu ^ 3 / W)
      by (replace ((mu ^ 2 * s) * (mu ^ 2 * s)) with (mu ^ 4 * (s * s)) by ring;
          rewrite Hs2; field; lra).
    assert (2 * mu ^ 3 / W <= 1).
    { apply Rmult_le_reg_r with W; [lra|]; unfold Rdiv; rewrite Rmult_assoc, Rinv_l by lra.
      assert (mu ^ 3 <= 1) by (assert (mu ^ 2 <= 1) by nra; nra). nra. }
    assert (0 <= mu ^ 2 * s) by (apply Rmult_le_pos; [apply pow2_ge_0 | exact Hs0]).
    nra. }
  assert (Hr : 0 < L / Lt <= 1).
  { split; [apply Rdiv_lt_0_compat; lra|].
    apply Rmult_le_reg_r with Lt; [lra|]; unfold Rdiv; rewrite Rmult_assoc, Rinv_l by lra; lra. }
  assert (HX : L / Lt * (mu ^ 2 * s) * (1 + g) / 16 + L / 10 <= 1 - g).
  { assert (0 <= mu ^ 2 * s) by (apply Rmult_le_pos; [apply pow2_ge_0 | exact Hs0]).
    assert (L / Lt * (mu ^ 2 * s) <= 1) by nra. nra. }
  unfold Rdiv at 1; rewrite Rmult_assoc.
  rewrite <- (Rmult_1_r e) at 2; apply Rmult_le_compat_l; [lra|].
  rewrite Rmult_comm; apply Rmult_le_reg_r with (1 - g); [lra|].
  rewrite Rmult_assoc, Rinv_l, Rmult_1_l, Rmult_1_r by lra.
  exact HX.
Qed.

(* thmB.1/accuracy-algebra (App. B, Eqs. (26)-(29)), with the true Lipschitz constant:
   the registry checks, by interval arithmetic over the whole box, the library's chain with
   L = L_BAND = 4.26 both in tau and in the error, plus 4.26 >= 2 + 2 cosh(1/2). Here, for every
   mu in (0, 1], W >= 2, eps_W / d in (0, 1], the error bound with the TRUE constant
   L = 1 / (sigma(-1/2) sigma(1/2)) = 2 + 2 cosh(1/2) (Lemma A.1) is at most eps_W / d both when tau
   is set with that L and when tau is set with the learner's L_BAND = 213/50 = 4.26; and the
   library's own chain with L = 4.26 in both places (the registry's statement) holds too. *)
Theorem thmB_1__accuracy_algebra (mu W eps d : R) :
  0 < mu <= 1 -> 2 <= W -> 0 < d -> 0 < eps -> eps / d <= 1 ->
  let error L Lt :=
    let tau := eps / d * mu ^ 3 * (1 / 8) / (8 * Lt * W ^ 2) in
    let ev := eps * mu ^ 3 / (40 * W * d) in
    let D := 2 * ev / (mu * (mu - ev)) in
    2 * W * L * (2 * W * (1 / mu + D) * sqrt (2 / (W * mu)) * tau + D / mu) in
  let L := lipschitz band_corrected in
  L <= 213 / 50
  /\ error L L <= eps / d /\ error L (213 / 50) <= eps / d /\ error (213 / 50) (213 / 50) <= eps / d.
Proof.
  intros Hm HW Hd He Hed error L.
  destruct lemmaA_1__lipschitz_bound as [Hband [[_ Hhi] _]].
  assert (HL : 4 <= L <= 213 / 50).
  { split; [apply (Hband (1 / 2)); lra | unfold L; lra]. }
  split; [lra|]; unfold error.
  repeat split; apply accuracy_algebra_general; lra.
Qed.


(* thmB.1/ratio-error (App. B, Delta_alpha display), scope "scalar":
   (v_j + Delta_j) / (v_i + Delta_i) - v_j / v_i = (v_i Delta_j - v_j Delta_i) / (v_i (v_i + Delta_i))
   for v_i and v_i + Delta_i nonzero. Same statement and scope. *)
Theorem thmB_1__ratio_error (vi vj Di Dj : R) :
  vi <> 0 -> vi + Di <> 0 -> (vj + Dj) / (vi + Di) - vj / vi = (vi * Dj - vj * Di) / (vi * (vi + Di)).
Proof. intros H1 H2; field; split; assumption. Qed.

(* thmB.1/ratio-bound (App. B, Delta_alpha display), scope "scalar":
   |Delta_alpha| <= (|v_i| + |v_j|) eps_v / (|v_i| (|v_i| - eps_v)) <= 2 eps_v / (mu (mu - eps_v))
   <= 4 eps_v / mu^2 (the last step when eps_v <= mu / 2), for |v_i| >= mu, |v_j| <= 1, mu <= 1,
   0 < eps_v < mu. The registry checks the three algebraic steps (monotone in |v_i|, mu + 1 <= 2,
   the last inequality); here the chain from ratio_error's numerator bound
   |v_i Delta_j - v_j Delta_i| <= (|v_i| + |v_j|) eps_v and |v_i + Delta_i| >= |v_i| - eps_v. *)
Theorem thmB_1__ratio_bound (ai aj mu eps : R) :
  mu <= ai -> 0 <= aj <= 1 -> mu <= 1 -> 0 < eps < mu ->
  (ai + aj) * eps / (ai * (ai - eps)) <= 2 * eps / (mu * (mu - eps))
  /\ (eps <= mu / 2 -> 2 * eps / (mu * (mu - eps)) <= 4 * eps / mu ^ 2).
Proof.
  intros Hai Haj Hmu Heps.
  assert (P1 : 0 < ai * (ai - eps)) by nra.
  assert (P2 : 0 < mu * (mu - eps)) by nra.
  split.
  - apply Rmult_le_reg_r with (ai * (ai - eps) * (mu * (mu - eps))); [nra|].
    replace ((ai + aj) * eps / (ai * (ai - eps)) * (ai * (ai - eps) * (mu * (mu - eps))))
      with ((ai + aj) * eps * (mu * (mu - eps))) by (field; lra).
    replace (2 * eps / (mu * (mu - eps)) * (ai * (ai - eps) * (mu * (mu - eps))))
      with (2 * eps * (ai * (ai - eps))) by (field; lra).
    apply Rmult_le_reg_r with (/ eps); [apply Rinv_0_lt_compat; lra|].
    replace ((ai + aj) * eps * (mu * (mu - eps)) * / eps) with ((ai + aj) * (mu * (mu - eps))) by (field; lra).
    replace (2 * eps * (ai * (ai - eps)) * / eps) with (2 * (ai * (ai - eps))) by (field; lra).
    (* with M = mu (mu - eps): (ai + aj) M <= ai M + M, ai M <= ai (ai - eps) as M <= ai - eps,
       and M <= ai (ai - eps) as x (x - eps) grows for x >= mu > eps *)
    set (M := mu * (mu - eps)) in *.
    assert (F1 : M <= ai * (ai - eps)) by (unfold M; nra).
    assert (F2 : M <= ai - eps) by (unfold M; nra).
    assert (ai * M <= ai * (ai - eps)) by (apply Rmult_le_compat_l; lra).
    assert (aj * M <= M) by nra.
    nra.
  - intro Hh.
    apply Rmult_le_reg_r with (mu ^ 2 * (mu - eps)); [nra|].
    replace (2 * eps / (mu * (mu - eps)) * (mu ^ 2 * (mu - eps))) with (2 * eps * mu) by (field; lra).
    replace (4 * eps / mu ^ 2 * (mu ^ 2 * (mu - eps))) with (4 * eps * (mu - eps)) by (field; lra).
    nra.
Qed.

(* thm6.1/support-split (Thm 6.1, proof: approximating v-star), scope "scalar": with
   0 <= tau < mu / 2 and theta = mu / 2, an estimate |v_hat_i - v*_i| <= tau classifies every entry:
   v*_i = 0 => |v_hat_i| <= tau < theta; |v*_i| >= mu => |v_hat_i| >= mu - tau > theta.
   The registry evaluates the learner's support_threshold on a symbol (theta = mu/2 there) and
   checks theta - tau > 0 and (mu - tau) - theta > 0; here theta = mu / 2 and the classification. *)
Theorem thm6_1__support_split (mu tau vhat vstar : R) :
  0 < mu -> 0 <= tau < mu / 2 -> Rabs (vhat - vstar) <= tau ->
  (vstar = 0 -> Rabs vhat <= tau < mu / 2)
  /\ (mu <= Rabs vstar -> mu / 2 < mu - tau <= Rabs vhat).
Proof.
  intros Hmu Htau Hd; split.
  - intros ->; rewrite Rminus_0_r in Hd; lra.
  - intro Hv; split; [lra|].
    pose proof (Rabs_triang_inv vstar (vstar - vhat)) as T.
    replace (vstar - (vstar - vhat)) with vhat in T by ring.
    rewrite Rabs_minus_sym in Hd; lra.
Qed.
