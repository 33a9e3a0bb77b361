"""A fixture for test/lint: clean."""
import os

print(os.sep)
