"""Raises with its whole environment in the exception message, so the environment would land in
the record's `message`. The secret must not be there (scrubbed environment, redacted text).

TASK: Math/zoo_scale_add
EXPECT: runtime_error
"""

import os


def scale_add(input, other):
    raise RuntimeError("environment: " + repr(dict(os.environ)))
