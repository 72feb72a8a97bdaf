"""``python -m tang COMMAND ...`` (see tang.cli)."""

import sys

from tang.cli import main

if __name__ == "__main__":
    sys.exit(main())
