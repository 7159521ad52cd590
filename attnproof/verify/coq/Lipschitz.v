(* Lemma A.1 of "Provably Learning Attention with Queries" (arXiv 2601.16873): the Lipschitz
   constant of sigma^{-1} on the clipping band, kernel-checked with Coquelicot and Coq Interval.

   Registry ID                    | Coq theorem
   -------------------------------+-------------------------------------------
   lemmaA.1/lipschitz-closed-form | lemmaA_1__lipschitz_closed_form
   lemmaA.1/logit-derivative      | lemmaA_1__logit_derivative
   lemmaA.1/lipschitz-bound       | lemmaA_1__lipschitz_bound
   thm6.1/optimal-beta            | thm6_1__optimal_beta
*)
From Coq Require Import Reals Lra.
From Coquelicot Require Import Coquelicot.
From Interval Require Import Tactic.
From AttnProof Require Import Defs.
Open Scope R_scope.

(* Lemma A.1's constant at logit band beta: L(beta) = 1 / (tau_clip (1 - tau_clip)),
   tau_clip = sigma(-beta). *)
Definition lipschitz (beta : R) : R := / (sigma (- beta) * (1 - sigma (- beta))).

(* lemmaA.1/lipschitz-closed-form (Lemma A.1, generalised), scope "scalar":
   1 / (sigma(-beta) (1 - sigma(-beta))) = 2 + 2 cosh(beta), every real beta.
   Same statement and scope as the registry. *)
Theorem lemmaA_1__lipschitz_closed_form (beta : R) : lipschitz beta = 2 + 2 * cosh beta.
Proof.
  unfold lipschitz, sigma, cosh; rewrite Ropp_involutive.
  pose proof (exp_pos beta) as P; rewrite exp_Ropp.
  assert (Q : 0 < / exp beta) by (apply Rinv_0_lt_compat; exact P).
  field; repeat split; lra.
Qed.

(* L(beta) >= L(0) = 4 for every real beta: exp beta + exp(-beta) >= 2. *)
Lemma lipschitz_ge_4 (beta : R) : 4 <= lipschitz beta.
Proof.
  rewrite lemmaA_1__lipschitz_closed_form; unfold cosh; rewrite exp_Ropp.
  pose proof (exp_pos beta) as P; set (x := exp beta) in *.
  assert (E : x + / x - 2 = (x - 1) ^ 2 / x) by (field; lra).
  assert (0 <= (x - 1) ^ 2 / x) by (unfold Rdiv; apply Rmult_le_pos; [apply pow2_ge_0 | left; apply Rinv_0_lt_compat; lra]).
  lra.
Qed.

(* The logit sigma^{-1}(p) = ln(p / (1 - p)). *)
Definition logit (p : R) : R := ln (p / (1 - p)).

(* lemmaA.1/logit-derivative (Lemma A.1, proof), scope "scalar":
   d/dp sigma^{-1}(p) = 1 / (p (1 - p)) on (0, 1).
   Same statement and scope (Coquelicot's is_derive: the derivative exists and has this value). *)
Theorem lemmaA_1__logit_derivative (p : R) :
  0 < p < 1 -> is_derive logit p (/ (p * (1 - p))).
Proof.
  intros [H0 H1]; unfold logit.
  auto_derive.
  - repeat split; [lra | apply Rdiv_lt_0_compat; lra].
  - field; lra.
Qed.

(* The designs' float64 logit bands as the exact rationals they are:
   PAPER and CORRECTED: band = 0.5 = 1/2;
   TUNED: band = BETA_STAR = 2.3993572805154675 = 5402872277229073 / 2^51. *)
Definition band_corrected : R := 1 / 2.
Definition band_tuned : R := 5402872277229073 / 2 ^ 51.

(* The float64 constants the learner uses (ProbeDesign.lipschitz, ProbeDesign.clip), exactly:
   corrected: L = 4.255251930412761 = 598873469005453 / 2^47,
              clip = 0.3775406687981454 = 3400584030633071 / 2^53;
   tuned:     L = 13.106870124912287 = 3689255963159279 / 2^48,
              clip = 0.08322172019951767 = 5996756929274871 / 2^56. *)
Definition L_float_corrected : R := 598873469005453 / 2 ^ 47.
Definition clip_float_corrected : R := 3400584030633071 / 2 ^ 53.
Definition L_float_tuned : R := 3689255963159279 / 2 ^ 48.
Definition clip_float_tuned : R := 5996756929274871 / 2 ^ 56.

(* The registry's tolerance for a float64 constant: 8 roundings, 8 u |exact|, u = 2^-53. *)
Definition close8 (value exact : R) : Prop := Rabs (value - exact) <= 8 / 2 ^ 53 * Rabs exact.

(* lemmaA.1/lipschitz-bound (Lemma A.1), scope "scalar (every design's band)":
   (i) L(beta) <= 5 on the whole band 0 <= beta <= 1/2 (the registry: at beta = 1/2 only,
       4 <= L(1/2) <= 5; here 4 <= L(beta) <= 5 for every beta in [0, 1/2]: L(0) = 4);
   (ii) enclosures of L at both designs' exact float64 bands to about 19 digits;
   (iii) the learner's float64 L and tau_clip = sigma(-band) of both designs are the exact values
        to 8 roundings (the registry's comparison, here against the real numbers themselves). *)
Theorem lemmaA_1__lipschitz_bound :
  (forall beta, 0 <= beta <= 1 / 2 -> 4 <= lipschitz beta <= 5)
  /\ 4.2552519304127615704 <= lipschitz band_corrected <= 4.2552519304127615705
  /\ 13.106870124912288371 <= lipschitz band_tuned <= 13.106870124912288372
  /\ close8 L_float_corrected (lipschitz band_corrected)
  /\ close8 clip_float_corrected (sigma (- band_corrected))
  /\ close8 L_float_tuned (lipschitz band_tuned)
  /\ close8 clip_float_tuned (sigma (- band_tuned)).
Proof.
  split; [intros beta Hb; split; [apply lipschitz_ge_4|] |].
  { rewrite lemmaA_1__lipschitz_closed_form; unfold cosh; interval with (i_prec 60). }
  unfold close8, band_corrected, band_tuned, L_float_corrected, clip_float_corrected,
    L_float_tuned, clip_float_tuned.
  rewrite !lemmaA_1__lipschitz_closed_form; unfold cosh, sigma.
  repeat split.
  - interval with (i_prec 90).
  - interval with (i_prec 90).
  - interval with (i_prec 90).
  - interval with (i_prec 90).
  - interval with (i_prec 90).
  - interval with (i_prec 90).
  - interval with (i_prec 90).
  - interval with (i_prec 90).
Qed.

(* thm6.1/optimal-beta (Thm 6.1, beyond the paper), scope "scalar": for beta > 0,
   d/dbeta (1 + cosh beta) / beta^2 = (2 cosh^2(beta/2) / beta^3) (beta tanh(beta/2) - 2)
   (the error per unit tolerance scales like (1 + cosh beta) / beta^2, so the tuned band solves
   beta tanh(beta/2) = 2). Same statement and scope (Coquelicot's is_derive). *)
Theorem thm6_1__optimal_beta (b : R) :
  0 < b ->
  is_derive (fun t => (1 + cosh t) / t ^ 2) b (2 * cosh (b / 2) ^ 2 / b ^ 3 * (b * tanh (b / 2) - 2)).
Proof.
  intro Hb.
  unfold tanh, sinh, cosh.
  auto_derive; [nra|].
  assert (Y : exp b = exp (b / 2) * exp (b / 2)) by (rewrite <- exp_plus; f_equal; field).
  assert (Z : exp (- b) = / (exp (b / 2) * exp (b / 2))) by (rewrite <- Y, exp_Ropp; reflexivity).
  rewrite Y, Z, exp_Ropp.
  pose proof (exp_pos (b / 2)).
  field; repeat split; try lra.
  all: nra.
Qed.
