"""GIOP conformance suite (imported as pycdr.conformance)."""
