"""Sphinx configuration for the spla documentation.

Build with (from the repository root)::

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

import os
import sys

# The packages are imported from the checkout, installed or not.
sys.path.insert(0, os.path.abspath(".."))

import spla  # noqa: E402

project = "spla"
author = "the spla developers"
copyright = "the spla developers, BSD-3-Clause"
version = release = spla.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
]

# Default theme (alabaster ships with Sphinx): no extra dependency.
html_theme = "alabaster"
html_static_path = []
exclude_patterns = ["_build"]
templates_path = []

# autosummary tables only; the entries themselves are written with
# autofunction/autoclass in api.rst, so nothing is generated into the tree.
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"

# numpydoc: members are listed with autoclass's :members:, not by numpydoc.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
