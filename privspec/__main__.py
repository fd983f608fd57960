"""``python -m privspec``: the command line, as the ``privspec`` script."""

import sys

from privspec.cli.app import main

sys.exit(main())
