"""Sec. 7 and App. C: multi-head attention -- what queries cannot see, and what they can.

The model (Sec. 7, App. C): ``f^H(X) = sum_h alpha(X, W^(h))^T (X v^(h))``.

**Non-identifiability (Prop. 7.1, and beyond).**  Equal matrices ``W^(h) = A`` with
``v^(h) = lambda_h b`` and ``sum_h lambda_h = 1`` compute ``alpha(X, A)^T X b`` for *every*
real lambda on the hyperplane, not only the simplex the paper states
(``prop7.1/multihead-collapse``).  Further exact symmetries, each proven as an identity about
:class:`~attnproof.models.MultiHeadAttention`: permuting heads, splitting a head
``(W, v) -> (W, a v), (W, (1 - a) v)`` or merging heads with equal W, and adding or removing
a head with ``v = 0`` and *any* W (``prop7.1/symmetries``).

**Short inputs identify even less (new).**  For N = 2 the weights of one head are
``(sigma(t), sigma(-t))`` with ``t = (x_1 - x_2)^T W x_2``, and ``sigma(t) + sigma(-t) = 1``.
Writing ``phi = sigma - 1/2`` (odd), every input of length <= 2 gives

    f^H(X) = 1/2 (x_1 + x_2)^T sum_h v^(h) + sum_h phi((x_1 - x_2)^T W^(h) x_2) (x_1 - x_2)^T v^(h)

(``sec7/short-input-decomposition``; N = 1 is the case x_1 = x_2).  So the length-<=2 answers
are *exactly* the pair (``sum_h v^(h)``, the odd part ``G``), and any change of parameters that
keeps both is invisible to every length-1 and length-2 query.  Since ``phi`` is odd, flipping a
head ``(W, v) -> (-W, -v)`` keeps its contribution to G and changes the sum of the v's by
``-2 v``, which a linear head ``(0, 2 v)`` (a head with W = 0 has ``phi(0) = 0``) restores:

    for any set S of heads: {(W_h, v_h)} ~_{N <= 2} {(s_h W_h, s_h v_h)} + {(0, 2 sum_{h in S} v_h)},
    s_h = -1 on S, +1 off S                                            (``sec7/short-input-flip``)

The pair ``(W, v), (-W, v)`` is the case S = {2} followed by a merge: it equals the single
head ``(0, 2 v)`` on every input with N <= 2 (``sec7/short-input-collapse``) but differs at
N = 3 by O(1) for generic W (property tests).  Consequence: any method that only asks
length-1 and length-2 queries -- Thm 4.1's, Prop. C.2's, and the Hessian probes of App. C's
conjecture -- can at best recover ``(sum_h v^(h), G)``, never general multi-head parameters.
Under Assumption C.1 this loophole closes: a flipped head ``(-W, -v)`` with the same
subspace plus a linear head ``(0, 2v)`` in that subspace puts two heads in one U_h.

**Prop. C.2 (orthogonal heads), learned.**  Inputs whose tokens lie in U_h see head h only
(``propC.2/one-head``), and in the coordinates ``X = Z E_h^T`` of an orthonormal basis E_h
they see the single head ``(E_h^T W^(h) E_h, E_h^T v^(h))`` of width d_h
(``propC.2/reduced-head``).  :func:`learn_orthogonal_heads` therefore runs the library's own
Thm 4.1 learner (:func:`~attnproof.theorems.exact.learn_exact`) through a
:class:`ReducedOracle` per head and lifts back ``W = E W~ E^T``,
``v = E v~``: ``sum_h (d_h + d_h^2)`` queries (``propC.2/end-to-end``), plus ``checks`` held-out
length-3 queries (default 3) that detect a target violating C.1 for the given bases.

**The conjecture (App. C), executable.**  With ``X = [(z + q)^T; q^T]``, ``F(z) = f(X) - q^T sum v``
has Hessian ``U D_2 U^T + U D_1 V^T + V D_1 U^T`` (``sec7/probe-hessian``), and
``4 nabla^2 F(0) = U V^T + V U^T`` (``sec7/hessian-at-zero``), with ``U = [W^(h) q]_h``.
Under C.1 every Hessian leaves every U_h invariant (``sec7/hessian-invariant``).  Two
simultaneous block diagonalisations (SBD) are implemented: :func:`sbd_random_combination`
(eigenspaces of one random combination, joined when some A_k couples them) and
:func:`sbd_commutant` (eigenspaces of a generic symmetric element of the commutant
``{X : X A_k = A_k X}``, Murota, Kanno, Kojima and Kojima 2010).

*Lemma (necessity, proven here).*  At z = 0 each Hessian restricted to U_h is
``sym(u v^T)`` with ``u = W^(h) q``, so every vector of U_h orthogonal to
``span(v^(h), W^(h) q_1, ..., W^(h) q_K)`` is in the kernel of all K Hessians.  With
``K < d_h - 1`` that kernel is non-zero in each such head, the kernels of different heads form
one common invariant subspace on which every A_k is 0, and the finest SBD cannot separate
them: at least ``max_h d_h - 1`` Hessians are necessary, and at least 2 when d_h >= 2 (the
commutant of one symmetric A holds its spectral projectors, and on U_h it has the two
eigenvalues ``u.v +- |u||v|``).

*Sufficiency for almost every target (proven for the bench's patterns).*  The commutant SBD
returns the U_h exactly when the symmetric commutant of the K Hessians is ``span{P_h}``: a rank
condition ``rank M = d(d + 1)/2 - H`` on the commutator map M (:func:`~.sbd.commutator_map`),
whose minors are polynomials in the parameters (Q, W~_h, v~_h).  One non-zero minor at one
rational point (exact determinant, enclosed by Arb away from 0) makes it non-zero outside a
measure-zero set: ``sec7/hessian-count-H<H>-dh<d_h>`` for every (H, d_h) of
:func:`~.runner.multihead_sbd_table` with ``K = max(2, d_h - 1)``, which the bench also measures.

A random combination ``sum_k c_k A_k`` has rank <= 2 on each U_h, so with
``d_h >= 3`` its eigenvalue 0 has multiplicity ``sum_h (d_h - 2)`` spread over all heads: the
random-combination heuristic cannot split that eigenspace, whatever K.

:func:`learn_multihead_sbd` chains finite-difference Hessians (2 d^2 + 1 value queries each),
the commutant SBD and :func:`learn_orthogonal_heads`: learning under Assumption C.1 *without*
knowing the subspaces, with value queries only: the blocks come from finite differences, a
rotation of ~eps^(1/2) off the subspaces that the C.1 identities of :mod:`.rotation` measure and
each head's bound carries, and held-out checks across the blocks refuse blocks that are not the
heads' subspaces.

**The room.**  :mod:`.maps` (reduced coordinates, the short-input flip, C.1 bases),
:mod:`.oracle` (:class:`ReducedOracle`), :mod:`.orthogonal` (Prop. C.2's learner),
:mod:`.rotation` (C.1 up to a rotation: the identities and the bound's term),
:mod:`.sbd` (App. C's Hessians, the SBDs and their learner), :mod:`.identities` (the identities
and runs) and :mod:`.runner` (the learners' options and runners, the bench's target and
the Hessian / SBD experiment, registered with :mod:`attnproof.room`).  Everything public is
importable from ``attnproof.theorems.multihead``.
"""

from __future__ import annotations

from . import identities
from .maps import cayley_bases, flip_heads, lift, reduced_parameters
from .oracle import ReducedOracle
from .orthogonal import CHECK_LENGTH, DEFAULT_CHECKS, HEADS, check_bases, heads_count, learn_orthogonal_heads
from .sbd import (
    commutator_map,
    fd_hessian,
    fd_queries,
    hessian_probe,
    learn_multihead_sbd,
    min_hessians,
    probe_hessian,
    sbd_commutant,
    sbd_random_combination,
    subspace_error,
)

__all__ = [
    "CHECK_LENGTH", "DEFAULT_CHECKS", "HEADS", "ReducedOracle", "cayley_bases", "check_bases",
    "commutator_map",
    "fd_hessian", "fd_queries", "flip_heads", "heads_count", "hessian_probe", "identities",
    "learn_multihead_sbd", "learn_orthogonal_heads", "lift", "min_hessians", "probe_hessian",
    "reduced_parameters", "sbd_commutant", "sbd_random_combination", "subspace_error",
]
