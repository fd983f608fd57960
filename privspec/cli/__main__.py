"""``python -m privspec.cli``: the same as the ``privspec`` command."""

import sys

from privspec.cli.app import main

sys.exit(main())
