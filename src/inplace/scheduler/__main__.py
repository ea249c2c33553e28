"""``python -m inplace.scheduler`` (same as ``inplace scheduler``)."""

import sys

from .main import main

sys.exit(main())
