"""`pycdr pcap` on several cores: TCP connections sharded over processes,
output in the order one process writes it.

    for text in sharded_output(path, 2, entry_text, decode_body=decoder):
        sys.stdout.write(text)

Each of ``n`` forked workers reads the whole capture and reassembles every TCP
connection (cheap: the reader's C walk and the reassembly are a tenth of the
work), but decodes only the connections whose index is its own modulo ``n``
(:class:`pycdr.capture.giop.CaptureDecoder`'s ``shard``), formats its entries and sends
them to the parent in batches, each with the key of the moment it was made:

- ``(0, frame, 0)`` while the capture is read: a segment's entries all belong
  to its connection, so one worker makes all the entries of a frame;
- ``(1, 0, closed)`` at the end of the capture, when the connections still
  open are closed one after the other: ``closed`` counts the closes, which
  every worker sees alike (they all reassemble every connection).

The parent merges the workers' streams by key: the output of one process,
byte for byte (tests/test_pcapshard.py compares them).  A pipe holds a few
batches, so a worker ahead of the others waits: memory stays flat.  A
capture error ends every worker at the same record; the parent writes what
came before it, then raises the error.
"""

from __future__ import annotations

import heapq
import multiprocessing
import os
from operator import itemgetter

from ..errors import CaptureError, PycdrError
from .giop import CaptureDecoder
from .read import CaptureReader
from .tcp import TcpReassembler

# Entries a worker sends at once: large enough that pickling is a small part.
BATCH = 512


def sharded_output(path, n: int, format_entry, *, ports=None, decode_body=None,
                   bodies: bool = True):
    """The texts ``format_entry(entry)`` of every entry of the capture at
    ``path``, in the order :func:`pycdr.capture.giop.iter_capture` gives the entries,
    made by ``n`` worker processes."""
    context = multiprocessing.get_context("fork")
    pipes, workers = [], []
    try:
        for k in range(n):
            receive, send = context.Pipe(duplex=False)
            worker = context.Process(target=_worker, daemon=True, args=(
                send, path, (k, n), format_entry, ports, decode_body, bodies))
            worker.start()
            send.close()
            pipes.append(receive)
            workers.append(worker)
        failures: list = []
        for _, text in heapq.merge(*(_received(p, failures) for p in pipes),
                                   key=itemgetter(0)):
            yield text
        if failures:
            raise failures[0]
    finally:
        for p in pipes:
            p.close()
        for w in workers:
            w.join(timeout=1)
            if w.is_alive():
                w.terminate()
                w.join()


def _received(pipe, failures: list):
    """The (key, text) pairs a worker sends; the error it ends with goes to ``failures``."""
    while True:
        try:
            batch = pipe.recv()
        except EOFError:
            failures.append(CaptureError("a worker process ended without its results"))
            return
        if isinstance(batch, BaseException):
            failures.append(batch)
            return
        if batch is None:
            return
        yield from batch


def _worker(pipe, path, shard, format_entry, ports, decode_body, bodies) -> None:
    try:
        batch: list = []
        out: list = []
        decoder = CaptureDecoder(out.append, ports, decode_body=decode_body, bodies=bodies,
                                 shard=shard)
        tcp = TcpReassembler(decoder)
        feed = tcp.in_order_feed(decoder.take_whole)
        with CaptureReader(path) as reader:
            for segment in reader:
                feed(segment)
                if out:
                    key = (0, segment[0], 0)
                    batch += [(key, format_entry(e)) for e in out]
                    out.clear()
                    if len(batch) >= BATCH:
                        pipe.send(batch)
                        batch = []
        # The end: entries made while connection number `closed` is being closed.
        closes = [0]
        closed = decoder.closed

        def counting_closed(connection):
            closed(connection)
            if out:
                batch.extend(((1, 0, closes[0]), format_entry(e)) for e in out)
                out.clear()
            closes[0] += 1
        decoder.closed = counting_closed
        tcp.finish()
        pipe.send(batch)
        pipe.send(None)
    except PycdrError as e:
        pipe.send(batch)
        pipe.send(e)
    except BrokenPipeError:
        pass                                    # the parent stopped reading
    finally:
        pipe.close()
        os._exit(0)                             # (a forked child: no atexit of the parent's)
