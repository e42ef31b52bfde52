"""`python -m selftest` (under torchrun): run the self-test and exit 0 only when nothing FAILs."""

import sys

from selftest.runner import main

sys.exit(main())
