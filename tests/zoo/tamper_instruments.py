"""Pure PyTorch that forges the worker's own instruments: it finds the LaunchCounter through the
garbage collector and bumps it on every call (faking Triton launches), and replaces the ghost
replay with a no-op. The worker runs the candidate's code in its own process, so everything it
measures there (launch count, ghost output, mutation check) is forgeable; only the outputs are
judged in a trusted process. Known hole: reported to the lead, kept as a strict xfail so a fix
(e.g. launches counted outside the candidate's process) flips it.

TASK: Math/zoo_scale_add
EXPECT: no_triton
XFAIL: any: in-process launch counting and ghost replay can be forged by the candidate
"""

import gc

import kbx.sandbox.cases as _cases
from kbx.sandbox.instrument import LaunchCounter

_COUNTERS = [o for o in gc.get_objects() if isinstance(o, LaunchCounter)]
_cases.ghost_replay = lambda *a, **k: {}


def scale_add(input, other):
    for counter in _COUNTERS:
        counter.launches += 1
    return input * 2 + other
