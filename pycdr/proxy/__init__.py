"""``pycdr proxy``: a GIOP-aware intercepting proxy.

- :mod:`pycdr.proxy.core`: the protocol core, sans I/O (bytes in, what to send out):
  framing, checking, reference rewriting, rules, call rows;
- :mod:`pycdr.proxy.rules`: the fault rules (match and action vocabulary);
- :mod:`pycdr.proxy.server`: the asyncio layer (listening ports, upstream
  connections, timed writes, backpressure, the pcap record).
"""
