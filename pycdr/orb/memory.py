"""Giving memory back to the system after load: glibc's ``malloc_trim``.

A server that held many incomplete messages frees their buffers when they go, but
glibc keeps most of what it freed: buffers of a few hundred KB come from the heap once
its mmap threshold has risen (it rises to the size of each mmapped block freed), and a
heap only shrinks from its top.  ``malloc_trim(0)`` returns the free pages inside the
heap too.  benchmarks/bench_hostile_load.py measures it: 1,500 connections holding 64 KB
each, then gone, and the server's RSS after the attack (``--server-arg=--keep-memory``
for the same without the trim).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

__all__ = ["release_free_memory", "can_release_free_memory"]


@functools.lru_cache(maxsize=None)
def _malloc_trim():
    """glibc's malloc_trim, or None (another C library, or no ctypes loading)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def can_release_free_memory() -> bool:
    return _malloc_trim() is not None


def release_free_memory() -> bool:
    """Ask the C allocator to return its free memory to the system; whether it
    could be asked (glibc) and gave some back."""
    trim = _malloc_trim()
    return trim is not None and trim(0) == 1
