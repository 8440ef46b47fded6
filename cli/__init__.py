"""pycdr command line (imported as pycdr.cli)."""
