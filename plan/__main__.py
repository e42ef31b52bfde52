import sys

from plan.cli import main

sys.exit(main())
