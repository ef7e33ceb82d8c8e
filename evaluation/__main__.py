"""`python -m evaluation --qrels FILE --run FILE ...`: score files without starting Django (evaluation/cli.py)."""

import sys

from .cli import main

sys.exit(main())
