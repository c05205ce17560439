"""``python -m spades_env.play``: the old form of ``spades play`` (``spades_env.play.cli``), kept
for one version with a notice."""

import sys

from .cli import main

if __name__ == "__main__":
    print("notice: `python -m spades_env.play` is now `spades play` (the old form is removed in "
          "0.8.0)", file=sys.stderr)
    sys.exit(main())
