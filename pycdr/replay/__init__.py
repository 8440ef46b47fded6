"""``pycdr replay``: a capture's calls sent again to a live endpoint, every reply
compared with the recorded one.

:mod:`.session` rewrites one recorded connection's messages and matches the
replies (sans I/O), :mod:`.compare` compares two replies, :mod:`.runner` reads the
capture and drives the connections, :mod:`.summary` counts the outcomes.
"""
