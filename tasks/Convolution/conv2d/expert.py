"""Expert kernel for Convolution/conv2d: implicit GEMM over a channels-last copy of the input (kbx/experts/conv.py).

The input is copied once to NHWC and the weights to (Cout, kH, kW, Cin/groups), so that the
reduction index k = (kh, kw, ci) runs along contiguous memory in both operands. Per group, each
program computes a (BLOCK_M output positions) x (BLOCK_N output channels) tile: for every filter
tap (kh, kw) it gathers the shifted input rows once and streams channel blocks through tl.dot with
fp32 accumulation (TF32 on GPU, matching the task's matmul tolerance). Zero padding is a load mask.

SPEED
"""

from kbx.experts.conv import conv2d

__all__ = ["conv2d"]
