"""Importing an entry point changes nothing: litellm's offline price map is asked for where litellm is
imported (kbx.llm.backend), not by every module that may lead there."""

import os
import subprocess
import sys

VAR = "LITELLM_LOCAL_MODEL_COST_MAP"


def _run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != VAR}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_importing_the_entry_points_leaves_the_environment_alone():
    assert _run(f"import os, kbx.run, kbx.sweep, kbx.evaluate; print(os.environ.get('{VAR}', 'unset'))") == "unset"


def test_litellm_is_imported_with_its_price_map_kept_offline():
    code = (f"import os, sys; from kbx.llm.backend import litellm; assert 'litellm' not in sys.modules; "
            f"m = litellm(); print(os.environ.get('{VAR}'), m.__name__)")  # fmt: skip
    assert _run(code) == "True litellm"
