import sys

from infra.plan.cli import main

sys.exit(main())
