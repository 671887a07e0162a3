"""The ghost replay's fill of empty tensors (kbx.sandbox.cases.empty_tensors_filled) on the CPU: every
torch.empty comes back filled, the process's flags are restored after, and it costs no Inductor import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import REPO

PROBE = textwrap.dedent("""
    import sys, torch
    from kbx.sandbox.cases import INDUCTOR_CONFIG, empty_tensors_filled
    {before}
    flags = lambda: (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
                     torch.utils.deterministic.fill_uninitialized_memory)
    was = flags()
    with empty_tensors_filled():
        inside = (torch.are_deterministic_algorithms_enabled(), torch.empty(64).isnan().all().item(),
                  torch.empty(8, dtype=torch.int32).eq(torch.iinfo(torch.int32).max).all().item(),
                  getattr(sys.modules.get(INDUCTOR_CONFIG), "deterministic", None))
    config = sys.modules.get(INDUCTOR_CONFIG)
    print(inside, flags() == was, INDUCTOR_CONFIG in sys.modules, getattr(config, "deterministic", None))
""")


def _probe(before: str = "") -> str:
    code = PROBE.format(before=before)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def test_empty_tensors_are_filled_and_the_flags_restored_without_importing_inductor():
    assert _probe() == "(True, True, True, None) True False None"


def test_where_inductor_is_loaded_its_config_follows_the_flag_and_is_restored():
    assert _probe("import torch._inductor.config") == "(True, True, True, True) True True False"
