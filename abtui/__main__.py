"""`python -m abtui` is the same as the `abtui` console script."""

from abtui.cli import main

raise SystemExit(main())
