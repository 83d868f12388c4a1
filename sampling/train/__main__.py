"""``python -m sampling.train``: the main job (see ``sampling.train``)."""

from sampling.train.job import console_main

if __name__ == "__main__":
    console_main()
