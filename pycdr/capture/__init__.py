"""Captures: reading pcap and pcapng files and live traffic, and the GIOP in them.

From the bottom up:

- :mod:`~pycdr.capture.read` streams a file's TCP segments (its record walk in
  C, :mod:`pycdr.capture._pcapwalk`, when built);
- :mod:`~pycdr.capture.live` captures from a network interface with libpcap;
- :mod:`~pycdr.capture.tcp` reassembles each direction of a connection;
- :mod:`~pycdr.capture.giop` frames and decodes the GIOP messages of a capture;
- :mod:`~pycdr.capture.stats` counts and times them, :mod:`~pycdr.capture.parquet`
  writes them as Parquet, :mod:`~pycdr.capture.shard` decodes connections in
  several processes;
- :mod:`~pycdr.capture.write` writes pcap files, and
  :mod:`~pycdr.capture.scapy_layer` is a scapy layer for GIOP.

Nothing is imported here: each command loads the modules it uses.
"""
