"""``python -m sampling`` runs the main job, like ``python -m sampling.train``."""

import sys

from sampling.train import main

if __name__ == "__main__":
    sys.exit(main())
