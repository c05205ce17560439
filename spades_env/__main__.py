"""``python -m spades_env COMMAND``: the ``spades`` command (``spades_env.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
