"""``python -m spades_env.play``, the 0.7 form of ``spades play``, was removed in 0.9.0: it says
so in one line and exits with status 2."""

import sys

if __name__ == "__main__":
    print("error: `python -m spades_env.play` was removed in 0.9.0: use `spades play`",
          file=sys.stderr)
    sys.exit(2)
