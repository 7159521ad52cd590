(* Proposition 7.1 and Section 7 of "Provably Learning Attention with Queries" (arXiv 2601.16873):
   heads sharing W collapse into one, and inputs of length <= 2 cannot tell W from -W.

   Registry ID                  | Coq theorem
   -----------------------------+-------------------------------------------
   prop7.1/multihead-collapse   | prop7_1__multihead_collapse
   prop7.1/collapse-all-d       | prop7_1__collapse_all_d
   prop7.1/symmetries           | prop7_1__symmetries
   sec7/short-input-decomposition | sec7__short_input_decomposition
   sec7/short-input-collapse    | sec7__short_input_collapse
*)
From Coq Require Import Reals Lra List Permutation.
From AttnProof Require Import Defs Softmax.
Open Scope R_scope.

Fixpoint sum (l : list R) : R := match l with nil => 0 | a :: l' => a + sum l' end.

Lemma num_scale (s p : list R) (c : R) : num s (map (fun t => c * t) p) = c * num s p.
Proof. revert p; induction s as [|a s IH]; intros [|b p]; simpl; try rewrite IH; ring. Qed.

Lemma head_vscale (A X : list (list R)) (b : list R) (c : R) :
  head A X (vscale c b) = c * head A X b.
Proof.
  unfold head.
  replace (map (fun x => dot x (vscale c b)) X) with (map (fun t => c * t) (map (fun x => dot x b) X)).
  - rewrite num_scale; unfold Rdiv; ring.
  - rewrite map_map; apply map_ext; intro x; rewrite dot_vscale_r; reflexivity.
Qed.

(* prop7.1/collapse-all-d (Prop. 7.1), every d and N: two heads with the same W = A merge,
   alpha(X, A)^T X (lambda b) + alpha(X, A)^T X (mu b) = alpha(X, A)^T X ((lambda + mu) b).
   The registry proves the matrix identity over MatrixSymbols of symbolic size with alpha a
   free N-vector; here with alpha = softmax of the scores (the head of Sec. 3), every d and N. *)
Theorem prop7_1__collapse_all_d (A X : list (list R)) (b : list R) (l m : R) :
  head A X (vscale l b) + head A X (vscale m b) = head A X (vscale (l + m) b).
Proof. rewrite !head_vscale; ring. Qed.

(* prop7.1/multihead-collapse (Prop. 7.1): W^(h) = A, v^(h) = lambda_h b, sum_h lambda_h = 1
   => sum_h alpha(X, W^(h))^T X v^(h) = alpha(X, A)^T X b, for every real lambda on the
   hyperplane (the paper's simplex included). The registry checks the library's model at
   (d, N, H) in {(2,2,2), (2,2,3), (2,3,2), (3,2,2)}; here every d, N and every number of heads H
   (the list lams), with the head written from Sec. 3 as above. *)
Theorem prop7_1__multihead_collapse (A X : list (list R)) (b : list R) (lams : list R) :
  sum lams = 1 -> mha (map (fun l => (A, vscale l b)) lams) X = head A X b.
Proof.
  intro H1.
  assert (E : mha (map (fun l => (A, vscale l b)) lams) X = sum lams * head A X b).
  { clear H1; induction lams as [|l lams IH]; simpl; [ring|].
    rewrite IH, head_vscale; ring. }
  rewrite E, H1; ring.
Qed.

(* prop7.1/symmetries (Prop. 7.1, beyond the paper: the other exact symmetries): f^H is unchanged
   by (i) permuting heads, (ii) splitting a head (W, v) into (W, a v), (W, (1 - a) v) for any real a
   (read backwards: merging), (iii) adding a head (W', 0) with any W'.
   The registry checks d = 2, N = 3, H = 3 for (i) and 1 -> 2 heads for (ii), (iii); here every
   d, N, every number of heads and every permutation. *)
Theorem prop7_1__symmetries :
  (forall hs hs' X, Permutation hs hs' -> mha hs X = mha hs' X)
  /\ (forall W v a X, mha ((W, v) :: nil) X = mha ((W, vscale a v) :: (W, vscale (1 - a) v) :: nil) X)
  /\ (forall W W' v X, mha ((W, v) :: nil) X = mha ((W, v) :: (W', vscale 0 v) :: nil) X).
Proof.
  split; [|split].
  - intros hs hs' X P; induction P as [| [W v] hs hs' P IH | [W v] [W' v'] hs | hs hs' hs'' P1 IH1 P2 IH2];
      simpl; try rewrite IH; try ring; congruence.
  - intros W v a X; simpl; rewrite !head_vscale; ring.
  - intros W W' v X; simpl; rewrite head_vscale; ring.
Qed.

Definition mopp (W : list (list R)) : list (list R) := map (map Ropp) W.
Definition mzero (W : list (list R)) : list (list R) := map (map (fun _ => 0)) W.

Lemma dot_map_opp (r y : list R) : dot (map Ropp r) y = - dot r y.
Proof. revert y; induction r as [|a r IH]; intros [|t y]; simpl; try rewrite IH; ring. Qed.

Lemma dot_map_zero (r y : list R) : dot (map (fun _ => 0) r) y = 0.
Proof. revert y; induction r as [|a r IH]; intros [|t y]; simpl; try rewrite IH; ring. Qed.

Lemma dot_zero_r (x : list R) (d : nat) : dot x (repeat 0 d) = 0.
Proof. revert d; induction x as [|a x IH]; intros [|d]; simpl; try rewrite IH; ring. Qed.

Lemma bilin_opp (W : list (list R)) (x y : list R) : bilin (mopp W) x y = - bilin W x y.
Proof.
  unfold bilin, mopp; rewrite map_map.
  replace (map (fun r => dot (map Ropp r) y) W) with (map Ropp (map (fun r => dot r y) W)).
  - generalize (map (fun r => dot r y) W); intro z.
    revert z; induction x as [|a x IH]; intros [|t z]; simpl; try rewrite IH; ring.
  - rewrite map_map; apply map_ext; intro r; rewrite dot_map_opp; reflexivity.
Qed.

Lemma bilin_zero (W : list (list R)) (x y : list R) : bilin (mzero W) x y = 0.
Proof.
  unfold bilin, mzero; rewrite map_map.
  replace (map (fun r => dot (map (fun _ => 0) r) y) W) with (repeat 0 (length W)).
  - apply dot_zero_r.
  - induction W as [|r W IH]; simpl; [reflexivity|]; rewrite IH, dot_map_zero; reflexivity.
Qed.

(* sec7/short-input-collapse (Sec. 7, new): for N <= 2,
   alpha(X, W)^T X v + alpha(X, -W)^T X v = alpha(X, 0)^T X (2v) = (2/N) sum_i x_i^T v
   (sigma(s) + sigma(-s) = 1). The registry checks d = 1..3 and N = 1, 2; here every d and
   both N = 1 and N = 2 (rows x1, x2 of any width), with the head written from Sec. 3. *)
Theorem sec7__short_input_collapse (W : list (list R)) (v x1 x2 : list R) :
  head W (x1 :: nil) v + head (mopp W) (x1 :: nil) v = head (mzero W) (x1 :: nil) (vscale 2 v)
  /\ head (mzero W) (x1 :: nil) (vscale 2 v) = 2 / 1 * dot x1 v
  /\ head W (x1 :: x2 :: nil) v + head (mopp W) (x1 :: x2 :: nil) v
     = head (mzero W) (x1 :: x2 :: nil) (vscale 2 v)
  /\ head (mzero W) (x1 :: x2 :: nil) (vscale 2 v) = 2 / 2 * (dot x1 v + dot x2 v).
Proof.
  unfold head; simpl; rewrite !bilin_opp, !bilin_zero, !dot_vscale_r, exp_0.
  set (s1 := bilin W x1 x1); set (t1 := bilin W x1 x2); set (t2 := bilin W x2 x2).
  pose proof (exp_pos s1); pose proof (exp_pos t1); pose proof (exp_pos t2).
  rewrite !exp_Ropp.
  pose proof (Rinv_0_lt_compat _ H); pose proof (Rinv_0_lt_compat _ H0);
    pose proof (Rinv_0_lt_compat _ H1).
  repeat split; field; repeat split; lra.
Qed.

(* phi = sigma - 1/2, the odd part of the sigmoid. *)
Definition phi (t : R) : R := sigma t - 1 / 2.

Lemma dot_vsub_l (x1 x2 v : list R) :
  length x1 = length x2 -> dot (vadd x1 (vopp x2)) v = dot x1 v - dot x2 v.
Proof.
  intro H; rewrite dot_vadd_l, dot_vopp_l; [ring|].
  unfold vopp; rewrite map_length; exact H.
Qed.

(* sec7/short-input-decomposition (Sec. 7, new: what inputs of length <= 2 see):
   f^H([x^T]) = sum_h x^T v^(h) and
   f^H([x_1^T; x_2^T]) = sum_h [ (1/2)(x_1 + x_2)^T v^(h) + phi((x_1 - x_2)^T W^(h) x_2) (x_1 - x_2)^T v^(h) ].
   The registry checks H = 2 and d = 1..3 and writes the first sums as x^T sum_h v^(h) and
   (1/2)(x_1 + x_2)^T sum_h v^(h) (the same by linearity); here every d and every number of heads. *)
Theorem sec7__short_input_decomposition (heads : list (list (list R) * list R)) (x x1 x2 : list R) :
  length x1 = length x2 ->
  mha heads (x :: nil) = sum (map (fun h => dot x (snd h)) heads)
  /\ mha heads (x1 :: x2 :: nil)
     = sum (map (fun h => (dot x1 (snd h) + dot x2 (snd h)) / 2
                          + phi (bilin (fst h) (vadd x1 (vopp x2)) x2) * dot (vadd x1 (vopp x2)) (snd h))
                heads).
Proof.
  intro H; split; induction heads as [| [W v] hs IH]; simpl; try reflexivity; rewrite IH; f_equal.
  - apply thm4_1__one_token.
  - rewrite head_two_tokens, dot_vsub_l by exact H.
    unfold bilin at 3; rewrite dot_vsub_l by exact H; fold (bilin W x1 x2) (bilin W x2 x2).
    unfold phi; field.
Qed.
