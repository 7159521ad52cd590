(* Theorem 4.1 of "Provably Learning Attention with Queries" (arXiv 2601.16873):
   softmax over two tokens, the two-token reduction, the label of a probe (and of Thm 6.1's
   scaled probe) and the query count.

   Registry ID                  | Coq theorem
   -----------------------------+-------------------------------------------
   thm4.1/softmax-to-sigmoid    | thm4_1__softmax_to_sigmoid
   thm4.1/one-token             | thm4_1__one_token
   thm4.1/score-difference      | thm4_1__score_difference
   thm4.1/probes-all-d          | thm4_1__probes_all_d
   thm4.1/label-affine          | thm4_1__label_affine
   thm6.1/probe-logit           | thm6_1__probe_logit
   thm4.1/query-count           | thm4_1__query_count
*)
From Coq Require Import Reals Lra Lia List.
From AttnProof Require Import Defs.
Open Scope R_scope.

(* Two-token softmax weight of the first token: e^{s1} / (e^{s1} + e^{s2}). *)
Definition softmax2_1 (s1 s2 : R) : R := exp s1 / (exp s1 + exp s2).

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

Lemma bilin_vadd_l (W : list (list R)) (u e y : list R) :
  length u = length e -> bilin W (vadd u e) y = bilin W u y + bilin W e y.
Proof. intro H; unfold bilin; apply dot_vadd_l, H. Qed.

Lemma bilin_vscale_l (W : list (list R)) (x y : list R) (c : R) :
  bilin W (vscale c x) y = c * bilin W x y.
Proof. unfold bilin; apply dot_vscale_l. Qed.

Lemma bilin_vscale_r (W : list (list R)) (x y : list R) (c : R) :
  bilin W x (vscale c y) = c * bilin W x y.
Proof.
  unfold bilin; replace (map (fun r => dot r (vscale c y)) W) with (vscale c (map (fun r => dot r y) W)).
  - apply dot_vscale_r.
  - unfold vscale at 1; rewrite map_map; apply map_ext; intro r; rewrite dot_vscale_r; reflexivity.
Qed.

(* The two-token head of Sec. 3 is the two-token reduction of its scores and values. *)
Lemma head_two_tokens (W : list (list R)) (x1 x2 v : list R) :
  head W (x1 :: x2 :: nil) v
  = dot x2 v + sigma (bilin W x1 x2 - bilin W x2 x2) * (dot x1 v - dot x2 v).
Proof.
  rewrite <- two_token_reduction; unfold head; simpl; rewrite !Rplus_0_r; reflexivity.
Qed.

(* thm4.1/one-token (Thm 4.1, phase (i)): f_{W,v}([x^T]) = x^T v, independent of W.
   The registry checks the library's model at d = 1..6; here every d, the head of Sec. 3. *)
Theorem thm4_1__one_token (W : list (list R)) (x v : list R) : head W (x :: nil) v = dot x v.
Proof.
  unfold head; simpl; pose proof (exp_pos (bilin W x x)); field; lra.
Qed.

(* thm4.1/score-difference (Thm 4.1, proof (ii)): X = [(u + e_j)^T; e_j^T] => s1 - s2 = u^T W e_j.
   The registry checks d = 1..6 and every column j; here every d and any last token e. *)
Theorem thm4_1__score_difference (W : list (list R)) (u e : list R) :
  length u = length e -> bilin W (vadd u e) e - bilin W e e = bilin W u e.
Proof. intro H; rewrite bilin_vadd_l by exact H; ring. Qed.

(* thm4.1/probes-all-d (Thm 4.1, proof (i) and (ii)), for every d: the probe
   X = [(u + e)^T; e^T] has s1 - s2 = (u + e)^T W e - e^T W e = u^T W e and
   (u + e)^T v - e^T v = u^T v, and with the two-token reduction
   (e^{s1} p1 + e^{s2} p2) / (e^{s1} + e^{s2}) = p2 + sigma(s1 - s2)(p1 - p2) (its first conjunct)
   f_{W,v}(X) = e^T v + sigma(u^T W e) u^T v.
   Same scope (every d, any e); the registry's matrices are MatrixSymbols of symbolic size, here
   lists of any common length d, and f_{W,v} is the head of Sec. 3 (s_i = x_i^T W x_N). *)
Theorem thm4_1__probes_all_d :
  (forall s1 s2 p1 p2 : R,
      (exp s1 * p1 + exp s2 * p2) / (exp s1 + exp s2) = p2 + sigma (s1 - s2) * (p1 - p2))
  /\ (forall (W : list (list R)) (u e v : list R), length u = length e ->
      bilin W (vadd u e) e - bilin W e e = bilin W u e
      /\ dot (vadd u e) v - dot e v = dot u v
      /\ head W (vadd u e :: e :: nil) v = dot e v + sigma (bilin W u e) * dot u v).
Proof.
  split; [exact two_token_reduction|].
  intros W u e v H; split; [|split].
  - apply thm4_1__score_difference, H.
  - rewrite dot_vadd_l by exact H; ring.
  - rewrite head_two_tokens, thm4_1__score_difference by exact H.
    rewrite dot_vadd_l by exact H; ring.
Qed.

(* thm4.1/label-affine (Thm 4.1, proof (ii)):
   f_{W,v}([(u + e_j)^T; e_j^T]) = v_j + sigma(u^T w_j) (u^T v), w_j = W e_j.
   The registry checks the library's model at d = 1..3 and every column j; here every d and
   every j, with e_j the j-th unit vector of length d (e_j^T v = v_j, W e_j = the j-th column),
   and f_{W,v} the head written from Sec. 3 (Defs.head), not the library's Python model. *)
Fixpoint unit (d j : nat) : list R :=
  match d, j with
  | O, _ => nil
  | S d', O => 1 :: repeat 0 d'
  | S d', S j' => 0 :: unit d' j'
  end.

Lemma unit_length (d j : nat) : length (unit d j) = d.
Proof.
  revert j; induction d as [|d IH]; intros [|j]; simpl; try rewrite repeat_length; auto.
Qed.

Lemma dot_zero_l (x : list R) (n : nat) : dot (repeat 0 n) x = 0.
Proof. revert x; induction n as [|n IH]; intros [|a x]; simpl; try rewrite IH; ring. Qed.

Lemma dot_unit_l (x : list R) (j : nat) : (j < length x)%nat -> dot (unit (length x) j) x = nth j x 0.
Proof.
  revert j; induction x as [|a x IH]; intros j Hj; simpl in *; [lia|].
  destruct j as [|j]; simpl.
  - rewrite dot_zero_l; ring.
  - rewrite IH by lia; ring.
Qed.

Theorem thm4_1__label_affine (W : list (list R)) (u v : list R) (j : nat) :
  (j < length v)%nat -> length u = length v ->
  let e := unit (length v) j in
  head W (vadd u e :: e :: nil) v = nth j v 0 + sigma (bilin W u e) * dot u v.
Proof.
  intros Hj Hl e.
  assert (H : length u = length e) by (unfold e; rewrite unit_length; exact Hl).
  destruct thm4_1__probes_all_d as [_ P].
  destruct (P W u e v H) as [_ [_ ->]].
  unfold e; rewrite dot_unit_l by exact Hj; reflexivity.
Qed.

(* thm6.1/probe-logit (Thm 6.1, proof, Eqs. (3)-(4)): the scaled probe
   X = [(b u + a e_j)^T; (a e_j)^T] has s1 - s2 = a b u^T W e_j and
   f_{W,v}(X) = a v_j + sigma(a b u^T W e_j) b u^T v.
   The registry checks d = 1..3 and every column j; here every d and j, every real a, b. *)
Theorem thm6_1__probe_logit (W : list (list R)) (u v : list R) (j : nat) (a b : R) :
  (j < length v)%nat -> length u = length v ->
  let e := unit (length v) j in
  let X := vadd (vscale b u) (vscale a e) :: vscale a e :: nil in
  bilin W (vadd (vscale b u) (vscale a e)) (vscale a e) - bilin W (vscale a e) (vscale a e)
    = a * b * bilin W u e
  /\ head W X v = a * nth j v 0 + sigma (a * b * bilin W u e) * (b * dot u v).
Proof.
  intros Hj Hl e X.
  assert (H : length (vscale b u) = length (vscale a e))
    by (unfold vscale, e; rewrite !map_length, unit_length; exact Hl).
  assert (S : bilin W (vadd (vscale b u) (vscale a e)) (vscale a e) - bilin W (vscale a e) (vscale a e)
              = a * b * bilin W u e)
    by (rewrite bilin_vadd_l by exact H; rewrite !bilin_vscale_r, !bilin_vscale_l; ring).
  split; [exact S|].
  unfold X; rewrite head_two_tokens, S, dot_vadd_l by exact H.
  rewrite !dot_vscale_l; unfold e; rewrite dot_unit_l by exact Hj; ring.
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
