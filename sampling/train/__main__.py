"""``python -m sampling.train``: the main job (see ``sampling.train``)."""

import sys

from sampling.train import main

if __name__ == "__main__":
    sys.exit(main())
