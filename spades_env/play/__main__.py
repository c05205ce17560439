"""``python -m spades_env.play``: see ``spades_env.play.cli``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
