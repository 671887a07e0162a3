"""One-sided (Hestenes) Jacobi sweeps in Triton: the kernels the expert solutions of
`LinearAlgebra/svd`, `low_rank_svd_approximation`, `pseudoinverse_svd`, `matrix_power_eig` and
`Fusion/fused_svd_reconstruct` share (each expert imports them; kbx is importable in a worker).

`jacobi(wt, norms)` orthogonalises the rows of wt (the columns of A, transposed) by rotating pairs in
round-robin order until no pair is further from orthogonal than the dtype's noise level, and returns
the accumulated rotations; `weighted_product(x, f, y)` forms x diag(f) y in one tiled kernel.
"""

import torch
import triton
import triton.language as tl

ROW_BLOCK = 256  # elements of a row per loop step in the rotation kernel
GPU_PAIRS = 1  # pairs per program on the GPU; the CPU interpreter takes a whole round in one program
NORM_ROWS = 16
PROD_BLOCK, PROD_K = 64, 32  # tiles of the final weighted product
MAX_SWEEPS = 40
# per dtype: rotate a pair when |w_i . w_j| > ORTHO ||w_i|| ||w_j|| (dot-product noise level, 32 eps);
# columns shorter than ZERO ||A||_F (2 eps) count as rounding noise and are left alone. A genuine small
# singular value lies above it: a uniform 512 x 512 fp32 matrix's smallest is ~3e-5 ||A||_F and can be ten
# times less (an earlier ZERO of 1e-5 left such a column unrotated: U^T U off by 0.316 on an H200), while
# the null columns of a rank-deficient input still converge (rank 4 of 16 or 64: 5-6 sweeps).
TOLS = {torch.float32: (32 * 2.0**-24, 2 * 2.0**-24), torch.float64: (32 * 2.0**-53, 2 * 2.0**-53)}


@triton.jit
def _rotate_kernel(wt_ptr, jt_ptr, pairs_ptr, flag_ptr, fro2_ptr, npairs, p, q, tol, zero_tol,
                   PAIRS: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    """Jacobi rotations of rows i, j of W^T (length p) and J^T (length q) for PAIRS disjoint pairs of a round
    (pairs of all matrices of the batch side by side, as rows of the stacked matrices)."""
    pair = tl.program_id(0) * PAIRS + tl.arange(0, PAIRS)
    pm = pair < npairs
    i = tl.load(pairs_ptr + 2 * pair, mask=pm, other=-1).to(tl.int64)  # rows of the stacked (nb * q) matrices
    j = tl.load(pairs_ptr + 2 * pair + 1, mask=pm, other=-1).to(tl.int64)
    valid = pm & (i >= 0) & (j >= 0)  # the dummy player of an odd tournament (-1) sits out
    fro2 = tl.load(fro2_ptr + tl.where(valid, i, 0) // q, mask=valid, other=0.0)
    negligible = zero_tol * zero_tol * fro2  # squared norm of a column that is rounding noise
    wi = wt_ptr + i * p
    wj = wt_ptr + j * p
    acc_a = tl.zeros([PAIRS, BLOCK], dtype=wt_ptr.dtype.element_ty)
    acc_b = tl.zeros([PAIRS, BLOCK], dtype=wt_ptr.dtype.element_ty)
    acc_g = tl.zeros([PAIRS, BLOCK], dtype=wt_ptr.dtype.element_ty)
    for start in range(0, p, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m2 = valid[:, None] & (offs < p)[None, :]
        x = tl.load(wi[:, None] + offs[None, :], mask=m2, other=0.0)
        y = tl.load(wj[:, None] + offs[None, :], mask=m2, other=0.0)
        acc_a += x * x
        acc_b += y * y
        acc_g += x * y
    alpha = tl.sum(acc_a, axis=1)
    beta = tl.sum(acc_b, axis=1)
    gamma = tl.sum(acc_g, axis=1)
    # Past min(m, n) columns, the columns left over converge to noise of size eps ||A||, which can never
    # become mutually orthogonal: such pairs are left alone.
    rot = valid & (tl.abs(gamma) > tol * tl.sqrt(alpha * beta)) & (tl.minimum(alpha, beta) > negligible)
    zeta = (beta - alpha) / (2.0 * tl.where(rot, gamma, 1.0))
    az = tl.abs(zeta)
    root = tl.where(az > 1.0, az * (1.0 + tl.sqrt(1.0 + 1.0 / tl.maximum(az * az, 1.0))), az + tl.sqrt(1.0 + az * az))
    t = tl.where(zeta >= 0, 1.0, -1.0) / root  # the smaller root of t^2 + 2 zeta t - 1 = 0
    c = 1.0 / tl.sqrt(1.0 + t * t)
    s = c * t
    for start in range(0, p, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m2 = rot[:, None] & (offs < p)[None, :]
        x = tl.load(wi[:, None] + offs[None, :], mask=m2, other=0.0)
        y = tl.load(wj[:, None] + offs[None, :], mask=m2, other=0.0)
        tl.store(wi[:, None] + offs[None, :], c[:, None] * x - s[:, None] * y, mask=m2)
        tl.store(wj[:, None] + offs[None, :], s[:, None] * x + c[:, None] * y, mask=m2)
    ji = jt_ptr + i * q
    jj = jt_ptr + j * q
    for start in range(0, q, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m2 = rot[:, None] & (offs < q)[None, :]
        x = tl.load(ji[:, None] + offs[None, :], mask=m2, other=0.0)
        y = tl.load(jj[:, None] + offs[None, :], mask=m2, other=0.0)
        tl.store(ji[:, None] + offs[None, :], c[:, None] * x - s[:, None] * y, mask=m2)
        tl.store(jj[:, None] + offs[None, :], s[:, None] * x + c[:, None] * y, mask=m2)
    tl.atomic_add(flag_ptr, tl.sum(tl.where(rot, 1, 0), axis=0))


@triton.jit
def _identity_kernel(jt_ptr, q, BLOCK: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < q * q
    tl.store(jt_ptr + b * q * q + offs, tl.where(offs // q == offs % q, 1.0, 0.0).to(jt_ptr.dtype.element_ty), mask=m)


@triton.jit
def norms_kernel(wt_ptr, norms_ptr, fro2_ptr, p, q, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(1).to(tl.int64)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rm = rows < q
    acc = tl.zeros([ROWS, BLOCK], dtype=wt_ptr.dtype.element_ty)
    for start in range(0, p, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(wt_ptr + (b * q + rows[:, None]) * p + offs[None, :], mask=rm[:, None] & (offs < p)[None, :],
                    other=0.0)  # fmt: skip
        acc += x * x
    sq = tl.sum(acc, axis=1)
    tl.store(norms_ptr + b * q + rows, tl.sqrt(sq), mask=rm)
    tl.atomic_add(fro2_ptr + b, tl.sum(sq, axis=0))  # ||A||_F^2 of matrix b


@triton.jit
def _weighted_product_kernel(x_ptr, f_ptr, y_ptr, out_ptr, q, R, C,
                             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    """out[b] (R x C) = X[b]^T diag(f[b]) Y[b] for X (q x R), Y (q x C): a sum of q weighted outer products."""
    b = tl.program_id(2).to(tl.int64)
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BN + tl.arange(0, BN)
    rm = r < R
    cm = c < C
    acc = tl.zeros([BM, BN], dtype=out_ptr.dtype.element_ty)
    for start in range(0, q, BK):
        i = start + tl.arange(0, BK)
        im = i < q
        xt = tl.load(x_ptr + (b * q + i[None, :]) * R + r[:, None], mask=rm[:, None] & im[None, :], other=0.0)
        f = tl.load(f_ptr + b * q + i, mask=im, other=0.0)
        y = tl.load(y_ptr + (b * q + i[:, None]) * C + c[None, :], mask=im[:, None] & cm[None, :], other=0.0)
        acc += tl.dot(xt, f[:, None] * y, input_precision="ieee")
    tl.store(out_ptr + (b * R + r[:, None]) * C + c[None, :], acc, mask=rm[:, None] & cm[None, :])


def _round_robin(q):
    """Pairs (rounds, q'/2, 2) of the circle method over q' = q rounded up to even; index q is a dummy."""
    qe = q + (q % 2)
    others = list(range(1, qe))
    rounds = []
    for r in range(qe - 1):
        ring = [0] + others[r:] + others[:r]
        rounds.append([(ring[i], ring[qe - 1 - i]) for i in range(qe // 2)])
    return rounds


def jacobi(wt, norms):
    """Orthogonalize the rows of wt (nb, q, p) in place; return J^T (nb, q, q) with W^T = J^T M^T."""
    nb, q, p = wt.shape
    ortho_tol, zero_tol = TOLS[wt.dtype]
    fro2 = torch.zeros((nb,), dtype=wt.dtype, device=wt.device)
    norms_kernel[(triton.cdiv(q, NORM_ROWS), nb)](wt, norms, fro2, p, q, ROWS=NORM_ROWS, BLOCK=ROW_BLOCK)
    jt = torch.empty((nb, q, q), dtype=wt.dtype, device=wt.device)
    _identity_kernel[(triton.cdiv(q * q, ROW_BLOCK), nb)](jt, q, BLOCK=ROW_BLOCK)
    if q < 2:
        return jt
    rounds = torch.tensor(_round_robin(q), dtype=torch.int64)  # (q' - 1, q' / 2, 2); q marks the dummy
    stacked = rounds[:, None] + q * torch.arange(nb)[None, :, None, None]  # rows of the stacked matrices
    stacked = torch.where(rounds[:, None] == q, -1, stacked)
    pairs = stacked.reshape(rounds.shape[0], -1, 2).to(device=wt.device, dtype=torch.int32).contiguous()
    flag = torch.zeros((1,), dtype=torch.int32, device=wt.device)
    npairs = pairs.shape[1]
    per_program = GPU_PAIRS if wt.is_cuda else triton.next_power_of_2(npairs)
    block = ROW_BLOCK if wt.is_cuda else triton.next_power_of_2(max(p, q))
    for _ in range(MAX_SWEEPS):
        flag.zero_()
        for r in range(pairs.shape[0]):
            _rotate_kernel[(triton.cdiv(npairs, per_program),)](
                wt, jt, pairs[r], flag, fro2, npairs, p, q, ortho_tol, zero_tol, PAIRS=per_program, BLOCK=block
            )
        if int(flag.item()) == 0:
            break
    return jt


def weighted_product(x, f, y):
    """X^T diag(f) Y per matrix: x (nb, q, R), f (nb, q), y (nb, q, C) -> (nb, R, C)."""
    nb, q, R = x.shape
    C = y.shape[2]
    out = torch.empty((nb, R, C), dtype=x.dtype, device=x.device)
    if out.numel():
        grid = (triton.cdiv(R, PROD_BLOCK), triton.cdiv(C, PROD_BLOCK), nb)
        _weighted_product_kernel[grid](x, f, y, out, q, R, C, BM=PROD_BLOCK, BN=PROD_BLOCK, BK=PROD_K)
    return out
