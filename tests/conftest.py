import os
import sys

# Helper modules under tests/ (peers, oracles) import as top-level names.
sys.path.insert(0, os.path.dirname(__file__))
