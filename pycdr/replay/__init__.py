"""``pycdr replay``: a capture's calls sent again to a live endpoint, every reply
compared with the recorded one.

:mod:`.session` rewrites one recorded connection's messages and matches the
replies (sans I/O), :mod:`.compare` compares two replies, :mod:`.runner` reads the
capture and drives the connections (:mod:`.targets` says where they go,
:mod:`.capture_feed` feeds it the capture, :mod:`.recorded` holds a connection's
state, :mod:`.pacing` paces it, :mod:`.lanes` hands a connection's steady state to
C), :mod:`.jobs` splits a replay over processes, :mod:`.summary` counts the outcomes.
"""
