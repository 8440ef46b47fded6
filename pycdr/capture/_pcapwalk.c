/* pycdr.capture._pcapwalk: the record walk of pycdr.capture.read in C.
 *
 * walk_pcap() and walk_pcapng() take the buffer CaptureReader holds and walk
 * the packet records in it, as many as are whole and regular, parsing each
 * one's link, IP and TCP headers; they return the TCP segments found, as a
 * list of the reader's tuples, and where they stopped.  Anything they do not
 * take -- a record cut by the end of the buffer, any pcapng block but an
 * Enhanced Packet Block, a block with a bad length, trailer, interface or
 * timestamp out of range -- is left where it starts for CaptureReader's own
 * code (the pure-Python twin, PYCDR_PURE=1), which refills, reads it or
 * raises the typed error with its offset.  Nothing here reads a length field
 * without checking it against the bytes at hand, and nothing is allocated
 * from one.
 *
 * The header parse is _segment() of read.py, line for line: the two give
 * the same tuples (tests/test_pcapwalk.py compares them on every capture).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LINKTYPE_NULL 0
#define LINKTYPE_ETHERNET 1
#define LINKTYPE_LOOP 108
#define LINKTYPE_LINUX_SLL 113
#define LINKTYPE_LINUX_SLL2 276
#define TCP 6
#define BLOCK_EPB 6

typedef struct {
    Py_ssize_t ip_fragments;
    Py_ssize_t truncated_headers;
    /* Addresses repeat: the last few bytes objects made are handed out again. */
    PyObject *addresses[8];
    int next_address;
} Walk;

static inline uint16_t be16(const unsigned char *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static inline uint32_t u32(const unsigned char *p, int little) {
    return little ? le32(p) : be32(p);
}

static PyObject *address(Walk *w, const unsigned char *p, Py_ssize_t n) {
    for (int i = 0; i < 8; i++) {
        PyObject *a = w->addresses[i];
        if (a != NULL && PyBytes_GET_SIZE(a) == n && memcmp(PyBytes_AS_STRING(a), p, n) == 0) {
            Py_INCREF(a);
            return a;
        }
    }
    PyObject *a = PyBytes_FromStringAndSize((const char *)p, n);
    if (a == NULL)
        return NULL;
    Py_XDECREF(w->addresses[w->next_address]);
    Py_INCREF(a);
    w->addresses[w->next_address] = a;
    w->next_address = (w->next_address + 1) & 7;
    return a;
}

static int is_vlan(unsigned ethertype) {
    return ethertype == 0x8100 || ethertype == 0x88A8 || ethertype == 0x9100;
}

/* The TCP segment of the frame b[p:end], appended to out; 0 when the frame has
 * none (or it was counted as fragment / truncated), -1 on a Python error. */
static int segment(Walk *w, PyObject *out, long link, const unsigned char *b, Py_ssize_t p,
                   Py_ssize_t end, Py_ssize_t frame, long long ts) {
    int version;
    if (link == LINKTYPE_ETHERNET || link == LINKTYPE_LINUX_SLL || link == LINKTYPE_LINUX_SLL2) {
        unsigned ethertype;
        if (link == LINKTYPE_ETHERNET) {
            if (end - p < 14) return 0;
            ethertype = be16(b + p + 12);
            p += 14;
        } else if (link == LINKTYPE_LINUX_SLL) {
            if (end - p < 16) return 0;
            ethertype = be16(b + p + 14);
            p += 16;
        } else {
            if (end - p < 20) return 0;
            ethertype = be16(b + p);
            p += 20;
        }
        while (is_vlan(ethertype)) {
            if (end - p < 4) return 0;
            ethertype = be16(b + p + 2);
            p += 4;
        }
        version = ethertype == 0x0800 ? 4 : ethertype == 0x86DD ? 6 : 0;
    } else if (link == LINKTYPE_NULL || link == LINKTYPE_LOOP) {
        if (end - p < 4) return 0;
        uint32_t family = be32(b + p);
        if (link == LINKTYPE_NULL && family > 0xFFFF)
            family = le32(b + p);
        p += 4;
        version = family == 2 ? 4 :
            (family == 10 || family == 24 || family == 28 || family == 30) ? 6 : 0;
    } else {                                            /* raw IP */
        if (end - p < 1) return 0;
        version = b[p] >> 4;
    }
    Py_ssize_t ip_end, t;
    const unsigned char *src, *dst;
    Py_ssize_t alen;
    if (version == 4) {
        if (end - p < 20) {
            w->truncated_headers++;
            return 0;
        }
        unsigned vihl = b[p];
        Py_ssize_t ihl = (vihl & 15) * 4;
        if (vihl >> 4 != 4 || ihl < 20 || b[p + 9] != TCP) return 0;
        if (be16(b + p + 6) & 0x3FFF) {
            w->ip_fragments++;
            return 0;
        }
        Py_ssize_t total = be16(b + p + 2);
        ip_end = total && p + total < end ? p + total : end;
        src = b + p + 12;
        dst = b + p + 16;
        alen = 4;
        t = p + ihl;
    } else if (version == 6) {
        if (end - p < 40 || b[p] >> 4 != 6) {
            w->truncated_headers += end - p < 40;
            return 0;
        }
        Py_ssize_t plen = be16(b + p + 4);
        ip_end = plen && p + 40 + plen < end ? p + 40 + plen : end;
        unsigned next_header = b[p + 6];
        src = b + p + 8;
        dst = b + p + 24;
        alen = 16;
        t = p + 40;
        while (next_header != TCP) {
            Py_ssize_t size;
            if (t + 8 > ip_end) return 0;
            if (next_header == 0 || next_header == 43 || next_header == 60) {
                size = (b[t + 1] + 1) * 8;
            } else if (next_header == 44) {
                if (be16(b + t + 2) & 0xFFF9) {
                    w->ip_fragments++;
                    return 0;
                }
                size = 8;
            } else if (next_header == 51) {
                size = (b[t + 1] + 2) * 4;
            } else {
                return 0;
            }
            next_header = b[t];
            t += size;
        }
    } else {
        return 0;
    }
    if (t + 20 > ip_end) {
        w->truncated_headers++;
        return 0;
    }
    unsigned off_flags = be16(b + t + 12);
    Py_ssize_t data = t + (off_flags >> 12) * 4;
    if (data > ip_end || data < t + 20) {
        w->truncated_headers++;
        return 0;
    }
    PyObject *s = address(w, src, alen);
    PyObject *d = s == NULL ? NULL : address(w, dst, alen);
    PyObject *payload = d == NULL ? NULL :
        PyBytes_FromStringAndSize((const char *)b + data, ip_end - data);
    PyObject *tuple = payload == NULL ? NULL :
        Py_BuildValue("(nLNkNkkkkN)", frame, ts, s, (unsigned long)be16(b + t), d,
                      (unsigned long)be16(b + t + 2), (unsigned long)be32(b + t + 4),
                      (unsigned long)be32(b + t + 8), (unsigned long)(off_flags & 0x1FF),
                      payload);
    if (tuple == NULL) {
        if (payload == NULL) {
            Py_XDECREF(s);
            Py_XDECREF(d);
        }
        return -1;
    }
    int failed = PyList_Append(out, tuple);
    Py_DECREF(tuple);
    return failed;
}

static void walk_clear(Walk *w) {
    for (int i = 0; i < 8; i++)
        Py_CLEAR(w->addresses[i]);
}

static PyObject *walk_result(Walk *w, PyObject *out, Py_ssize_t pos, Py_ssize_t frame) {
    walk_clear(w);
    return Py_BuildValue("(Nnnnn)", out, pos, frame, w->ip_fragments, w->truncated_headers);
}

PyDoc_STRVAR(walk_pcap_doc,
"walk_pcap(buf, pos, link, little, frac_ns, frame)\n"
"-> (segments, pos, frame, ip_fragments, truncated_headers)\n\n"
"The whole pcap records of buf from pos: their TCP segments as the reader's\n"
"tuples, the position of the first record not whole in buf, the last frame\n"
"number given, and the frames counted as IP fragments and as cut in a header.");

static PyObject *walk_pcap(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, frame;
    long link;
    int little;
    long long frac_ns;
    if (!PyArg_ParseTuple(args, "y*nlpLn", &view, &pos, &link, &little, &frac_ns, &frame))
        return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t blen = view.len;
    Walk w = {0};
    PyObject *out = PyList_New(0);
    if (out == NULL || pos < 0 || frac_ns < 0 || frac_ns > 1000) {
        PyBuffer_Release(&view);
        if (out != NULL) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_ValueError, "walk_pcap: position or fraction out of range");
        }
        return NULL;
    }
    while (pos <= blen - 16) {
        uint32_t incl = u32(b + pos + 8, little);
        if ((Py_ssize_t)incl > blen - pos - 16)
            break;                                   /* not whole here: the reader's */
        long long ts = (long long)u32(b + pos, little) * 1000000000LL +
            (long long)u32(b + pos + 4, little) * frac_ns;
        frame++;
        if (segment(&w, out, link, b, pos + 16, pos + 16 + incl, frame, ts) < 0) {
            walk_clear(&w);
            Py_DECREF(out);
            PyBuffer_Release(&view);
            return NULL;
        }
        pos += 16 + incl;
    }
    PyBuffer_Release(&view);
    return walk_result(&w, out, pos, frame);
}

PyDoc_STRVAR(walk_pcapng_doc,
"walk_pcapng(buf, pos, little, frame, interfaces)\n"
"-> (segments, pos, frame, ip_fragments, truncated_headers)\n\n"
"The run of regular Enhanced Packet Blocks of buf from pos (interfaces: the\n"
"section's (link, snaplen, ns multiplier, divisor, offset ns) tuples); it\n"
"stops at any other block, or one cut, malformed or out of range.");

static PyObject *walk_pcapng(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, frame;
    int little;
    PyObject *interfaces;
    if (!PyArg_ParseTuple(args, "y*npnO!", &view, &pos, &little, &frame, &PyList_Type,
                          &interfaces))
        return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t blen = view.len;
    Walk w = {0};
    /* The interfaces as C values; one whose numbers do not fit is left to the reader. */
    Py_ssize_t n_if = PyList_GET_SIZE(interfaces);
    if (n_if > 4096)
        n_if = 4096;
    struct iface { long link; unsigned long long mul, div; long long offset; int ok; } *ifs = NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL || pos < 0 ||
        (n_if && (ifs = PyMem_Calloc((size_t)n_if, sizeof *ifs)) == NULL)) {
        if (out != NULL && pos >= 0)
            PyErr_NoMemory();
        else if (out != NULL)
            PyErr_SetString(PyExc_ValueError, "walk_pcapng: negative position");
        Py_XDECREF(out);
        PyBuffer_Release(&view);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n_if; i++) {
        PyObject *item = PyList_GET_ITEM(interfaces, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 5)
            continue;
        long link = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
        unsigned long long mul = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 2));
        unsigned long long div = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 3));
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 4));
        if (PyErr_Occurred()) {           /* beyond 64 bits: the reader's own code */
            PyErr_Clear();
            continue;
        }
        if (mul >= 1 && div >= 1) {
            ifs[i].link = link;
            ifs[i].mul = mul;
            ifs[i].div = div;
            ifs[i].offset = offset;
            ifs[i].ok = 1;
        }
    }
    while (pos <= blen - 12) {
        uint32_t btype = u32(b + pos, little), length = u32(b + pos + 4, little);
        if (btype != BLOCK_EPB || length < 32 || (length & 3) || (Py_ssize_t)length > blen - pos)
            break;
        Py_ssize_t end = pos + length;
        if (u32(b + end - 4, little) != length)
            break;
        uint32_t iface = u32(b + pos + 8, little), cap = u32(b + pos + 20, little);
        Py_ssize_t start = pos + 28;
        if ((Py_ssize_t)cap > end - 4 - start || iface >= (uint32_t)n_if || !ifs[iface].ok)
            break;
        unsigned long long units = (unsigned long long)u32(b + pos + 12, little) << 32 |
            u32(b + pos + 16, little);
        const struct iface *f = &ifs[iface];
        if (units > (unsigned long long)INT64_MAX / f->mul)
            break;
        unsigned long long ns = units * f->mul / f->div;
        long long ts;
        if (ns > (unsigned long long)INT64_MAX ||
            __builtin_add_overflow((long long)ns, f->offset, &ts))
            break;
        frame++;
        if (segment(&w, out, f->link, b, start, start + cap, frame, ts) < 0) {
            walk_clear(&w);
            Py_DECREF(out);
            PyMem_Free(ifs);
            PyBuffer_Release(&view);
            return NULL;
        }
        pos = end;
    }
    PyMem_Free(ifs);
    PyBuffer_Release(&view);
    return walk_result(&w, out, pos, frame);
}

static PyMethodDef methods[] = {
    {"walk_pcap", walk_pcap, METH_VARARGS, walk_pcap_doc},
    {"walk_pcapng", walk_pcapng, METH_VARARGS, walk_pcapng_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pycdr.capture._pcapwalk",
    "The record walk and header parse of pycdr.capture.read in C.", -1, methods
};

PyMODINIT_FUNC PyInit__pcapwalk(void) {
    return PyModule_Create(&module);
}
