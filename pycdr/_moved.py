"""Modules that moved, still importable under the names users already have.

``import pycdr.pcap`` (and ``from pycdr.pcap import decode_capture``) keep
working after the capture modules moved into :mod:`pycdr.capture`, the codec
into :mod:`pycdr.codec`, the addressing modules into
:mod:`pycdr.addressing` and the fuzzer's message layout into
:mod:`pycdr.giop.layout`: the old
name is an alias of the module at its new place (the same module object, so
classes and state are shared) and importing it warns once with a
DeprecationWarning that names the new place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old module name -> the module it now is
MOVED = {
    "pycdr.pcap": "pycdr.capture.giop",
    "pycdr.pcapread": "pycdr.capture.read",
    "pycdr.pcaplive": "pycdr.capture.live",
    "pycdr.pcapwrite": "pycdr.capture.write",
    "pycdr.pcapstats": "pycdr.capture.stats",
    "pycdr.pcapparquet": "pycdr.capture.parquet",
    "pycdr.pcapshard": "pycdr.capture.shard",
    "pycdr.tcpstream": "pycdr.capture.tcp",
    "pycdr.scapy_giop": "pycdr.capture.scapy_layer",
    "pycdr.cdr": "pycdr.codec.cdr",
    "pycdr.typecode": "pycdr.codec.typecode",
    "pycdr.tc": "pycdr.codec.tc",
    "pycdr.values": "pycdr.codec.values",
    "pycdr.scalars": "pycdr.codec.scalars",
    "pycdr.tcmarshal": "pycdr.codec.tcmarshal",
    "pycdr.valuetype": "pycdr.codec.valuetype",
    "pycdr.marshal": "pycdr.codec.marshal",
    "pycdr.plan": "pycdr.codec.plan",
    "pycdr.ior": "pycdr.codec.ior",
    "pycdr.iiop": "pycdr.addressing.iiop",
    "pycdr.objectkey": "pycdr.addressing.objectkey",
    "pycdr.corbaloc": "pycdr.addressing.corbaloc",
    "pycdr.fuzz.layout": "pycdr.giop.layout",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new_name: str):
        self.new_name = new_name
        self._spec = None

    def create_module(self, spec):
        warnings.warn(f"{spec.name} has moved to {self.new_name}: import it from there",
                      # warnings.warn passes over the import system's frames: level 2 is
                      # the line that wrote the import.
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new_name)
        self._spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # The import system has just set the alias's spec on the shared module;
        # the module keeps its own (reload and pickling go by the new name).
        module.__spec__ = self._spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new_name = MOVED.get(fullname)
        if new_name is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new_name))


def install() -> None:
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
