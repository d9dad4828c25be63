"""`python -m acprof.eager profile|rewrite ...`: the eager front end's command (command_line.py)."""

import sys

from .command_line import main

sys.exit(main())
