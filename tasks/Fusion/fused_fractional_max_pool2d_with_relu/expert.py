"""Expert kernel for Fusion/fused_fractional_max_pool2d_with_relu: one lane per output element.

Each (n, c) plane draws its two offsets u_h, u_w with tl.rand from a per-call seed (same seed and
offset for every lane of a plane, so the plane's windows are consistent). Each lane computes its
window start from the fractional-pool interval rule, scans the KH x KW window of relu(input) and keeps
the first maximum and its flat index. fp32 math.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit(do_not_specialize=["seed"])  # a new seed per call: one compiled variant
def _frac_pool_kernel(x_ptr, y_ptr, idx_ptr, seed, n_out, H, W, oh, ow, alpha_h, alpha_w,
                      KH: tl.constexpr, KW: tl.constexpr, WRITE_IDX: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_out
    j = offs % ow
    i = (offs // ow) % oh
    plane = offs // (ow * oh)
    u_h = tl.rand(seed, (2 * plane).to(tl.int32))
    u_w = tl.rand(seed, (2 * plane + 1).to(tl.int32))
    start_h = (tl.floor((i.to(tl.float32) + u_h) * alpha_h) - tl.floor(u_h * alpha_h)).to(tl.int64)
    start_w = (tl.floor((j.to(tl.float32) + u_w) * alpha_w) - tl.floor(u_w * alpha_w)).to(tl.int64)
    start_h = tl.where(i == oh - 1, H - KH, tl.minimum(tl.maximum(start_h, 0), H - KH))
    start_w = tl.where(j == ow - 1, W - KW, tl.minimum(tl.maximum(start_w, 0), W - KW))
    base = plane * H * W
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_idx = tl.zeros([BLOCK], tl.int64)
    for dh in range(KH):
        for dw in range(KW):
            pos = (start_h + dh) * W + start_w + dw
            v = tl.load(x_ptr + base + pos, mask=ok, other=0.0).to(tl.float32)
            v = tl.maximum(v, 0.0)  # relu
            take = v > best  # strict: the first maximum wins
            best = tl.where(take, v, best)
            best_idx = tl.where(take, pos, best_idx)
    tl.store(y_ptr + offs, best.to(y_ptr.dtype.element_ty), mask=ok)
    if WRITE_IDX:
        tl.store(idx_ptr + offs, best_idx, mask=ok)


def _pair(v):
    return (v, v) if isinstance(v, (int, float)) else tuple(v)


def fused_fractional_max_pool2d_with_relu(input, kernel_size, output_size=None, output_ratio=None,
                                          return_indices=False):  # fmt: skip
    x = input.contiguous()
    *lead, H, W = x.shape
    kh, kw = _pair(kernel_size)
    if output_size is not None:
        oh, ow = _pair(output_size)
    else:
        rh, rw = _pair(output_ratio)
        oh, ow = int(H * rh), int(W * rw)
    planes = x.numel() // max(H * W, 1)
    y = torch.empty((*lead, oh, ow), dtype=x.dtype, device=x.device)
    idx = torch.empty((*lead, oh, ow), dtype=torch.int64, device=x.device) if return_indices else y
    n_out = y.numel()
    if n_out:
        alpha_h = (H - kh) / (oh - 1) if oh > 1 else 0.0
        alpha_w = (W - kw) / (ow - 1) if ow > 1 else 0.0
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item())  # fresh offsets on every call
        _frac_pool_kernel[(triton.cdiv(n_out, BLOCK),)](x, y, idx, seed, n_out, H, W, oh, ow, alpha_h, alpha_w,
                                                        KH=kh, KW=kw, WRITE_IDX=return_indices, BLOCK=BLOCK,
                                                        num_warps=4)  # fmt: skip
    return (y, idx) if return_indices else y
