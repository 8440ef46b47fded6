"""GIOP calls as rows: a request with its reply (or what became of it) is one row.

- :mod:`pycdr.calls.schema`: the call table, defined once (field names, types,
  the Arrow schema, the JSON form, the field list of docs/monitor.md);
- :mod:`pycdr.calls.tracker`: :class:`~pycdr.calls.tracker.CallTracker`, decoded
  messages in, rows out (sans-I/O; the pending-request table is bounded);
- :mod:`pycdr.calls.communityid`: the Community ID v1 flow hash;
- :mod:`pycdr.calls.bodies`: arguments and results as typed JSON, with IDL;
- :mod:`pycdr.calls.output`: JSON Lines, one text line a call, Hive-partitioned Parquet.

:mod:`pycdr.capture.monitor` feeds a tracker from capture files and live traffic
(``pycdr monitor``); anything else that sees GIOP messages (a proxy) feeds one the
same way and writes the same rows.

The row is the unit everything consumes: an output is any object with ``add(row)`` and
``close()`` (metrics and trace exporters are outputs too), the tracker's ``counts``
hold what is not a row (evictions, pending requests), and a capture's connections can
be split over processes (``CaptureCalls(shard=(k, n))``) whose Parquet parts, named
by a fixed ``prefix``, are the same files when a task runs again.
"""
