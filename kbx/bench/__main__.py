"""`python -m kbx.bench eval|summary|table|overhead|quiet|sandbox|llm|limits|traces`: see kbx.bench.suite."""

import sys

from kbx.bench.suite import main

sys.exit(main())
