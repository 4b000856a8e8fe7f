"""``python -m slacknet`` is the ``slacknet`` command."""

import sys

from .cli import main

sys.exit(main())
