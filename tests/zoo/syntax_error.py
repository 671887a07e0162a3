"""Does not parse (unbalanced parenthesis in the signature); rejected before any process runs.

TASK: Math/zoo_scale_add
EXPECT: syntax_error
"""

import torch


def scale_add(input, other:
    return input * 2 + other
