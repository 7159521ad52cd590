(* Theorem 4.1 of "Provably Learning Attention with Queries" (arXiv 2601.16873):
   softmax over two tokens, the two-token reduction, the label of a probe and the query count.

   Registry ID                  | Coq theorem
   -----------------------------+-------------------------------------------
   thm4.1/softmax-to-sigmoid    | thm4_1__softmax_to_sigmoid
   thm4.1/probes-all-d          | thm4_1__probes_all_d  (uses two_token_reduction)
   thm4.1/label-affine          | thm4_1__label_affine
   thm4.1/query-count           | thm4_1__query_count
*)
From Coq Require Import Reals Lra List.
Open Scope R_scope.

(* The logistic sigmoid sigma(t) = 1 / (1 + e^{-t}). *)
Definition sigma (t : R) : R := / (1 + exp (- t)).

(* Two-token softmax weight of the first token: e^{s1} / (e^{s1} + e^{s2}). *)
Definition softmax2_1 (s1 s2 : R) : R := exp s1 / (exp s1 + exp s2).

Lemma exp_sum_pos (a b : R) : exp a + exp b <> 0.
Proof. pose proof (exp_pos a); pose proof (exp_pos b); lra. Qed.

Lemma one_plus_exp_neq (t : R) : 1 + exp t <> 0.
Proof. pose proof (exp_pos t); lra. Qed.

(* thm4.1/softmax-to-sigmoid (Thm 4.1, Eq. (1)), scope "scalar":
   softmax(s1, s2)_1 = e^{s1} / (e^{s1} + e^{s2}) = sigma(s1 - s2), for all real s1, s2.
   Same statement and scope as the registry (its second pair, the library's sigmoid equals
   1/(1 + e^{-t}), is the definition [sigma] here). *)
Theorem thm4_1__softmax_to_sigmoid (s1 s2 : R) : softmax2_1 s1 s2 = sigma (s1 - s2).
Proof.
  unfold softmax2_1, sigma.
  replace (exp (- (s1 - s2))) with (exp s2 / exp s1).
  2: { unfold Rminus; rewrite Ropp_plus_distr, Ropp_involutive, Rplus_comm, exp_plus, exp_Ropp;
       reflexivity. }
  pose proof (exp_pos s1); pose proof (exp_pos s2).
  field; lra.
Qed.

(* The scalar two-token reduction (the [two_token_reduction] pairs inside thm4.1/probes-all-d):
   (e^{s1} p1 + e^{s2} p2) / (e^{s1} + e^{s2}) = p2 + sigma(s1 - s2) (p1 - p2). *)
Lemma two_token_reduction (s1 s2 p1 p2 : R) :
  (exp s1 * p1 + exp s2 * p2) / (exp s1 + exp s2) = p2 + sigma (s1 - s2) * (p1 - p2).
Proof.
  rewrite <- thm4_1__softmax_to_sigmoid; unfold softmax2_1.
  pose proof (exp_pos s1); pose proof (exp_pos s2).
  field; lra.
Qed.

(* Vectors of any length d as lists of reals; the dot product and the sum of two vectors. *)
Fixpoint dot (x y : list R) : R :=
  match x, y with
  | a :: x', b :: y' => a * b + dot x' y'
  | _, _ => 0
  end.

Fixpoint vadd (x y : list R) : list R :=
  match x, y with
  | a :: x', b :: y' => (a + b) :: vadd x' y'
  | _, _ => nil
  end.

Lemma dot_vadd_l (u e w : list R) :
  length u = length e -> dot (vadd u e) w = dot u w + dot e w.
Proof.
  revert e w; induction u as [|a u IH]; intros [|b e] [|c w] H; simpl in *; try lra;
    try discriminate.
  injection H as H; rewrite (IH e w H); ring.
Qed.

(* thm4.1/probes-all-d (Thm 4.1, proof (i) and (ii)), for every d:
   the probe X = [(u + e)^T; e^T] with last token e has scores s1 = (u + e)^T w, s2 = e^T w
   (w = W e, the column the probe reads) and values p1 = (u + e)^T v, p2 = e^T v; its label
   (e^{s1} p1 + e^{s2} p2) / (e^{s1} + e^{s2}) equals e^T v + sigma(u^T W e) u^T v.
   Scope: the registry proves the matrix algebra over MatrixSymbols of symbolic size d and the
   scalar reduction separately; here both at once, for lists u, e, v, w of any common length d,
   with the vector w = W e standing for the matrix (s_i = x_i^T W x_N, Sec. 3). *)
Theorem thm4_1__probes_all_d (u e v w : list R) :
  length u = length e ->
  let s1 := dot (vadd u e) w in let s2 := dot e w in
  let p1 := dot (vadd u e) v in let p2 := dot e v in
  (exp s1 * p1 + exp s2 * p2) / (exp s1 + exp s2) = dot e v + sigma (dot u w) * dot u v.
Proof.
  intros H s1 s2 p1 p2; rewrite two_token_reduction.
  unfold s1, s2, p1, p2; rewrite !dot_vadd_l by exact H.
  replace (dot u w + dot e w - dot e w) with (dot u w) by ring.
  ring.
Qed.

(* thm4.1/label-affine (Thm 4.1, proof (ii)): f_{W,v}([(u + e_j)^T; e_j^T]) = v_j + sigma(u^T w_j) u^T v.
   The registry checks the library's model at d = 1..3; here for every d, with the probe's
   last token any vector e (e_j included, where e^T v = v_j) and w_j = W e_j: the two-token
   attention label written from Sec. 3 (weights softmax(s1, s2), values x_i^T v). *)
Theorem thm4_1__label_affine (u e v w : list R) :
  length u = length e ->
  softmax2_1 (dot (vadd u e) w) (dot e w) * dot (vadd u e) v
  + (1 - softmax2_1 (dot (vadd u e) w) (dot e w)) * dot e v
  = dot e v + sigma (dot u w) * dot u v.
Proof.
  intros H; rewrite <- (thm4_1__probes_all_d u e v w H); simpl.
  unfold softmax2_1; pose proof (exp_pos (dot (vadd u e) w)); pose proof (exp_pos (dot e w)).
  field; lra.
Qed.

(* thm4.1/query-count (Thm 4.1, proof, last line): the learner asks d one-row probes [e_i^T]
   and d^2 two-row probes (one per pair (i, j)), and with a bias d + 1 more:
   count(d) = d + d^2, count(d, bias) = d + d^2 + (d + 1).
   Scope: the registry evaluates the learner's registered count function on a symbol; here the
   count of the probe list the proof describes (indices seq 0 d and their pairs), every d. *)
Theorem thm4_1__query_count (d : nat) :
  (length (seq 0 d) + length (list_prod (seq 0 d) (seq 0 d)) = d + d ^ 2
   /\ length (seq 0 d) + length (list_prod (seq 0 d) (seq 0 d)) + length (seq 0 (S d))
      = d + d ^ 2 + (d + 1))%nat.
Proof.
  rewrite prod_length, !seq_length; simpl; split; ring.
Qed.
