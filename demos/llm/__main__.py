"""``python -m demos.llm "prompt"`` generates; ``python -m demos.llm serve`` starts the server."""

import sys

from demos.llm.cli import main

sys.exit(main())
