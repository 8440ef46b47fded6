/* pycdr.fuzz._edgemap: the scan of a sancov edge map in C.
 *
 * features() reads the shared edge map a case leaves (pycdr.fuzz.feedback's
 * EdgeMap: one byte per edge, the hit count the coverage shim wraps) and
 * returns its features, as EdgeMap.features() has them: for each edge
 * passed, in the order of the edges, edge << 4 | the class of its count
 * (``bucket[count]``), or | 1 for an edge flagged in ``uncounted``; edges
 * flagged in ``masked`` and edge 0 (guards not numbered yet) left out.
 *
 * A case passes a few hundred of the map's 65536 edges: the map is read a
 * 64-bit word at a time and words of zeros are skipped (as AFL does), where
 * the pure-Python twin, _features_python in feedback.py (PYCDR_PURE=1),
 * finds the runs of non-zero bytes with a regular expression.  The target
 * may still write to the map while it is read: each word is loaded once and
 * its bytes taken from that load.  tests/test_fuzz_edgemap.py holds the two
 * to the same lists.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

PyDoc_STRVAR(features_doc,
"features(edge_map, masked, uncounted, bucket) -> list of int\n\n"
"The features of ``edge_map`` (a buffer of one byte per edge): edge << 4 |\n"
"bucket[count] for each edge passed (| 1 when uncounted[edge] is non-zero),\n"
"in the order of the edges; masked edges and edge 0 left out.  ``masked`` and\n"
"``uncounted`` are one flag byte per edge, as long as the map; ``bucket``\n"
"256 bytes.");

static PyObject *features(PyObject *self, PyObject *args) {
    Py_buffer map, masked, uncounted, bucket;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &map, &masked, &uncounted, &bucket))
        return NULL;
    PyObject *out = NULL;
    if (masked.len != map.len || uncounted.len != map.len || bucket.len != 256) {
        PyErr_SetString(PyExc_ValueError,
                        "masked and uncounted must be as long as the map, bucket 256 bytes");
        goto done;
    }
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    const unsigned char *data = map.buf;
    const unsigned char *skip = masked.buf, *flat = uncounted.buf, *classes = bucket.buf;
    Py_ssize_t n = map.len, words = n / 8;
    for (Py_ssize_t w = 0; w <= words; w++) {
        unsigned char bytes[8];
        Py_ssize_t base = w * 8, take = w < words ? 8 : n - base;
        if (take <= 0)
            break;
        if (take == 8) {
            uint64_t word;
            memcpy(&word, data + base, 8);    /* one load: the target may be writing */
            if (word == 0)
                continue;
            memcpy(bytes, &word, 8);
        } else {
            memcpy(bytes, data + base, (size_t)take);
        }
        for (Py_ssize_t i = 0; i < take; i++) {
            Py_ssize_t edge = base + i;
            unsigned char count = bytes[i];
            if (count == 0 || edge == 0 || skip[edge])
                continue;
            PyObject *feature = PyLong_FromSsize_t(edge << 4 | (flat[edge] ? 1 : classes[count]));
            if (feature == NULL || PyList_Append(out, feature) < 0) {
                Py_XDECREF(feature);
                Py_CLEAR(out);
                goto done;
            }
            Py_DECREF(feature);
        }
    }
done:
    PyBuffer_Release(&map);
    PyBuffer_Release(&masked);
    PyBuffer_Release(&uncounted);
    PyBuffer_Release(&bucket);
    return out;
}

static PyMethodDef methods[] = {
    {"features", features, METH_VARARGS, features_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pycdr.fuzz._edgemap",
    "The scan of a sancov edge map (pycdr.fuzz.feedback.EdgeMap) in C.", -1, methods
};

PyMODINIT_FUNC PyInit__edgemap(void) {
    return PyModule_Create(&module);
}
