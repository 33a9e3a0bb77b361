"""A fixture for test/lint: an import nothing uses (flake8 F401)."""
import os
