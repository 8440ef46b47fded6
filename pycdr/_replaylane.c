/* pycdr._replaylane: the steady state of one `pycdr replay` connection in C.
 *
 * A replay spends nearly all its time on calls that need no judgement: a request
 * of a shape seen before, rewritten with the next request id; its recorded reply;
 * a replayed reply that repeats the recorded bytes but for the request id.  Done
 * in Python that costs some thirty microseconds a call (benchmarks/bench_replay.py); a
 * Lane does it for the calls of one connection while the replay's Python code
 * (pycdr/replay/runner.py) holds none of them.  With a window (--window N > 1) it
 * keeps up to N calls waiting for their replayed reply; with window 1 (as
 * recorded) it waits where Replay._wait_for waits: at a recorded reply whose
 * replayed one has not come.
 *
 * A Lane takes an item or a reply only when it can finish what Python would do
 * with it; anything else -- a request of a shape it was not given, a recorded
 * reply that may teach a key, a replayed reply that differs in its values (or,
 * where Lane.values does not say how to read them, in bytes) or that
 * names no call of it, any message that is not a whole GIOP 1.2+ Reply, the end
 * of the recording -- makes it stop before that item or message ("hand over").
 * The runner then takes the calls it holds back as ordinary Calls
 * (Lane.materialize) and goes on in Python; a call is never half handled here.
 *
 * The calls a Lane finishes are the same ones, by the same rules, as Python's:
 *   - ReplaySession._outgoing_shaped for the request's bytes,
 *   - ReplaySession.recorded / ReplyStream.whole_reply for a recorded reply,
 *   - ReplyStream.feed / RawReply.same_but_id for the replayed replies, and
 *   - Replay._decide's first rule (the same by bytes where judged_by_bytes), and
 *     for replies that differ in bytes only where no value lies (padding),
 *     Comparison._results' (the values read by the C decoder are equal).
 * tests/test_replay_lane.py replays the same captures with and without a Lane
 * and compares every call's outcome.
 *
 * pump() serves the sockets of the lanes that hold their connections (plain TCP,
 * non-blocking): it polls them without sleeping, reads what came, takes the replies
 * and the next items as replayed() and advance() do, and sends the bytes, until
 * something needs Python (a hand-over, a read that failed or found the end, a send
 * the socket did not take whole, a socket Python serves, the capture to read on, a
 * spin or a budget spent).  The calls then go the same way as through Python's own
 * reads and writes (Replay._pump_turn); a reply's arrival and the next request's
 * send cost no Python call.
 *
 * Nothing here reads a length without checking it against the bytes at hand,
 * and nothing is allocated from one: a replayed message is framed only once
 * the bytes it claims are there, and one claiming more than max_message bytes
 * is handed over (Python's stream judges it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#define HEADER 12
#define MSG_REQUEST 0
#define MSG_REPLY 1
#define FLAG_FRAGMENT 2
/* Shape entry flags (Replay._lane_table writes them). */
#define SHAPE_ONEWAY 1
#define SHAPE_SKIPPED 2
#define JUDGED_SHIFT 8      /* bit s of (flags >> 8): reply status s judged by bytes */
#define MAX_STATUS 5
/* The most calls a lane holds: its lookups scan them, so a recording whose replies never
   come (a capture of one direction) must not make each step longer; beyond it the
   calls go to Python's books (dicts). */
#define MAX_HELD 1024

static inline uint32_t ulong_at(const unsigned char *p, int little) {
    return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                  : (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static inline void put_ulong(unsigned char *p, uint32_t v, int little) {
    if (little) {
        p[0] = v & 0xff; p[1] = v >> 8 & 0xff; p[2] = v >> 16 & 0xff; p[3] = v >> 24;
    } else {
        p[3] = v & 0xff; p[2] = v >> 8 & 0xff; p[1] = v >> 16 & 0xff; p[0] = v >> 24;
    }
}

static inline double monotonic(void) {
    /* time.monotonic() on Linux: the call's send and reply times are compared with
       the ones Python takes for the calls it holds */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One two-way call sent by the lane. */
typedef struct {
    PyObject *sent;         /* the bytes sent */
    PyObject *recorded;     /* the recorded reply (bytes), once read */
    PyObject *replayed;     /* the replayed reply (bytes), once come */
    long long request_ts, recorded_ts;     /* capture times (ns) */
    double sent_at, replayed_at;           /* monotonic seconds */
    double awaited_at;      /* (as recorded) when its recorded reply made the lane wait */
    uint32_t recorded_id, replay_id;
    long op;
    unsigned judged;        /* reply statuses judged by bytes (a bit each) */
    int done;
} Record;

/* What the lane finished of one operation since results() was last called: counts, and
   latencies as pycdr.capture.stats.LatencyHistogram counts them (bucket -> samples). */
typedef struct {
    long same, skipped;
    PyObject *buckets[2];   /* recorded, replayed: dict or NULL */
    long count[2];
    double max[2];
    int touched;
} OpStats;

typedef struct {
    PyObject_HEAD
    PyObject *shapes;       /* dict: request bytes 4..8 + 16..name end -> tuple of entries */
    PyObject *values;       /* None or (read, per operation: None, True or plan nodes) */
    OpStats *ops;           /* by operation index */
    Py_ssize_t nops;
    double floor, per_log, floor_buckets;  /* LatencyHistogram.BUCKETING */
    Record *recs;           /* the calls held, in send order: [head, count) */
    Py_ssize_t head, count, cap;
    Py_ssize_t settled;     /* records before it have their replayed reply (or are done) */
    Py_ssize_t window;
    /* window 1, as recorded: the lane waits, as Replay._wait_for does, at a recorded
       reply whose replayed one has not come: ``awaited`` such calls held. */
    int as_recorded;
    Py_ssize_t awaited;
    Py_ssize_t max_message;
    unsigned long long next_id;
    unsigned char *buf;     /* replayed bytes not framed yet */
    Py_ssize_t buflen, bufcap;
} Lane;

static void record_clear(Record *r) {
    Py_CLEAR(r->sent);
    Py_CLEAR(r->recorded);
    Py_CLEAR(r->replayed);
}

static void lane_drop_records(Lane *self) {
    for (Py_ssize_t i = self->head; i < self->count; i++)
        record_clear(&self->recs[i]);
    self->head = self->count = self->settled = 0;
    self->awaited = 0;
}

static int lane_traverse(Lane *self, visitproc visit, void *arg) {
    Py_VISIT(self->shapes);
    Py_VISIT(self->values);
    for (Py_ssize_t i = 0; i < self->nops; i++) {
        Py_VISIT(self->ops[i].buckets[0]);
        Py_VISIT(self->ops[i].buckets[1]);
    }
    return 0;
}

static int lane_clear_refs(Lane *self) {
    Py_CLEAR(self->shapes);
    Py_CLEAR(self->values);
    for (Py_ssize_t i = 0; i < self->nops; i++) {
        Py_CLEAR(self->ops[i].buckets[0]);
        Py_CLEAR(self->ops[i].buckets[1]);
    }
    lane_drop_records(self);
    return 0;
}

static void lane_dealloc(Lane *self) {
    PyObject_GC_UnTrack(self);
    lane_clear_refs(self);
    PyMem_Free(self->ops);
    PyMem_Free(self->recs);
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int lane_init(Lane *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"window", "max_message", "bucketing", NULL};
    Py_ssize_t window, max_message;
    double floor, per_log, floor_buckets;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nn(ddd)", kwlist, &window, &max_message,
                                     &floor, &per_log, &floor_buckets))
        return -1;
    if (window < 1 || max_message < 0 || !(floor > 0) || !(per_log > 0)) {
        PyErr_SetString(PyExc_ValueError, "window must be >= 1, max_message >= 0, the "
                        "bucketing's floor and scale > 0");
        return -1;
    }
    self->window = window;
    self->as_recorded = window == 1;
    self->max_message = max_message;
    self->floor = floor;
    self->per_log = per_log;
    self->floor_buckets = floor_buckets;
    self->next_id = 1;
    Py_XSETREF(self->shapes, Py_NewRef(Py_None));
    Py_XSETREF(self->values, Py_NewRef(Py_None));
    return 0;
}

/* The first record not settled: the oldest call whose replayed reply has not come. */
static void lane_settle(Lane *self) {
    if (self->settled < self->head)
        self->settled = self->head;
    while (self->settled < self->count &&
           (self->recs[self->settled].replayed != NULL || self->recs[self->settled].done))
        self->settled++;
    while (self->head < self->count && self->recs[self->head].done)
        self->head++;
    if (self->head == self->count)
        self->head = self->count = self->settled = 0;
}

static Record *lane_new_record(Lane *self) {
    if (self->count == self->cap) {
        if (self->head > 0) {               /* the done ones at the front go first */
            memmove(self->recs, self->recs + self->head,
                    (size_t)(self->count - self->head) * sizeof(Record));
            self->count -= self->head;
            self->settled -= self->head;
            self->head = 0;
        }
        if (self->count == self->cap) {
            Py_ssize_t cap = self->cap ? self->cap * 2 : 64;
            Record *grown = PyMem_Realloc(self->recs, (size_t)cap * sizeof(Record));
            if (grown == NULL) {
                PyErr_NoMemory();
                return NULL;
            }
            self->recs = grown;
            self->cap = cap;
        }
    }
    Record *r = &self->recs[self->count++];
    memset(r, 0, sizeof(Record));
    return r;
}

static OpStats *op_stats(Lane *self, long op) {
    if (op < 0) {
        PyErr_SetString(PyExc_ValueError, "negative operation index");
        return NULL;
    }
    if (op >= self->nops) {
        Py_ssize_t n = op + 16;
        OpStats *grown = PyMem_Realloc(self->ops, (size_t)n * sizeof(OpStats));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        memset(grown + self->nops, 0, (size_t)(n - self->nops) * sizeof(OpStats));
        self->ops = grown;
        self->nops = n;
    }
    OpStats *st = &self->ops[op];
    st->touched = 1;
    return st;
}

/* LatencyHistogram.add, bucket for bucket (the same double operations, in the same
   order: setup.py builds this file with -ffp-contract=off). */
static int histogram_add(Lane *self, OpStats *st, int which, double seconds) {
    if (st->buckets[which] == NULL && (st->buckets[which] = PyDict_New()) == NULL)
        return -1;
    long key;
    if (seconds < self->floor) {
        key = -1;
    } else {
        double scaled = log(seconds) * self->per_log;
        key = (long)(scaled + self->floor_buckets);
    }
    PyObject *k = PyLong_FromLong(key);
    if (k == NULL)
        return -1;
    PyObject *old = PyDict_GetItemWithError(st->buckets[which], k);     /* borrowed */
    long n = 1;
    if (old != NULL) {
        n = PyLong_AsLong(old) + 1;
        if (n == 0 && PyErr_Occurred()) {
            Py_DECREF(k);
            return -1;
        }
    } else if (PyErr_Occurred()) {
        Py_DECREF(k);
        return -1;
    }
    PyObject *v = PyLong_FromLong(n);
    int rc = v == NULL ? -1 : PyDict_SetItem(st->buckets[which], k, v);
    Py_XDECREF(v);
    Py_DECREF(k);
    if (rc < 0)
        return -1;
    st->count[which]++;
    if (seconds > st->max[which])
        st->max[which] = seconds;
    return 0;
}

/* A call with both replies, the same but for the request id: Replay._decide's SAME. */
static int lane_same(Lane *self, Record *r) {
    double recorded = (double)(r->recorded_ts > r->request_ts ? r->recorded_ts - r->request_ts : 0) / 1e9;
    double replayed = r->replayed_at > r->sent_at ? r->replayed_at - r->sent_at : 0.0;
    OpStats *st = op_stats(self, r->op);
    if (st == NULL || histogram_add(self, st, 0, recorded) < 0 ||
        histogram_add(self, st, 1, replayed) < 0)
        return -1;
    st->same++;
    r->done = 1;
    record_clear(r);
    return 0;
}

/* RawReply.same_but_id: the same length, bytes 0..12 and 16.. the same. */
static int same_but_id(PyObject *a, const unsigned char *b, Py_ssize_t n) {
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(a);
    return PyBytes_GET_SIZE(a) == n && n >= 16 && memcmp(p, b, 12) == 0 &&
        memcmp(p + 16, b + 16, (size_t)(n - 16)) == 0;
}

/* A whole GIOP 1.2+ Reply (as the lane frames them) that Python's fast decoder reads
   as plain: flags no more than the byte order, status NO_EXCEPTION, no service
   contexts; its body starts at 24 (8-aligned: no padding). */
static int plain_reply(const unsigned char *p, Py_ssize_t n) {
    return n >= 24 && (p[6] & ~1) == 0 && ulong_at(p + 16, p[6] & 1) == 0 &&
        ulong_at(p + 20, p[6] & 1) == 0;
}

/* One side's values, read one item after the other as Comparison._read does it
   strictly (the C decoder's path: marshal.read_value). */
static int read_item(PyObject *read, PyObject *node, PyObject *data, Py_ssize_t *pos,
                     int little, PyObject **value) {
    PyObject *args[8] = {node, data, NULL, NULL, NULL, little ? Py_True : Py_False,
                         Py_False, Py_None};
    args[2] = PyLong_FromSsize_t(*pos);
    args[3] = PyLong_FromSsize_t(PyBytes_GET_SIZE(data));
    args[4] = PyLong_FromLong(0);
    PyObject *out = NULL;
    if (args[2] != NULL && args[3] != NULL && args[4] != NULL)
        out = PyObject_Vectorcall(read, args, 8, NULL);
    Py_XDECREF(args[2]);
    Py_XDECREF(args[3]);
    Py_XDECREF(args[4]);
    if (out == NULL)
        return -1;
    Py_ssize_t end;
    if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != 2 ||
        ((end = PyLong_AsSsize_t(PyTuple_GET_ITEM(out, 1))) == -1 && PyErr_Occurred())) {
        Py_DECREF(out);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "read() gave no (value, position)");
        return -1;
    }
    *value = Py_NewRef(PyTuple_GET_ITEM(out, 0));
    *pos = end;
    Py_DECREF(out);
    return 0;
}

/* A replayed reply (p, n) whose bytes differ from the call's recorded one, judged as
   Comparison._results would: with the operation's plan nodes, the same when every
   value read from both bodies is equal (an ORB that leaves padding uninitialised, as
   omniORB does, sends the same values in other bytes); without IDL (True), when the
   bodies' bytes are.  1: the same; 0: Python judges it (it names the differences);
   -1: an error.  A read that fails (a malformed body, a node only Python reads) is
   Python's to judge and report. */
static int same_values(Lane *self, long op, PyObject *recorded, const unsigned char *p,
                       Py_ssize_t n) {
    PyObject *v = self->values;
    if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(v, 1)))
        return 0;
    PyObject *read = PyTuple_GET_ITEM(v, 0), *per_op = PyTuple_GET_ITEM(v, 1);
    if (op < 0 || op >= PyTuple_GET_SIZE(per_op))
        return 0;
    PyObject *how = PyTuple_GET_ITEM(per_op, op);
    const unsigned char *a = (const unsigned char *)PyBytes_AS_STRING(recorded);
    Py_ssize_t an = PyBytes_GET_SIZE(recorded);
    if (how == Py_None || !plain_reply(a, an) || !plain_reply(p, n))
        return 0;
    int same_body = an == n && memcmp(a + 24, p + 24, (size_t)(n - 24)) == 0;
    if (how == Py_True)         /* Comparison._raw_bodies */
        return same_body;
    if (!PyTuple_Check(how))
        return 0;
    if (same_body && (a[6] & 1) == (p[6] & 1))
        return 1;               /* the same bytes, read alike */
    PyObject *b = PyBytes_FromStringAndSize((const char *)p, n);
    if (b == NULL)
        return -1;
    Py_ssize_t apos = 24, bpos = 24;
    int same = 1;
    for (Py_ssize_t i = 0; same == 1 && i < PyTuple_GET_SIZE(how); i++) {
        PyObject *node = PyTuple_GET_ITEM(how, i), *va = NULL, *vb = NULL;
        if (read_item(read, node, recorded, &apos, a[6] & 1, &va) < 0 ||
            read_item(read, node, b, &bpos, p[6] & 1, &vb) < 0)
            same = -1;
        else
            same = PyObject_RichCompareBool(va, vb, Py_EQ);
        Py_XDECREF(va);
        Py_XDECREF(vb);
    }
    Py_DECREF(b);
    if (same < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return -1;
        PyErr_Clear();
        return 0;
    }
    return same;
}

/* The newest record not done sent for the recorded request id ``rid``. */
static Record *by_recorded_id(Lane *self, uint32_t rid) {
    for (Py_ssize_t i = self->count - 1; i >= self->head; i--) {
        Record *r = &self->recs[i];
        if (!r->done && r->recorded_id == rid)
            return r;
    }
    return NULL;
}

static Record *by_replay_id(Lane *self, uint32_t rid) {
    for (Py_ssize_t i = self->head; i < self->count; i++) {
        Record *r = &self->recs[i];
        if (r->replay_id == rid)
            return r->done ? NULL : r;
    }
    return NULL;
}

/* A client Request of a known shape: sent (its bytes appended to ``pieces``).
   1: taken; 0: hand over; -1: error. */
static int take_request(Lane *self, PyObject *raw, PyObject *ts, PyObject *pieces) {
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t n = PyBytes_GET_SIZE(raw);
    if (!PyDict_Check(self->shapes) || n < 28 || memcmp(p, "GIOP", 4) != 0 ||
        p[7] != MSG_REQUEST || (p[6] & ~1) != 0)
        return 0;
    int little = p[6] & 1;
    if ((Py_ssize_t)ulong_at(p + 8, little) != n - HEADER)
        return 0;
    /* _name_end: the operation name ends after the key and its length */
    unsigned long long key_end = 28ULL + ulong_at(p + 24, little);
    unsigned long long at = key_end + (-key_end & 3);
    if (at + 4 > (unsigned long long)n)
        return 0;
    unsigned long long name_end = at + 4 + ulong_at(p + at, little);
    if (name_end > (unsigned long long)n)
        return 0;
    Py_ssize_t end = (Py_ssize_t)name_end;
    PyObject *prefix = PyBytes_FromStringAndSize(NULL, 4 + end - 16);
    if (prefix == NULL)
        return -1;
    memcpy(PyBytes_AS_STRING(prefix), p + 4, 4);
    memcpy(PyBytes_AS_STRING(prefix) + 4, p + 16, (size_t)(end - 16));
    PyObject *entries = PyDict_GetItemWithError(self->shapes, prefix);    /* borrowed */
    Py_DECREF(prefix);
    if (entries == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(entries))
        return 0;
    /* the first entry whose bytes between the name and the body match, as Python's loop */
    PyObject *entry = NULL;
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(entries); i++) {
        PyObject *e = PyTuple_GET_ITEM(entries, i);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 5)
            return 0;
        start = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 0));
        if (start == -1 && PyErr_Occurred())
            return -1;
        PyObject *tail = PyTuple_GET_ITEM(e, 1);
        if (!PyBytes_Check(tail))
            return 0;
        Py_ssize_t between = start > end ? start - end : 0;
        if (n > start && start >= 0 && PyBytes_GET_SIZE(tail) == between &&
            memcmp(PyBytes_AS_STRING(tail), p + end, (size_t)between) == 0) {
            entry = e;
            break;
        }
    }
    if (entry == NULL)
        return 0;
    PyObject *rewritten = PyTuple_GET_ITEM(entry, 2);
    long op = PyLong_AsLong(PyTuple_GET_ITEM(entry, 3));
    long flags = PyLong_AsLong(PyTuple_GET_ITEM(entry, 4));
    if ((op == -1 || flags == -1) && PyErr_Occurred())
        return -1;
    if (!PyBytes_Check(rewritten) || start < end)
        return 0;           /* no bytes for the target's key yet: Python decodes it */
    if (flags & SHAPE_SKIPPED) {
        OpStats *st = op_stats(self, op);
        if (st == NULL)
            return -1;
        st->skipped++;
        return 1;
    }
    uint32_t recorded_id = ulong_at(p + 12, little);
    int oneway = (flags & SHAPE_ONEWAY) != 0;
    if (self->next_id > 0xFFFFFFFEULL || (!oneway && (self->count - self->head >= MAX_HELD ||
                                                      by_recorded_id(self, recorded_id) != NULL)))
        return 0;   /* (a recorded id reused while its call waits: Python's books hold one) */
    long long request_ts = PyLong_AsLongLong(ts);
    if (request_ts == -1 && PyErr_Occurred())
        return -1;
    Py_ssize_t rlen = PyBytes_GET_SIZE(rewritten);
    Py_ssize_t size = 16 + rlen + (n - start);
    if (size - HEADER > 0xFFFFFFFFLL)
        return 0;
    PyObject *data = PyBytes_FromStringAndSize(NULL, size);
    if (data == NULL)
        return -1;
    unsigned char *d = (unsigned char *)PyBytes_AS_STRING(data);
    memcpy(d, p, 8);
    put_ulong(d + 8, (uint32_t)(size - HEADER), little);
    put_ulong(d + 12, (uint32_t)self->next_id, little);
    memcpy(d + 16, PyBytes_AS_STRING(rewritten), (size_t)rlen);
    memcpy(d + 16 + rlen, p + start, (size_t)(n - start));
    if (PyList_Append(pieces, data) < 0) {
        Py_DECREF(data);
        return -1;
    }
    if (oneway) {       /* a oneway is the same once sent */
        Py_DECREF(data);
        OpStats *st = op_stats(self, op);
        if (st == NULL)
            return -1;
        self->next_id++;
        st->same++;
        return 1;
    }
    Record *r = lane_new_record(self);
    if (r == NULL) {
        Py_DECREF(data);
        return -1;
    }
    r->sent = data;
    r->request_ts = request_ts;
    r->sent_at = monotonic();
    r->recorded_id = recorded_id;
    r->replay_id = (uint32_t)self->next_id++;
    r->op = op;
    r->judged = (unsigned)(flags >> JUDGED_SHIFT) & ((1u << (MAX_STATUS + 1)) - 1);
    return 1;
}

/* A recorded server message.  1: taken; 0: hand over; -1: error. */
static int take_recorded(Lane *self, PyObject *raw, PyObject *ts) {
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t n = PyBytes_GET_SIZE(raw);
    /* ReplyStream.whole_reply (nothing is buffered: the lane runs on an idle stream) */
    if (n < 20 || p[7] != MSG_REPLY || p[4] < 1 || (p[4] == 1 && p[5] < 2) ||
        (p[6] & FLAG_FRAGMENT) || memcmp(p, "GIOP", 4) != 0)
        return 0;
    int little = p[6] & 1;
    if ((Py_ssize_t)ulong_at(p + 8, little) != n - HEADER)
        return 0;
    Record *r = by_recorded_id(self, ulong_at(p + 12, little));
    if (r == NULL || r->recorded != NULL)
        return 1;           /* no call waits for it (Python's session drops it too) */
    uint32_t status = ulong_at(p + 16, little);
    if (status > MAX_STATUS || !(r->judged & (1u << status)))
        return 0;           /* the replayed reply may teach a key: Python's barrier */
    long long recorded_ts = PyLong_AsLongLong(ts);
    if (recorded_ts == -1 && PyErr_Occurred())
        return -1;
    if (r->replayed != NULL) {
        if (!same_but_id(r->replayed, p, n)) {
            const unsigned char *q = (const unsigned char *)PyBytes_AS_STRING(r->replayed);
            int same = same_values(self, r->op, raw, q, PyBytes_GET_SIZE(r->replayed));
            if (same <= 0)
                return same;    /* 0: compared value by value in Python */
        }
        r->recorded_ts = recorded_ts;
        if (lane_same(self, r) < 0)
            return -1;
        lane_settle(self);
        return 1;
    }
    r->recorded = Py_NewRef(raw);
    r->recorded_ts = recorded_ts;
    if (self->as_recorded) {
        r->awaited_at = monotonic();
        self->awaited++;
    }
    return 1;
}

/* The calls the window counts: with a window, those sent from the oldest whose replayed
   reply has not come; as recorded, those whose recorded reply the lane waits at. */
static Py_ssize_t lane_waiting(Lane *self) {
    if (self->as_recorded)
        return self->awaited;
    return self->count - (self->settled > self->head ? self->settled : self->head);
}

/* The bytes objects of ``pieces`` one after the other (one allocation). */
static PyObject *join(PyObject *pieces) {
    Py_ssize_t k = PyList_GET_SIZE(pieces), total = 0;
    if (k == 1)
        return Py_NewRef(PyList_GET_ITEM(pieces, 0));
    for (Py_ssize_t i = 0; i < k; i++)
        total += PyBytes_GET_SIZE(PyList_GET_ITEM(pieces, i));
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    char *d = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *b = PyList_GET_ITEM(pieces, i);
        memcpy(d, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
        d += PyBytes_GET_SIZE(b);
    }
    return out;
}

PyDoc_STRVAR(advance_doc,
"advance(items) -> (bytes, handed_over)\n\n"
"Take the items at the front of ``items`` (a deque of the connection's (from_client,\n"
"raw, ts) in capture order) while fewer than the window wait for their replayed\n"
"reply (as recorded, window 1: while no call waits at its recorded reply): the\n"
"bytes to send for them, and whether an item is left that the lane does not take\n"
"(Python's to handle, after materialize()).");

/* Lane.advance without its Python face: the bytes to send (a new reference; NULL: an
   error), ``*handed_over`` set when an item is left that the lane does not take. */
static PyObject *advance_items(Lane *self, PyObject *items, int *handed_over) {
    PyObject *pieces = PyList_New(0);
    if (pieces == NULL)
        return NULL;
    PyObject *popleft = PyObject_GetAttrString(items, "popleft");
    if (popleft == NULL) {
        Py_DECREF(pieces);
        return NULL;
    }
    *handed_over = 0;
    while (lane_waiting(self) < self->window) {
        Py_ssize_t n = PySequence_Size(items);
        if (n < 0)
            goto error;
        if (n == 0)
            break;
        PyObject *item = PySequence_GetItem(items, 0);
        if (item == NULL)
            goto error;
        int rc = 0;
        if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 3 &&
            PyBytes_CheckExact(PyTuple_GET_ITEM(item, 1))) {
            PyObject *from_client = PyTuple_GET_ITEM(item, 0);
            if (from_client == Py_True)
                rc = take_request(self, PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2), pieces);
            else if (from_client == Py_False)
                rc = take_recorded(self, PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2));
        }
        Py_DECREF(item);
        if (rc < 0)
            goto error;
        if (rc == 0) {
            *handed_over = 1;
            break;
        }
        PyObject *gone = PyObject_CallNoArgs(popleft);
        if (gone == NULL)
            goto error;
        Py_DECREF(gone);
    }
    Py_DECREF(popleft);
    PyObject *data = join(pieces);
    Py_DECREF(pieces);
    return data;
error:
    Py_DECREF(popleft);
    Py_DECREF(pieces);
    return NULL;
}

static PyObject *lane_advance(Lane *self, PyObject *items) {
    int handed_over;
    PyObject *data = advance_items(self, items, &handed_over);
    if (data == NULL)
        return NULL;
    return Py_BuildValue("(NO)", data, handed_over ? Py_True : Py_False);
}

/* Room for ``n`` more bytes after the ones kept. */
static int buf_reserve(Lane *self, Py_ssize_t n) {
    if (self->buflen + n > self->bufcap) {
        Py_ssize_t cap = self->bufcap ? self->bufcap : 4096;
        while (cap < self->buflen + n)
            cap *= 2;
        unsigned char *grown = PyMem_Realloc(self->buf, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->buf = grown;
        self->bufcap = cap;
    }
    return 0;
}

static int buf_append(Lane *self, const unsigned char *data, Py_ssize_t n) {
    if (buf_reserve(self, n) < 0)
        return -1;
    memcpy(self->buf + self->buflen, data, (size_t)n);
    self->buflen += n;
    return 0;
}

PyDoc_STRVAR(replayed_doc,
"replayed(data, now) -> bytes or None\n\n"
"Bytes the target sent (not b\"\"), read at ``now`` (time.monotonic()): the whole\n"
"replies in them matched with their calls.  None when every whole message was\n"
"taken (a message cut short is kept for the next bytes); else the bytes from the\n"
"first message the lane does not take on, for Python's stream (after\n"
"materialize()), and nothing is kept.");

/* The whole replies in the bytes kept (self->buf), read at ``now``, matched with their
   calls: None (a new reference) when every whole message was taken, else the bytes from
   the first message the lane does not take on (nothing kept); NULL: an error. */
static PyObject *frame_replayed(Lane *self, double now) {
    const unsigned char *b = self->buf;
    Py_ssize_t n = self->buflen, pos = 0;
    int handed_over = 0;
    while (n - pos >= HEADER) {
        const unsigned char *p = b + pos;
        if (memcmp(p, "GIOP", 4) != 0) {
            handed_over = 1;
            break;
        }
        int little = p[6] & 1;
        uint32_t size = ulong_at(p + 8, little);
        if ((unsigned long long)size > (unsigned long long)self->max_message) {
            handed_over = 1;
            break;
        }
        if ((Py_ssize_t)size > n - pos - HEADER)
            break;                  /* cut short: the rest comes later */
        Py_ssize_t len = HEADER + (Py_ssize_t)size;
        /* ReplyStream.feed's replies kept as bytes: a whole GIOP 1.2+ Reply */
        if (p[7] != MSG_REPLY || p[4] < 1 || (p[4] == 1 && p[5] < 2) ||
            (p[6] & FLAG_FRAGMENT) || size < 4) {
            handed_over = 1;
            break;
        }
        Record *r = by_replay_id(self, ulong_at(p + 12, little));
        if (r == NULL || r->replayed != NULL) {
            handed_over = 1;        /* a stray or repeated reply: Python tells it */
            break;
        }
        if (r->recorded != NULL) {
            if (!same_but_id(r->recorded, p, len)) {
                int same = same_values(self, r->op, r->recorded, p, len);
                if (same < 0)
                    return NULL;
                if (!same) {
                    handed_over = 1;    /* compared value by value in Python */
                    break;
                }
            }
            r->replayed_at = now;
            if (lane_same(self, r) < 0)
                return NULL;
            if (self->as_recorded)
                self->awaited--;
        } else {
            r->replayed = PyBytes_FromStringAndSize((const char *)p, len);
            if (r->replayed == NULL)
                return NULL;
            r->replayed_at = now;
        }
        pos += len;
    }
    lane_settle(self);
    if (handed_over) {
        PyObject *rest = PyBytes_FromStringAndSize((const char *)b + pos, n - pos);
        self->buflen = 0;
        return rest;
    }
    if (pos) {
        memmove(self->buf, self->buf + pos, (size_t)(n - pos));
        self->buflen = n - pos;
    }
    Py_RETURN_NONE;
}

static PyObject *lane_replayed(Lane *self, PyObject *args) {
    Py_buffer view;
    double now;
    if (!PyArg_ParseTuple(args, "y*d", &view, &now))
        return NULL;
    int rc = buf_append(self, view.buf, view.len);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    return frame_replayed(self, now);
}

PyDoc_STRVAR(take_buffer_doc,
"take_buffer() -> bytes\n\nThe replayed bytes kept (a message cut short), now Python's.");

static PyObject *lane_take_buffer(Lane *self, PyObject *unused) {
    PyObject *rest = PyBytes_FromStringAndSize((const char *)self->buf, self->buflen);
    self->buflen = 0;
    return rest;
}

PyDoc_STRVAR(materialize_doc,
"materialize() -> list\n\n"
"The calls held, in send order, as (op, recorded_id, replay_id, request_ts, sent,\n"
"sent_at, recorded or None, recorded_ts, replayed or None, replayed_at, settled,\n"
"awaited_at): ``settled``, its replayed reply came after every earlier call's;\n"
"``awaited_at`` (as recorded), when the lane began waiting at its recorded reply.\n"
"The lane holds none after it.");

static PyObject *lane_materialize(Lane *self, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = self->head; i < self->count; i++) {
        Record *r = &self->recs[i];
        if (r->done)
            continue;
        PyObject *t = Py_BuildValue("(lkkLOdOLOdOd)", r->op, (unsigned long)r->recorded_id,
                                    (unsigned long)r->replay_id, r->request_ts, r->sent,
                                    r->sent_at, r->recorded ? r->recorded : Py_None,
                                    r->recorded_ts, r->replayed ? r->replayed : Py_None,
                                    r->replayed_at, i < self->settled ? Py_True : Py_False,
                                    r->awaited_at);
        if (t == NULL || PyList_Append(out, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(t);
    }
    lane_drop_records(self);
    return out;
}

PyDoc_STRVAR(results_doc,
"results() -> list\n\n"
"What the lane finished since the last call, per operation: (op, same, skipped,\n"
"(recorded latencies: buckets, count, max), (replayed latencies: the same)), the\n"
"buckets as LatencyHistogram's (see LatencyHistogram.merge).");

static PyObject *lane_results(Lane *self, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->nops; i++) {
        OpStats *st = &self->ops[i];
        if (!st->touched)
            continue;
        PyObject *hist[2];
        for (int w = 0; w < 2; w++) {
            hist[w] = Py_BuildValue("(Old)", st->buckets[w] ? st->buckets[w] : Py_None,
                                    st->count[w], st->max[w]);
        }
        PyObject *t = (hist[0] && hist[1]) ?
            Py_BuildValue("(nllNN)", i, st->same, st->skipped, hist[0], hist[1]) : NULL;
        if (t == NULL) {
            if (!(hist[0] && hist[1])) {
                Py_XDECREF(hist[0]);
                Py_XDECREF(hist[1]);
            }
            Py_DECREF(out);
            return NULL;
        }
        int rc = PyList_Append(out, t);
        Py_DECREF(t);
        if (rc < 0) {
            Py_DECREF(out);
            return NULL;
        }
        Py_CLEAR(st->buckets[0]);
        Py_CLEAR(st->buckets[1]);
        memset(st, 0, sizeof(OpStats));
    }
    return out;
}

PyDoc_STRVAR(take_differing_doc,
"take_differing(raw) -> tuple or None\n\n"
"``raw``, a whole reply that replayed() handed back, when it is the replayed reply of a\n"
"call the lane holds with its recorded reply (their bytes differ): that call, no\n"
"longer held, as (op, recorded_id, replay_id, request_ts, sent, sent_at, recorded,\n"
"recorded_ts), for Python to compare value by value; else None (nothing changes).");

static PyObject *lane_take_differing(Lane *self, PyObject *raw) {
    if (!PyBytes_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "take_differing() takes bytes");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t n = PyBytes_GET_SIZE(raw);
    if (n < 16 || memcmp(p, "GIOP", 4) != 0 || p[7] != MSG_REPLY || p[4] < 1 ||
        (p[4] == 1 && p[5] < 2) || (p[6] & FLAG_FRAGMENT) ||
        (Py_ssize_t)ulong_at(p + 8, p[6] & 1) != n - HEADER)
        Py_RETURN_NONE;
    Record *r = by_replay_id(self, ulong_at(p + 12, p[6] & 1));
    if (r == NULL || r->recorded == NULL || r->replayed != NULL || same_but_id(r->recorded, p, n))
        Py_RETURN_NONE;
    PyObject *out = Py_BuildValue("(lkkLOdOL)", r->op, (unsigned long)r->recorded_id,
                                  (unsigned long)r->replay_id, r->request_ts, r->sent,
                                  r->sent_at, r->recorded, r->recorded_ts);
    if (out == NULL)
        return NULL;
    r->done = 1;
    record_clear(r);
    if (self->as_recorded)
        self->awaited--;
    lane_settle(self);
    return out;
}

static PyObject *lane_get_waiting(Lane *self, void *closure) {
    return PyLong_FromSsize_t(lane_waiting(self));
}

static PyObject *lane_get_held(Lane *self, void *closure) {
    Py_ssize_t held = 0;
    for (Py_ssize_t i = self->head; i < self->count; i++)
        held += !self->recs[i].done;
    return PyLong_FromSsize_t(held);
}

static PyObject *lane_get_oldest_sent(Lane *self, void *closure) {
    if (self->as_recorded) {
        for (Py_ssize_t i = self->head; i < self->count; i++) {
            Record *r = &self->recs[i];
            if (!r->done && r->recorded != NULL && r->replayed == NULL)
                return PyFloat_FromDouble(r->awaited_at);
        }
        Py_RETURN_NONE;
    }
    Py_ssize_t i = self->settled > self->head ? self->settled : self->head;
    if (i >= self->count)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(self->recs[i].sent_at);
}

static PyObject *lane_get_next_id(Lane *self, void *closure) {
    return PyLong_FromUnsignedLongLong(self->next_id);
}

static int lane_set_next_id(Lane *self, PyObject *value, void *closure) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "next_id cannot be deleted");
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    self->next_id = v;
    return 0;
}

static PyObject *lane_get_shapes(Lane *self, void *closure) {
    return Py_NewRef(self->shapes);
}

static int lane_set_shapes(Lane *self, PyObject *value, void *closure) {
    if (value == NULL || (value != Py_None && !PyDict_Check(value))) {
        PyErr_SetString(PyExc_TypeError, "shapes must be a dict or None");
        return -1;
    }
    Py_XSETREF(self->shapes, Py_NewRef(value));
    return 0;
}

static PyObject *lane_get_values(Lane *self, void *closure) {
    return Py_NewRef(self->values);
}

static int lane_set_values(Lane *self, PyObject *value, void *closure) {
    if (value == NULL || (value != Py_None &&
                          !(PyTuple_Check(value) && PyTuple_GET_SIZE(value) == 2 &&
                            PyCallable_Check(PyTuple_GET_ITEM(value, 0)) &&
                            PyTuple_Check(PyTuple_GET_ITEM(value, 1))))) {
        PyErr_SetString(PyExc_TypeError, "values must be None or (read, tuple)");
        return -1;
    }
    Py_XSETREF(self->values, Py_NewRef(value));
    return 0;
}

static PyGetSetDef lane_getset[] = {
    {"waiting", (getter)lane_get_waiting, NULL,
     "calls sent from the oldest whose replayed reply has not come on (the window's count)", NULL},
    {"held", (getter)lane_get_held, NULL, "calls held (not finished)", NULL},
    {"oldest_sent", (getter)lane_get_oldest_sent, NULL,
     "when the oldest call waiting for its replayed reply was sent -- as recorded, when "
     "the lane began waiting for it (None: none waits)", NULL},
    {"next_id", (getter)lane_get_next_id, (setter)lane_set_next_id,
     "the request id the next call is sent with", NULL},
    {"shapes", (getter)lane_get_shapes, (setter)lane_set_shapes,
     "the request shapes the lane rewrites (see Replay._lane_table)", NULL},
    {"values", (getter)lane_get_values, (setter)lane_set_values,
     "how a replayed reply whose bytes differ from the recorded one's is judged: None "
     "(by Python), or (read, per operation: None, True -- the bodies' bytes -- or the "
     "plan nodes of its results; see Replay._lane_values)", NULL},
    {NULL}
};

static PyMethodDef lane_methods[] = {
    {"advance", (PyCFunction)lane_advance, METH_O, advance_doc},
    {"replayed", (PyCFunction)lane_replayed, METH_VARARGS, replayed_doc},
    {"take_buffer", (PyCFunction)lane_take_buffer, METH_NOARGS, take_buffer_doc},
    {"materialize", (PyCFunction)lane_materialize, METH_NOARGS, materialize_doc},
    {"results", (PyCFunction)lane_results, METH_NOARGS, results_doc},
    {"take_differing", (PyCFunction)lane_take_differing, METH_O, take_differing_doc},
    {NULL}
};

static PyTypeObject LaneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pycdr._replaylane.Lane",
    .tp_doc = PyDoc_STR("Lane(window, max_message, bucketing): one replay connection's "
                        "steady state (see the module doc)."),
    .tp_basicsize = sizeof(Lane),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)lane_init,
    .tp_dealloc = (destructor)lane_dealloc,
    .tp_traverse = (traverseproc)lane_traverse,
    .tp_clear = (inquiry)lane_clear_refs,
    .tp_methods = lane_methods,
    .tp_getset = lane_getset,
};

/* ---- pump(): the lanes' sockets served in C --------------------------------------- */

/* What pump() hands back to Python, one event an entry at most (the entry is then left
   alone until pump() is called again). */
enum {
    EV_READY = 0,       /* a socket Python serves is ready: payload the poll revents */
    EV_LEFT = 1,        /* the lane took the bytes read but handed these back */
    EV_RECV_ERROR = 2,  /* reading failed: payload errno */
    EV_CLOSED = 3,      /* the target closed its side (nothing read) */
    EV_HANDED = 4,      /* the lane met an item it does not take: payload the bytes it
                           made before it that the socket did not take now */
    EV_UNSENT = 5       /* the socket did not take all the lane's bytes: the rest */
};
#define PUMP_MAX 64         /* entries: each round polls them all */
#define PUMP_RECV 65536     /* bytes read at a time (the runner's RECV_SIZE) */

static int pump_event(PyObject *events, Py_ssize_t i, int kind, PyObject *payload, double now) {
    PyObject *t = Py_BuildValue("(niNd)", i, kind, payload, now);
    if (t == NULL)
        return -1;
    int rc = PyList_Append(events, t);
    Py_DECREF(t);
    return rc;
}

PyDoc_STRVAR(pump_doc,
"pump(entries, spin, budget, full, queue_limit) -> (events, progressed)\n\n"
"Serve the lanes' sockets until Python is needed: ``entries`` a list of (fd, events,\n"
"lane, items), at most 64; ``lane`` a Lane holding its connection (``items`` its\n"
"deque, ``fd`` its non-blocking plain TCP socket) or None, a socket Python serves\n"
"(polled for ``events``, POLLIN/POLLOUT).  Each round polls them all without\n"
"sleeping; for a lane whose socket is readable it reads (65,536 bytes), takes the\n"
"replies (as replayed()), takes the next items (as advance()) and sends their bytes.\n"
"Whatever needs Python ends the entry's part: an event (i, kind, payload, now), kind\n"
"0 a Python socket ready (payload: revents), 1 bytes handed back (as replayed()\n"
"returns them), 2 a read failed (errno), 3 the target closed (None), 4 an item not\n"
"taken (payload: the bytes made before it not sent yet), 5 bytes not sent yet.\n"
"Returns after a round with an event; after a round with nothing ready, when\n"
"``full`` is 0 (the capture may be read on; -1: read to its end), or when nothing\n"
"came for ``spin`` seconds; when a lane has no items left and ``full`` is 0; and\n"
"after ``budget`` seconds.  ``full``: the connections whose queues hold\n"
"``queue_limit`` items or more (a lane's dropping below half of it counts down).\n"
"``progressed``: reads and sends done.");

static PyObject *replaylane_pump(PyObject *module, PyObject *args) {
    PyObject *entries;
    double spin, budget;
    Py_ssize_t full, queue_limit;
    if (!PyArg_ParseTuple(args, "O!ddnn", &PyList_Type, &entries, &spin, &budget, &full,
                          &queue_limit))
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(entries);
    if (k > PUMP_MAX) {
        PyErr_SetString(PyExc_ValueError, "pump() takes at most 64 entries");
        return NULL;
    }
    struct pollfd pfd[PUMP_MAX];
    Lane *lanes[PUMP_MAX];
    PyObject *queues[PUMP_MAX];
    int was_full[PUMP_MAX];
    /* The entries' objects are held by ``held`` for the call (the list may change). */
    PyObject *held = PyList_GetSlice(entries, 0, k);
    if (held == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *e = PyList_GET_ITEM(held, i);
        int fd, events;
        PyObject *lane, *items;
        if (!PyTuple_Check(e) || !PyArg_ParseTuple(e, "iiOO", &fd, &events, &lane, &items)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "an entry is (fd, events, lane, items)");
            Py_DECREF(held);
            return NULL;
        }
        if (lane != Py_None && (!PyObject_TypeCheck(lane, &LaneType) || items == Py_None)) {
            PyErr_SetString(PyExc_TypeError, "an entry's lane is a Lane (with its items) or None");
            Py_DECREF(held);
            return NULL;
        }
        pfd[i].fd = fd;
        pfd[i].events = (short)(lane == Py_None ? events : POLLIN);
        pfd[i].revents = 0;
        lanes[i] = lane == Py_None ? NULL : (Lane *)lane;
        queues[i] = lane == Py_None ? NULL : items;
        was_full[i] = 0;
        if (lanes[i] != NULL) {
            Py_ssize_t n = PySequence_Size(items);
            if (n < 0) {
                Py_DECREF(held);
                return NULL;
            }
            was_full[i] = n >= queue_limit;
        }
    }
    PyObject *events = PyList_New(0);
    if (events == NULL) {
        Py_DECREF(held);
        return NULL;
    }
    long progressed = 0;
    double start = monotonic(), active = start;
    for (;;) {
        int ready;
        /* (other threads run meanwhile: a polling replay must not starve a progress bar's
           refresh, nor a target served by the same process in tests) */
        Py_BEGIN_ALLOW_THREADS
        ready = poll(pfd, (nfds_t)k, 0);
        Py_END_ALLOW_THREADS
        if (ready < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0)
                    goto error;
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);
            goto error;
        }
        double now = monotonic();
        if (ready == 0) {
            if (full == 0 || now - active >= spin || now - start >= budget)
                break;
            continue;
        }
        int starved = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            short rev = pfd[i].revents;
            if (rev == 0 || pfd[i].fd < 0)
                continue;
            Lane *lane = lanes[i];
            if (lane == NULL) {
                if (pump_event(events, i, EV_READY, PyLong_FromLong(rev), now) < 0)
                    goto error;
                pfd[i].fd = -1;
                continue;
            }
            if (buf_reserve(lane, PUMP_RECV) < 0)
                goto error;
            ssize_t got = recv(pfd[i].fd, lane->buf + lane->buflen, PUMP_RECV, MSG_DONTWAIT);
            if (got < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                    continue;
                if (pump_event(events, i, EV_RECV_ERROR, PyLong_FromLong(errno), now) < 0)
                    goto error;
                pfd[i].fd = -1;
                continue;
            }
            if (got == 0) {
                if (pump_event(events, i, EV_CLOSED, Py_NewRef(Py_None), now) < 0)
                    goto error;
                pfd[i].fd = -1;
                continue;
            }
            progressed++;
            lane->buflen += got;
            PyObject *left = frame_replayed(lane, now);
            if (left == NULL)
                goto error;
            if (left != Py_None) {
                if (pump_event(events, i, EV_LEFT, left, now) < 0)
                    goto error;
                pfd[i].fd = -1;
                continue;
            }
            Py_DECREF(left);
            int handed_over;
            PyObject *data = advance_items(lane, queues[i], &handed_over);
            if (data == NULL)
                goto error;
            Py_ssize_t left_items = PySequence_Size(queues[i]);
            if (left_items < 0) {
                Py_DECREF(data);
                goto error;
            }
            /* (half of it: reading on for a few items at a time would return here for each) */
            if (was_full[i] && left_items < queue_limit / 2) {
                was_full[i] = 0;
                if (full > 0)
                    full--;
            }
            const char *bytes = PyBytes_AS_STRING(data);
            Py_ssize_t size = PyBytes_GET_SIZE(data), sent = 0;
            while (sent < size) {
                ssize_t w = send(pfd[i].fd, bytes + sent, (size_t)(size - sent),
                                 MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w < 0) {
                    if (errno == EINTR)
                        continue;
                    break;          /* would block, or failed: Python's _write tells which */
                }
                sent += w;
            }
            if (size)
                progressed++;
            if (handed_over || sent < size) {
                PyObject *rest = PyBytes_FromStringAndSize(bytes + sent, size - sent);
                Py_DECREF(data);
                if (rest == NULL ||
                    pump_event(events, i, handed_over ? EV_HANDED : EV_UNSENT, rest, now) < 0)
                    goto error;
                pfd[i].fd = -1;
                continue;
            }
            Py_DECREF(data);
            if (left_items == 0 && lane_waiting(lane) < lane->window)
                starved = 1;
        }
        active = now;
        if (PyList_GET_SIZE(events) > 0 || (starved && full == 0) || now - start >= budget)
            break;
    }
    Py_DECREF(held);
    return Py_BuildValue("(Nl)", events, progressed);
error:
    Py_DECREF(held);
    Py_DECREF(events);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"pump", replaylane_pump, METH_VARARGS, pump_doc},
    {NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pycdr._replaylane",
    "The steady state of a pycdr replay connection in C.", -1, module_methods
};

PyMODINIT_FUNC PyInit__replaylane(void) {
    if (PyType_Ready(&LaneType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Lane", (PyObject *)&LaneType) < 0 ||
        PyModule_AddIntConstant(m, "PUMP_MAX", PUMP_MAX) < 0 ||
        PyModule_AddIntConstant(m, "PUMP_RECV", PUMP_RECV) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
