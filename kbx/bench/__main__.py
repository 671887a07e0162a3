"""`python -m kbx.bench eval|summary|table|overhead|quiet|sandbox|llm|limits|traces|costs`: see kbx.bench.suite."""

import sys

from kbx.bench.suite import main

sys.exit(main())
