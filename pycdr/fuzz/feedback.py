"""What the fuzzer learns from a case: its *features*, and the corpus of the
inputs that showed new ones.

Two kinds of feedback:

- ``sancov``: the edges a target built with clang's
  ``-fsanitize-coverage=trace-pc-guard`` and pycdr's coverage shim
  (pycdr/fuzz/coverage_shim.c) passed.  The fuzzer creates an edge map
  (EdgeMap: a file of MAP_SIZE bytes, in /dev/shm when there is one) for
  each target process it spawns, names it in that process's environment
  variable PYCDR_COVERAGE, clears it before a group of cases (or a case)
  and reads it after (pycdr.fuzz.learning).  A feature is an edge with
  its hit count's bucket (AFL's: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+), so
  a loop that runs more often is new too.  Edges the target passes while
  nothing is sent to it (a timer thread, a housekeeping loop) are found by
  sampling the map over idle periods before the campaign, and masked.
- ``state`` (the default, for closed targets): what the target did, as a
  tuple (state_of): each answer's type, reply status, exception id, minor
  code and completion status, and how the connection ended (closed, reset,
  silent).  A tuple not seen before is a feature.

The corpus keeps every input that showed a feature not seen before; inputs
are picked for mutation by an energy as AFL's power schedule has it (newer,
rarer-feature, smaller and less often picked inputs get more); kept inputs
are minimized first (messages dropped and bytes cut while the features they
brought stay), and saved in a folder (``--corpus-dir``) a later campaign
starts from."""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import accumulate

from ..errors import PycdrError
from ..fastpath import c_allowed
from ..giop.header import HEADER_SIZE, MsgType
from .mutators import fix_size

ENV = "PYCDR_COVERAGE"
MAP_SIZE = 1 << 16          # the shim's PYCDR_MAP_SIZE
FEEDBACK_KINDS = ("state", "sancov", "none")
_ZERO = bytes(MAP_SIZE)
REWEIGH = 32
# Picks of a newly kept input in a row.
BURST = 32
# Seconds the target is left alone before its idle edges are watched.
SETTLE = 0.1
_NONZERO = re.compile(rb"[^\x00]+")
# AFL's hit-count buckets: a count's class, 1-8.
BUCKET = bytes([0, 1, 2, 3] + [4] * 4 + [5] * 8 + [6] * 16 + [7] * 96 + [8] * 128)


def _features_python(edge_map, masked, uncounted, bucket) -> list:
    """The features of an edge map (one byte per edge): edge << 4 |
    bucket[count] for each edge passed (| 1 when uncounted[edge]), in the
    order of the edges; masked edges and edge 0 (guards not numbered yet)
    left out.  ``masked``, ``uncounted``: a flag byte per edge.  In C,
    pycdr.fuzz._edgemap.features (a case is read at a word of the map a
    time: a few hundred edges of 65536); the two give the same lists."""
    data = edge_map[:]           # (one copy: the target may be writing)
    out = []
    for run in _NONZERO.finditer(data):
        for edge in range(run.start(), run.end()):
            if edge and not masked[edge]:
                out.append(edge << 4 | (1 if uncounted[edge] else bucket[data[edge]]))
    return out


IMPLEMENTATION = "python"
_features = _features_python
if c_allowed():
    try:
        from ._edgemap import features as _features
    except ImportError:          # extension not built: the Python scan alone
        pass
    else:
        IMPLEMENTATION = "c"


class EdgeMap:
    """The shared edge map: created empty, named by ``path`` (the value of
    PYCDR_COVERAGE), removed by close().  ``masked`` and ``uncounted`` may be
    sets another map has too (the target processes of a campaign each write
    a map of their own; which edges flicker is the binary's)."""

    def __init__(self, directory: str | None = None, *, masked: set | None = None,
                 uncounted: set | None = None):
        if directory is None:
            directory = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
        fd, self.path = tempfile.mkstemp(prefix="pycdr-coverage-", dir=directory)
        try:
            os.ftruncate(fd, MAP_SIZE)
            self.map = mmap.mmap(fd, MAP_SIZE)
        finally:
            os.close(fd)
        # Edges that flicker without input; edges whose hit counts vary (passed or not).
        self.masked: set[int] = set() if masked is None else masked
        self.uncounted: set[int] = set() if uncounted is None else uncounted
        self._flags = None                   # (the two as flag bytes, and what they were of)

    def environment(self) -> dict:
        return {ENV: self.path}

    def reset(self) -> None:
        self.map[:] = _ZERO

    def edges(self) -> dict:
        """Edge -> hit count (the shim's wrapping byte), masked ones left out."""
        data = self.map[:]
        out = {}
        for run in _NONZERO.finditer(data):
            for edge in range(run.start(), run.end()):
                if edge not in self.masked:
                    out[edge] = data[edge]
        out.pop(0, None)                       # guards not numbered yet
        return out

    def features(self) -> frozenset:
        """The edges passed since the last reset, each with its count's
        bucket (1 for an edge in ``uncounted``), masked ones left out."""
        return frozenset(_features(self.map, *self._flag_bytes(), BUCKET))

    def _flag_bytes(self) -> tuple:
        """``masked`` and ``uncounted`` as a flag byte per edge, made again
        when either set changed (they only grow: by their sizes)."""
        key = (id(self.masked), len(self.masked), id(self.uncounted), len(self.uncounted))
        if self._flags is None or self._flags[0] != key:
            flags = []
            for edges in (self.masked, self.uncounted):
                out = bytearray(MAP_SIZE)
                for edge in edges:
                    if 0 <= edge < MAP_SIZE:
                        out[edge] = 1
                flags.append(bytes(out))
            self._flags = (key, tuple(flags))
        return self._flags[1]

    def calibrate(self, idle: float = 0.5, samples: int = 5) -> set:
        """Watch the map while nothing is sent to the target, ``samples``
        windows over ``idle`` seconds: the edges passed meanwhile are masked
        from now on.  The edges masked by this call."""
        found: set[int] = set()
        time.sleep(SETTLE)          # what the last connection set going ends first
        for _ in range(samples):
            self.reset()
            time.sleep(idle / samples)
            found |= set(self.edges())
        self.masked |= found
        return found

    def close(self) -> None:
        try:
            self.map.close()
        except (BufferError, ValueError):
            pass
        try:
            os.unlink(self.path)
        except OSError:
            pass


def answer_state(msg) -> tuple:
    """One answer's part of a state: its type and, for a Reply, its status and
    system exception (id, minor code, completion status), for a LocateReply its
    status."""
    kind = getattr(msg, "msg_type", None)
    name = kind.name if isinstance(kind, MsgType) else type(msg).__name__
    if kind == MsgType.Reply:
        exc = getattr(msg, "system_exception", None)
        return (name, int(msg.reply_status)) + (
            (exc.repo_id, exc.minor, int(exc.completed)) if exc is not None else ())
    if kind == MsgType.LocateReply:
        return (name, int(getattr(msg, "locate_status", -1)))
    return (name,)


def state_of(obs) -> tuple:
    """What the target did on one connection (a conformance.wire.Observation),
    as a hashable tuple: per answer its type and, for a Reply, its status
    and system exception (id, minor code, completion status) or for a
    LocateReply its status; then how the connection ended."""
    out = [answer_state(event.message) for event in obs.messages]
    if obs.connect_error:
        end = "unreachable"
    elif obs.reset:
        end = "reset"
    elif obs.closed:
        end = "closed"
    else:
        return kept_open_state(out)
    return tuple(out) + (end,)


def state_features(state: tuple) -> frozenset:
    """The features of one connection's state (state_of): each answer as
    answer_state gives it, and each step from one answer to the next (from
    the connection's start, and to how it ended) -- as AFLNet counts a
    server's response codes and their transitions. A case is new when it
    shows an answer or a step not seen before, not merely another
    arrangement of known ones (the number of arrangements grows with the
    number of requests a case sends)."""
    answers, end = state[:-1], state[-1]
    steps = zip((("start",),) + answers, answers + ((end,),))
    return frozenset(answers) | frozenset(("step",) + step for step in steps)


def kept_open_state(answers) -> tuple:
    """The state of a connection the target kept open after ``answers`` (each
    an answer_state): a case of a pipelined batch, or one on its own connection."""
    return tuple(answers) + ("open" if answers else "silent",)


# --------------------------------------------------------------------------
@dataclass
class Entry:
    """One kept input."""
    messages: list
    origin: str                       # the seed it came from, or "corpus" (a folder's)
    features: frozenset = frozenset()
    found_at: int = 0                 # the campaign's case count when it was kept
    picked: int = 0                   # times picked for mutation
    body_types: list | None = None
    name: str = ""
    # (Worked out once: the power schedule asks for it every REWEIGH picks.)
    _size: int | None = field(default=None, repr=False, compare=False)
    # (energy() but for its picks, of an input with no features kept at the start.)
    _plain: float | None = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        if self._size is None:
            self._size = sum(map(len, self.messages))
        return self._size


@dataclass
class Corpus:
    """The inputs that showed features not seen before, with the features
    seen so far and how many inputs showed each."""
    entries: list = field(default_factory=list)
    seen: Counter = field(default_factory=Counter)     # feature -> inputs showing it
    folder: str | None = None
    _weights: list | None = None
    _burst: list | None = None          # [entry, picks left]
    _names: dict = field(default_factory=dict)   # entry_name -> kept Entry
    _picks: int = 0

    def new_features(self, features) -> frozenset:
        return frozenset(f for f in features if f not in self.seen)

    def observe(self, features) -> None:
        self.seen.update(features)

    def add(self, entry: Entry) -> Entry:
        """Keep ``entry``: the next BURST picks are it (as AFL fuzzes a new
        input at once: what is one step past a check is most often found
        from there)."""
        entry.name = entry.name or entry_name(entry.messages)
        same = self._names.get(entry.name)
        if same is not None:
            # (Minimized, two inputs may become one.)
            same.features = same.features | entry.features
            return same
        self._names[entry.name] = entry
        self.entries.append(entry)
        self._burst = [entry, BURST]
        if self.folder is not None:
            save_entry(self.folder, entry)
        return entry

    def energy(self, entry: Entry, now: int) -> float:
        """How much an input is mutated, as AFL's power schedule: more for an
        input with rare features (seen in few inputs), for a new one (kept
        late in the campaign), a small one, and one picked seldom so far."""
        return self.energies([entry], now)[0]

    def energies(self, entries, now: int) -> list:
        """energy() of each of ``entries``, in one pass (the schedule's
        weights: worked out for the whole corpus every REWEIGH picks)."""
        count = self.seen.get
        since = max(1, now)
        out = []
        append = out.append
        for entry in entries:
            features = entry.features
            plain = entry._plain
            if plain is not None and not features and not entry.found_at:
                # (An input that brought nothing new, kept at the start, as
                # the seeds: all but its picks worked out once.)
                append(plain / (1.0 + entry.picked) ** 0.5)
                continue
            rarity = (sum([1.0 / n for n in map(count, features) if n])
                      if features else 0) or 0.1
            newness = 1.0 + 4.0 * entry.found_at / since
            size = entry.size
            smallness = 1.0 if size <= 256 else 256.0 / size
            if not features and not entry.found_at:
                entry._plain = rarity * newness * smallness
            append(rarity * newness * smallness / (1.0 + entry.picked) ** 0.5)
        return out

    def pick(self, rng, now: int) -> Entry:
        """An input to mutate, by energy (worked out again after an input is
        added and every REWEIGH picks: it changes slowly)."""
        if self._burst is not None and self._burst[1] > 0:
            self._burst[1] -= 1
            self._burst[0].picked += 1
            return self._burst[0]
        if self._weights is None or len(self._weights) != len(self.entries) or \
                self._picks % REWEIGH == 0:
            self._weights = list(accumulate(self.energies(self.entries, now)))
        self._picks += 1
        entry = rng.choices(self.entries, cum_weights=self._weights)[0]
        entry.picked += 1
        return entry


def entry_name(messages) -> str:
    return hashlib.sha1(b"\0".join(messages)).hexdigest()[:16]


def save_entry(folder: str, entry: Entry) -> str:
    """The input as ``<hash>.hex``: one message a line, in hex (as a
    finding's messages.hex)."""
    os.makedirs(folder, exist_ok=True)
    entry.name = entry.name or entry_name(entry.messages)
    path = os.path.join(folder, entry.name + ".hex")
    with open(path, "w") as f:
        f.write("".join(m.hex() + "\n" for m in entry.messages))
    return path


def load_folder(folder: str) -> list[Entry]:
    """The inputs a campaign kept in ``folder`` (none when it does not exist
    yet); a PycdrError naming the file that is not one."""
    if not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".hex"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                messages = [bytes.fromhex(line.strip()) for line in f if line.strip()]
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise PycdrError(f"corpus file {path} is not one message in hex a line: {e}") \
                from None
        if messages:
            out.append(Entry(messages, "corpus", name=name[:-4]))
    return out


def trim(messages, keeps, budget: int = 24, cut=None, together=None) -> list:
    """``messages`` made smaller while ``keeps(candidate)`` holds (the
    features the input brought are still there): messages dropped, then
    blocks of bytes cut from each (``cut(message, at, n)``: by default with
    the GIOP message_size fixed up), halving the block size; at most
    ``budget`` tries.

    With ``together(candidates)`` (what ``keeps`` says of each, in order,
    the candidates run at once), the tries still to come if none held are
    made together, and the first that holds is taken (those after it are
    dropped, not counted): the same result as one try at a time, in a round
    of the target's answers per try that held instead of one per try."""
    cut = cut or _cut
    step = _Trim(cut, [bytes(m) for m in messages], budget)
    if together is None:
        while (candidate := step.candidate()) is not None:
            step = step.after(candidate, keeps(candidate))
        return step.msgs
    while True:
        tries = []                 # (the try, and where failing it leads)
        spot = step
        while (candidate := spot.candidate()) is not None:
            tries.append((spot, candidate))
            spot = spot.after(candidate, False)
        if not tries:
            return spot.msgs
        if len(tries) == 1:
            held = [keeps(tries[0][1])]
        else:
            held = together([candidate for _, candidate in tries])
        for (spot, candidate), kept in zip(tries, held):
            if kept:
                step = spot.after(candidate, True)
                break
        else:
            return tries[-1][0].after(tries[-1][1], False).msgs


@dataclass(frozen=True)
class _Trim:
    """Where trim() is: the messages so far, the tries left, and the next
    try's place (``k``: the message; ``size`` 0: dropping messages, else
    cutting ``size`` bytes at ``at``)."""
    cut: object
    msgs: list
    tries: int
    k: int = 0
    size: int = 0
    at: int = HEADER_SIZE

    def candidate(self):
        """The next try's messages; None when trim() is done."""
        spot = self._next()
        if spot is None:
            return None
        msgs, k = spot.msgs, spot.k
        if spot.size == 0:
            return msgs[:k] + msgs[k + 1:]
        return msgs[:k] + [self.cut(msgs[k], spot.at, spot.size)] + msgs[k + 1:]

    def _next(self):
        """This place, or the first after it that has a try; None when the
        tries or the places are used up."""
        if self.tries <= 0:
            return None
        msgs, k, size, at = self.msgs, self.k, self.size, self.at
        if size == 0:
            if k < len(msgs) and len(msgs) > 1:
                return self
            k, size, at = 0, -1, HEADER_SIZE
        while k < len(msgs):
            if size < 0:            # (a message's first block: half its body)
                size = max(1, (len(msgs[k]) - HEADER_SIZE) // 2)
            if at < len(msgs[k]):
                return _Trim(self.cut, msgs, self.tries, k, size, at)
            size, at = size // 2, HEADER_SIZE
            if size < 1:
                k, size = k + 1, -1
        return None

    def after(self, candidate, held: bool):
        """Where trim() goes once ``candidate`` (this place's try) held or
        did not."""
        spot = self._next()
        msgs, k, size, at = spot.msgs, spot.k, spot.size, spot.at
        if held:
            return _Trim(self.cut, candidate, spot.tries - 1, k, size, at)
        if size == 0:
            return _Trim(self.cut, msgs, spot.tries - 1, k + 1, 0, at)
        return _Trim(self.cut, msgs, spot.tries - 1, k, size, at + size)


def _cut(message: bytes, at: int, n: int) -> bytes:
    out = bytearray(message[:at] + message[at + n:])
    fix_size(out)
    return bytes(out)
