(* Section 4.1 of "Provably Learning Attention with Queries" (arXiv 2601.16873): the ReLU
   lemmas behind the one-layer Transformer's antisymmetry and the canonical FFN form.

   Registry ID                  | Coq theorem
   -----------------------------+-------------------------------------------
   sec4.1/relu-as-abs           | sec4_1__relu_as_abs
   sec4.1/relu-antisymmetry     | sec4_1__relu_antisymmetry (scalar, and the dot form for any width)
   sec4.1/antisymmetry-all-d    | sec4_1__antisymmetry_all_d
   sec4.1/canonical-network     | sec4_1__canonical_network
*)
From Coq Require Import Reals Lra List.
From AttnProof Require Import Defs.
Open Scope R_scope.

(* sec4.1/relu-as-abs (Sec. 4.1, lemma), scope "scalar": ReLU(z) = max(z, 0) = (z + |z|) / 2.
   Same statement and scope as the registry. *)
Theorem sec4_1__relu_as_abs (z : R) : relu z = (z + Rabs z) / 2.
Proof.
  unfold relu, Rmax, Rabs; destruct (Rle_dec z 0); destruct (Rcase_abs z); lra.
Qed.

(* The scalar pair of sec4.1/relu-antisymmetry: ReLU(z) - ReLU(-z) = z for real z. *)
Lemma relu_antisymmetry_scalar (z : R) : relu z - relu (- z) = z.
Proof.
  unfold relu, Rmax; destruct (Rle_dec z 0); destruct (Rle_dec (- z) 0); lra.
Qed.

(* The dot form the Transformer step needs, for any width m (induction on the list):
   w_o^T (ReLU(z) - ReLU(-z)) = sum_k w_k (ReLU(z_k) - ReLU(-z_k)) = w_o^T z. *)
Lemma relu_antisymmetry_dot (w z : list R) :
  dot w (map relu z) - dot w (map (fun t => relu (- t)) z) = dot w z.
Proof.
  revert z; induction w as [|a w IH]; intros [|b z]; simpl; try lra.
  replace (a * b) with (a * (relu b - relu (- b))) by (rewrite relu_antisymmetry_scalar; ring).
  rewrite <- (IH z); ring.
Qed.

(* sec4.1/relu-antisymmetry (Sec. 4.1): ReLU(z) - ReLU(-z) = z for every real z, and its dot
   form w_o^T ReLU(z) - w_o^T ReLU(-z) = w_o^T z for every width m.
   Scope: the registry's first pair is the scalar identity; its other pairs check the library's
   Transformer at four listed sizes (d, N, m), which a Coq statement about lists cannot reach
   (the library's code is Python); the Transformer statement for every size is
   sec4_1__antisymmetry_all_d below. *)
Theorem sec4_1__relu_antisymmetry :
  (forall z, relu z - relu (- z) = z)
  /\ (forall w z, dot w (map relu z) - dot w (map (fun t => relu (- t)) z) = dot w z).
Proof. split; [exact relu_antisymmetry_scalar | exact relu_antisymmetry_dot]. Qed.

(* A^T x for A given by its columns a_k (the hidden units): z_k = a_k^T x. *)
Definition mtv (cols : list (list R)) (x : list R) : list R := map (fun a => dot a x) cols.

(* The Transformer step: TF(y) - TF(-y) = w_o^T (A^T y) for every d and m. *)
Lemma tf_step (cols : list (list R)) (w y : list R) :
  dot w (map relu (mtv cols y)) - dot w (map relu (mtv cols (vopp y))) = dot w (mtv cols y).
Proof.
  rewrite <- (relu_antisymmetry_dot w (mtv cols y)).
  replace (mtv cols (vopp y)) with (map Ropp (mtv cols y)).
  - rewrite map_map; reflexivity.
  - unfold mtv; rewrite map_map; apply map_ext; intro a; rewrite dot_vopp_r; reflexivity.
Qed.

(* The scores' evenness behind alpha(-X, W) = alpha(X, W): (-x)^T W (-y) = x^T W y, every d. *)
Lemma scores_even (W : list (list R)) (x y : list R) :
  bilin W (vopp x) (vopp y) = bilin W x y.
Proof.
  unfold bilin; rewrite dot_vopp_l.
  replace (map (fun r => dot r (vopp y)) W) with (vopp (map (fun r => dot r y) W)).
  - rewrite dot_vopp_r; ring.
  - unfold vopp; rewrite !map_map; apply map_ext; intro r; rewrite dot_vopp_r; reflexivity.
Qed.

(* sec4.1/antisymmetry-all-d (Sec. 4.1), for every d, N, m: with alpha(-X, W) = alpha(X, W)
   (the scores (-x_i)^T W (-x_N) = x_i^T W x_N are even in X), the hidden pre-activations of -X
   are z(-X) = A^T (-X)^T alpha = -z(X), and
   TF(X) - TF(-X) = w_o^T ReLU(z) - w_o^T ReLU(-z) = w_o^T z = w_o^T A^T X^T alpha.
   Here: y = X^T alpha (the attended token, any width d), cols = the m columns of A, and the
   statement TF(y) - TF(-y) = w_o^T (A^T y) = (A w_o)^T y for every d and m. The scores' evenness
   in X (hence alpha(-X, W) = alpha(X, W), softmax being a function of the scores) is the first
   conjunct. The registry proves the same steps over MatrixSymbols of symbolic sizes. *)
Theorem sec4_1__antisymmetry_all_d :
  (forall (W : list (list R)) (x y : list R), bilin W (vopp x) (vopp y) = bilin W x y)
  /\ (forall (cols : list (list R)) (w y : list R),
      dot w (map relu (mtv cols y)) - dot w (map relu (mtv cols (vopp y))) = dot w (mtv cols y)).
Proof. split; [exact scores_even | exact tf_step]. Qed.

(* sec4.1/canonical-network (Sec. 4.1, beyond the paper):
   (1/2) u^T x + (1/2) sum_j c_j |n_j^T x| = sum_j c_j ReLU(n_j^T x) + ReLU(g^T x) - ReLU(-g^T x),
   g = (1/2) (u - sum_j c_j n_j).
   The registry checks (d, L) = (2, 1), (2, 3), (3, 2); here every L (induction on the list of
   units), with the scalars t_j = n_j^T x and the linear form g^T x = (1/2)(u^T x - sum_j c_j t_j)
   (linearity of the dot product), every d. *)
Fixpoint sum_abs (ct : list (R * R)) : R :=
  match ct with nil => 0 | (c, t) :: r => c * Rabs t + sum_abs r end.
Fixpoint sum_relu (ct : list (R * R)) : R :=
  match ct with nil => 0 | (c, t) :: r => c * relu t + sum_relu r end.
Fixpoint sum_lin (ct : list (R * R)) : R :=
  match ct with nil => 0 | (c, t) :: r => c * t + sum_lin r end.

Lemma sum_relu_split (ct : list (R * R)) : sum_relu ct = (sum_lin ct + sum_abs ct) / 2.
Proof.
  induction ct as [|[c t] r IH]; simpl; [lra|].
  rewrite IH, sec4_1__relu_as_abs; field.
Qed.

Theorem sec4_1__canonical_network (ux : R) (ct : list (R * R)) :
  let gx := (ux - sum_lin ct) / 2 in
  ux / 2 + sum_abs ct / 2 = sum_relu ct + relu gx - relu (- gx).
Proof.
  intro gx; pose proof (relu_antisymmetry_scalar gx) as G.
  rewrite sum_relu_split; unfold gx in *; lra.
Qed.
