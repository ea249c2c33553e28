"""`python -m inplace` is the `inplace` command."""

import sys

from inplace.cli.main import main

sys.exit(main())
