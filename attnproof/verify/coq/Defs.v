(* Section 3 of "Provably Learning Attention with Queries" (arXiv 2601.16873): the definitions
   every other file states its theorems with (no theorem here is a registry claim).
   Vectors of any length are lists of reals, matrices are lists of rows. The dot product of two
   lists of different lengths reads their common prefix; the theorems hold for all lists (with a
   length hypothesis where one is needed), so in particular for every well-sized d, N, m, H. *)
From Coq Require Import Reals Lra List.
Open Scope R_scope.

(* The logistic sigmoid sigma(t) = 1 / (1 + e^{-t}) and ReLU(z) = max(z, 0). *)
Definition sigma (t : R) : R := / (1 + exp (- t)).
Definition relu (z : R) : R := Rmax z 0.

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

Definition vscale (c : R) (x : list R) : list R := map (fun t => c * t) x.
Definition vopp (x : list R) : list R := map Ropp x.

Lemma dot_vadd_l (u e w : list R) :
  length u = length e -> dot (vadd u e) w = dot u w + dot e w.
Proof.
  revert e w; induction u as [|a u IH]; intros [|b e] [|c w] H; simpl in *; try lra;
    try discriminate.
  injection H as H; rewrite (IH e w H); ring.
Qed.

Lemma dot_vscale_r (x b : list R) (c : R) : dot x (vscale c b) = c * dot x b.
Proof. revert b; induction x as [|t x IH]; intros [|y b]; simpl; try rewrite IH; ring. Qed.

Lemma dot_vscale_l (x b : list R) (c : R) : dot (vscale c x) b = c * dot x b.
Proof. revert b; induction x as [|t x IH]; intros [|y b]; simpl; try rewrite IH; ring. Qed.

Lemma dot_vopp_r (a x : list R) : dot a (vopp x) = - dot a x.
Proof. revert x; induction a as [|c a IH]; intros [|t x]; simpl; try rewrite IH; ring. Qed.

Lemma dot_vopp_l (a x : list R) : dot (vopp a) x = - dot a x.
Proof. revert x; induction a as [|c a IH]; intros [|t x]; simpl; try rewrite IH; ring. Qed.

(* The score x^T W y, W a list of rows. *)
Definition bilin (W : list (list R)) (x y : list R) : R := dot x (map (fun r => dot r y) W).

(* The attention head of Sec. 3 on X = [x_1^T; ...; x_N^T]: scores s_i = x_i^T W x_N,
   weights alpha = softmax(s), output f_{W,v}(X) = alpha(X, W)^T X v
   = sum_i e^{s_i} x_i^T v / sum_i e^{s_i}. *)
Fixpoint num (s p : list R) : R :=
  match s, p with a :: s', b :: p' => exp a * b + num s' p' | _, _ => 0 end.
Fixpoint den (s : list R) : R := match s with nil => 0 | a :: s' => exp a + den s' end.
Definition head (W : list (list R)) (X : list (list R)) (v : list R) : R :=
  let xN := last X nil in
  let s := map (fun x => bilin W x xN) X in
  num s (map (fun x => dot x v) X) / den s.

(* Multi-head attention (Sec. 7): f^H(X) = sum_h alpha(X, W^(h))^T X v^(h). *)
Fixpoint mha (heads : list (list (list R) * list R)) (X : list (list R)) : R :=
  match heads with nil => 0 | (W, v) :: hs => head W X v + mha hs X end.
