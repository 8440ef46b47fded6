/* pycdr.codec._speedups: the marshal plans of pycdr/codec/plan/, run in C.
 *
 * The Python plan compiler (pycdr/codec/plan/compiler.py) turns a TypeCode into a tree of
 * nodes, each with an `op` name and plain parameters.  This module compiles
 * such a tree once more, into C structs (cached on each node as a capsule in
 * its `_c` attribute), and runs them over a reader state (buffer, position,
 * end, alignment origin, byte order) or into a writer (a bytearray with
 * amortized growth).  Layout after msgspec's _core.c: hot paths inline with
 * likely/unlikely, error paths out of line.
 *
 * Division of labour with Python (pycdr/codec/_cmarshal.py):
 * - Node kinds this module does not run (wchar, wstring, fixed, long double,
 *   any, TypeCode, object references, values, abstract interfaces, native) are
 *   handed back to Python per node: the CDRReader/CDRWriter is synced to the C
 *   position, the node's own read()/write() runs, and the position comes back.
 * - Errors are the cold path.  Whenever the C code meets anything the Python
 *   path would reject, warn about or treat specially (truncation, a bad
 *   boolean, an enum out of range, a value of an unusual type, a depth limit)
 *   it raises the internal `Fallback` exception, and the caller re-runs the
 *   whole top-level call in Python, which raises the exact error (type,
 *   message, offset, path).  So the C path never needs its own error texts and
 *   can never report an error the Python path would not; what it must never do
 *   is succeed with a different result, and the differential tests
 *   (tests/test_speedups.py) check that.
 * - Lenient decoding and char code sets other than ISO-8859-1 never reach C
 *   (the wrappers check), so violations are always errors here.
 * - pycdr.codec.marshal.encode/decode and the encapsulation forms are this module's
 *   Entry objects (section 8 below): the fast case runs with no Python frame,
 *   anything else goes to the pure-Python function.
 *
 * One more thing runs here besides the plans: the ORB's fast decode of common
 * GIOP 1.2/1.3 Requests and Replies (decode_common_12, section 9), the C
 * form of pycdr/giop/messages/fast12.py's _decode_common_12, and the framing of a
 * run of such messages and of a fragmented one (frame_common_12, frame_chain_12: a
 * proxy's hot path).
 *
 * Ownership: input is read through the buffer protocol without copying; every
 * value returned is a new Python object (bytes for sequence<octet>, str for
 * strings and sequence<char>), never a view that aliases the input.  (Ints
 * from -32768 to 65535 are shared ones: see shared_ints.)
 *
 * Contents: each section below opens with a banner of its number and title.
 *
 *   1. Includes and compiler hints
 *   2. Module state: the objects the import and configure() set
 *   3. Plans: a plan node compiled into a C Plan, cached on the node
 *        3.1 The Plan and its cache on the node
 *        3.2 A node's attributes, its class's slots
 *        3.3 Compiling a node: sequences, structs, unions
 *   4. Byte order: loads and stores in either byte order, bulk swaps
 *   5. Reader: CDR bytes to Python values by their Plan
 *        5.1 The reader, its checks, a node handed back to Python
 *        5.2 Int objects: the shared small ints
 *        5.3 Numbers, strings, enums
 *        5.4 Structs, exceptions, unions
 *        5.5 Sequences, the cyclic GC paused for long ones
 *        5.6 Float objects kept for reuse, call arguments released
 *        5.7 Number sequences: lists and the array mapping
 *        5.8 read_plan: a value by its node's op
 *   6. Writer: Python values to CDR bytes by their Plan
 *        6.1 The writer: growth, the CDRWriter synced, a node handed back
 *        6.2 Counts and numbers
 *        6.3 Strings and enums
 *        6.4 Structs and unions
 *        6.5 Sequences and number arrays
 *        6.6 write_plan: a value by its node's op
 *   7. Module functions: read(), write(), encode() of one plan node
 *   8. Public entry points: marshal's encode and decode as C callables
 *   9. GIOP 1.2/1.3 messages: the ORB's fast decode (decode_common_12), the
 *      framing of a run of them (frame_common_12)
 *  10. serve_request: the server's Request -> Reply in one call
 *  11. The client's Request and Reply: encode_request, decode_reply
 *  12. Blocking sockets (POSIX): exchange, send_request, serve_exchange
 *        12.1 Polling before sleeping
 *        12.2 Sending whole: send_request, a oneway call
 *        12.3 exchange: the blocking client's twoway call
 *        12.4 serve_exchange: the threaded server's read, Requests served
 *  13. The module: its method table and PyInit__speedups
 */

/* ==========================================================================
 * 1. Includes and compiler hints
 * ========================================================================== */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define likely(x) (x)
#define unlikely(x) (x)
#define NOINLINE
#define ALWAYS_INLINE static inline
#endif

#if PY_VERSION_HEX < 0x030B0000
#error "pycdr.codec._speedups needs CPython 3.11+ (PyFloat_Pack4/Unpack4)"
#endif

/* ==========================================================================
 * 2. Module state: the objects the import and configure() set
 * ==========================================================================
 *
 * One interpreter: plain statics.
 */

static PyObject *Fallback;            /* internal: "let Python decide" */
static PyObject *array_type;          /* array.array */
static PyObject *array_frombytes;     /* array.array.frombytes, called without a lookup */
static PyObject *struct_base_init;    /* pycdr.codec.values.Struct.__init__ */
static PyObject *union_base;          /* pycdr.codec.values.Union */
static PyObject *exception_init;      /* Exception.__init__ */
static PyObject *empty_tuple;
static long max_depth = 200;          /* pycdr.codec.plan.MAX_DEPTH */

static PyObject *s_frombytes, *s_enabled, *s_plans;

/* Set by configure() (pycdr/codec/_cmarshal.py) for the public entry points: */
static PyObject *cmarshal_globals;    /* _cmarshal's namespace: its `enabled` flag */
static PyObject *plan_for_fn;         /* pycdr.codec.plan.plan_for */
static PyTypeObject *typecode_type;   /* pycdr.codec.typecode.TypeCode */
static Py_ssize_t plans_offset;       /* slot offset of TypeCode._plans, or 0 */
static PyObject *cdr_error;           /* pycdr.errors.CDRError */
static PyObject *reader_for_fn;       /* _cmarshal._reader_for */
static PyObject *writer_for_fn;       /* _cmarshal._writer_for */
static long iso_8859_1;               /* the only char code set the C code takes */
static int default_tcs_c_is_latin1;
static PyObject *default_version, *default_tcs_c, *default_tcs_w;
static PyObject *s_read, *s_write, *s_pos, *s_depth, *s_c, *s_op, *s_buf, *s_origin,
    *s_little, *s_typecode, *s_d, *s_v, *s_init, *s_ordinal, *s_disc;

/* CDR kinds (TCKind values) of the numeric types */
enum { TK_SHORT = 2, TK_LONG = 3, TK_USHORT = 4, TK_ULONG = 5, TK_FLOAT = 6,
       TK_DOUBLE = 7, TK_LONGLONG = 23, TK_ULONGLONG = 24 };

/* ==========================================================================
 * 3. Plans: a plan node compiled into a C Plan, cached on the node
 * ========================================================================== */

/* -- 3.1 The Plan and its cache on the node -------------------------------- */

typedef enum {
    OP_PYTHON = 0,  /* handed back to the Python node */
    OP_NULL, OP_NUMBER, OP_BOOLEAN, OP_OCTET, OP_CHAR, OP_STRING, OP_ENUM,
    OP_STRUCT, OP_UNION, OP_SEQUENCE, OP_OCTET_SEQ, OP_CHAR_SEQ, OP_NUMBER_SEQ,
    OP_BOOLEAN_SEQ, OP_RECURSIVE
} Op;

struct Plan;

typedef struct {
    PyObject *pyname;      /* borrowed from the node's members tuple */
    struct Plan *plan;     /* borrowed: owned by the member node's capsule */
    Py_ssize_t offset;     /* slot offset in instances of the struct class, or 0 */
} Member;

typedef struct {
    struct Plan *plan;     /* borrowed */
} Branch;

typedef struct Plan {
    Op op;
    PyObject *node;        /* borrowed: the node owns this plan (capsule in node._c) */
    int touches_context;   /* subtree holds any/value nodes (stream state in context) */
    /* number / number_seq element */
    int kind;
    int size;
    char acode;            /* array typecode of number_seq */
    /* string / sequences */
    Py_ssize_t bound;
    int is_array;
    Py_ssize_t min_size;
    struct Plan *elem;     /* borrowed */
    /* enum: items tuple (borrowed from node.items) */
    PyObject *items;
    Py_ssize_t count;
    /* struct / union: class (borrowed from node.cls) */
    PyTypeObject *cls;
    int direct;            /* instances made and read by slot offset */
    int is_exception;
    PyObject *exc_id;      /* exception: its repository id (borrowed from node.tc) */
    int is_flat;           /* StructNode.flat set: Python decodes it in one unpack,
                            * and numeric arrays inside come out as lists */
    Py_ssize_t nmembers;
    Member *members;
    /* fixed-size struct of primitives and octet/char arrays, read and written
     * in one pass: flat_size[phase] bytes from a start at alignment phase
     * (position - origin) & 7, member i at flat_offsets[phase * nmembers + i]
     * from that start (padding included).  NULL: member by member. */
    Py_ssize_t flat_size[8];
    Py_ssize_t *flat_offsets;
    /* union */
    struct Plan *disc;
    PyObject *label_index; /* owned: {label: branch index}, same keys as node.by_label */
    Py_ssize_t nbranches;
    Branch *branches;
    struct Plan *default_plan;   /* NULL: no default branch */
    int has_default;
    int disc_is_enum;
    Py_ssize_t d_offset, v_offset;
    /* recursive */
    struct Plan *target;   /* borrowed */
} Plan;

static void
plan_free(Plan *p)
{
    if (p == NULL) return;
    PyMem_Free(p->members);
    PyMem_Free(p->flat_offsets);
    PyMem_Free(p->branches);
    Py_XDECREF(p->label_index);
    PyMem_Free(p);
}

static void
capsule_destructor(PyObject *capsule)
{
    plan_free((Plan *)PyCapsule_GetPointer(capsule, "pycdr.codec.plan"));
}

static Plan *compile_node(PyObject *node);
static int compile_flat_layout(Plan *p);

/* The C plan of a node, compiled on first use and cached in node._c. */
static Plan *
plan_of(PyObject *node)
{
    PyObject **dictptr = _PyObject_GetDictPtr(node);
    if (likely(dictptr != NULL && *dictptr != NULL)) {
        PyObject *capsule = PyDict_GetItemWithError(*dictptr, s_c);
        if (likely(capsule != NULL))
            return (Plan *)PyCapsule_GetPointer(capsule, "pycdr.codec.plan");
        if (PyErr_Occurred()) return NULL;
    }
    return compile_node(node);
}

/* -- 3.2 A node's attributes, its class's slots ---------------------------- */

static int
get_ssize(PyObject *node, const char *name, Py_ssize_t *out)
{
    PyObject *v = PyObject_GetAttrString(node, name);
    if (v == NULL) return -1;
    *out = PyNumber_AsSsize_t(v, PyExc_OverflowError);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int
get_bool(PyObject *node, const char *name, int *out)
{
    PyObject *v = PyObject_GetAttrString(node, name);
    if (v == NULL) return -1;
    *out = PyObject_IsTrue(v);
    Py_DECREF(v);
    return *out < 0 ? -1 : 0;
}

/* A borrowed attribute: the node keeps it alive as long as it lives. */
static PyObject *
get_borrowed(PyObject *node, const char *name)
{
    PyObject *v = PyObject_GetAttrString(node, name);
    if (v == NULL) return NULL;
    Py_DECREF(v);     /* node.<name> still holds it */
    return v;
}

/* The offset of a writable object slot `name` of cls, or 0 when attribute
 * access on cls is not plain slot access (a property, a __dict__ entry...). */
static Py_ssize_t
slot_offset(PyTypeObject *cls, PyObject *name)
{
    PyObject *descr = _PyType_Lookup(cls, name);
    if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) return 0;
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY)) return 0;
    return m->offset;
}

/* May instances be made with tp_alloc and filled/read by slot offset with the
 * same result as cls.__new__(cls) + setattr (and, for flat structs, as
 * cls(*members) through the generated __init__)? */
static int
class_is_plain(PyTypeObject *cls)
{
    return cls->tp_new == PyBaseObject_Type.tp_new &&
           cls->tp_setattro == PyObject_GenericSetAttr &&
           cls->tp_getattro == PyObject_GenericGetAttr;
}

static int
init_is_generated(PyTypeObject *cls)
{
    PyObject *init = _PyType_Lookup(cls, s_init);
    if (init == NULL) return 0;
    if (init == struct_base_init) return 1;
    if (!PyFunction_Check(init)) return 0;
    PyObject *code = PyFunction_GET_CODE(init);
    PyObject *names = PyObject_GetAttrString(code, "co_varnames");
    if (names == NULL) { PyErr_Clear(); return 0; }
    int ok = PyTuple_Check(names) && PyTuple_GET_SIZE(names) > 0 &&
             PyUnicode_Check(PyTuple_GET_ITEM(names, 0)) &&
             PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, 0), "_pycdr_obj") == 0;
    Py_DECREF(names);
    return ok;
}

/* -- 3.3 Compiling a node: sequences, structs, unions ---------------------- */

static int
number_size(int kind)
{
    switch (kind) {
    case TK_SHORT: case TK_USHORT: return 2;
    case TK_LONG: case TK_ULONG: case TK_FLOAT: return 4;
    case TK_LONGLONG: case TK_ULONGLONG: case TK_DOUBLE: return 8;
    default: return 0;
    }
}

static int
compile_sequence_common(Plan *p, PyObject *node)
{
    if (get_bool(node, "is_array", &p->is_array) < 0) return -1;
    if (get_ssize(node, "bound", &p->bound) < 0) return -1;
    if (get_ssize(node, "min_size", &p->min_size) < 0) return -1;
    PyObject *elem = get_borrowed(node, "elem");
    if (elem == NULL) return -1;
    p->elem = plan_of(elem);
    if (p->elem == NULL) return -1;
    p->touches_context |= p->elem->touches_context;
    return 0;
}

static int
compile_struct(Plan *p, PyObject *node)
{
    PyObject *members = get_borrowed(node, "members");
    if (members == NULL) return -1;
    if (!PyTuple_Check(members)) {
        PyErr_SetString(PyExc_TypeError, "struct node members must be a tuple");
        return -1;
    }
    PyObject *cls = get_borrowed(node, "cls");
    if (cls == NULL) return -1;
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "struct node cls must be a class");
        return -1;
    }
    p->cls = (PyTypeObject *)cls;
    if (get_bool(node, "is_exception", &p->is_exception) < 0) return -1;
    if (p->is_exception) {
        /* an exception is marshaled as its repository id, then its members */
        PyObject *tcobj = get_borrowed(node, "tc");
        if (tcobj == NULL) return -1;
        p->exc_id = get_borrowed(tcobj, "_id");
        if (p->exc_id == NULL) return -1;
        if (!PyUnicode_CheckExact(p->exc_id)) {
            PyErr_SetString(PyExc_TypeError, "exception repository id must be a str");
            return -1;
        }
    }
    PyObject *flat = PyObject_GetAttrString(node, "flat");
    if (flat == NULL) return -1;
    int has_flat = flat != Py_None;
    Py_DECREF(flat);
    p->is_flat = has_flat;
    p->nmembers = PyTuple_GET_SIZE(members);
    p->members = PyMem_Calloc(p->nmembers ? p->nmembers : 1, sizeof(Member));
    if (p->members == NULL) { PyErr_NoMemory(); return -1; }
    p->direct = !p->is_exception && class_is_plain(p->cls) &&
                (!has_flat || init_is_generated(p->cls));
    for (Py_ssize_t i = 0; i < p->nmembers; i++) {
        PyObject *m = PyTuple_GET_ITEM(members, i);
        if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) != 3 ||
                !PyUnicode_Check(PyTuple_GET_ITEM(m, 0))) {
            PyErr_SetString(PyExc_TypeError, "struct member must be (pyname, idlname, node)");
            return -1;
        }
        p->members[i].pyname = PyTuple_GET_ITEM(m, 0);
        p->members[i].plan = plan_of(PyTuple_GET_ITEM(m, 2));
        if (p->members[i].plan == NULL) return -1;
        p->touches_context |= p->members[i].plan->touches_context;
        if (p->direct) {
            p->members[i].offset = slot_offset(p->cls, p->members[i].pyname);
            if (p->members[i].offset == 0) p->direct = 0;
        }
    }
    return compile_flat_layout(p);
}

/* Alignment and size of a member the one-pass struct code takes, or 0. */
static Py_ssize_t
flat_member_size(const Plan *m, Py_ssize_t *align)
{
    *align = 1;
    switch (m->op) {
    case OP_NUMBER: *align = m->size; return m->size;
    case OP_OCTET: case OP_CHAR: case OP_BOOLEAN: return 1;
    case OP_OCTET_SEQ: case OP_CHAR_SEQ:    /* octet[N], char[N]: no count, no alignment */
        return m->is_array && m->bound > 0 ? m->bound : 0;
    default: return 0;
    }
}

/* Precompute the one-pass layout of a struct whose instances are made by slot
 * offset and whose members are all fixed-size primitives or octet/char arrays
 * (the seed papers' "precompute": offsets per starting alignment phase). */
static int
compile_flat_layout(Plan *p)
{
    if (!p->direct || p->is_exception || p->nmembers == 0) return 0;
    for (Py_ssize_t i = 0; i < p->nmembers; i++) {
        Py_ssize_t align;
        if (flat_member_size(p->members[i].plan, &align) == 0) return 0;
    }
    p->flat_offsets = PyMem_Calloc((size_t)(8 * p->nmembers), sizeof(Py_ssize_t));
    if (p->flat_offsets == NULL) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t phase = 0; phase < 8; phase++) {
        Py_ssize_t at = phase;      /* position relative to the alignment origin, mod 8 */
        for (Py_ssize_t i = 0; i < p->nmembers; i++) {
            Py_ssize_t align;
            Py_ssize_t size = flat_member_size(p->members[i].plan, &align);
            at += (-at) & (align - 1);
            p->flat_offsets[phase * p->nmembers + i] = at - phase;
            at += size;
        }
        p->flat_size[phase] = at - phase;
    }
    return 0;
}

static int
compile_union(Plan *p, PyObject *node)
{
    PyObject *cls = get_borrowed(node, "cls");
    if (cls == NULL) return -1;
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "union node cls must be a class");
        return -1;
    }
    p->cls = (PyTypeObject *)cls;
    if (get_bool(node, "disc_is_enum", &p->disc_is_enum) < 0) return -1;
    PyObject *disc = get_borrowed(node, "disc");
    if (disc == NULL) return -1;
    p->disc = plan_of(disc);
    if (p->disc == NULL) return -1;
    p->touches_context |= p->disc->touches_context;
    if (p->disc_is_enum && p->disc->op != OP_ENUM) {
        PyErr_SetString(PyExc_TypeError, "enum union without an enum discriminator plan");
        return -1;
    }
    PyObject *by_label = get_borrowed(node, "by_label");
    if (by_label == NULL) return -1;
    if (!PyDict_Check(by_label)) {
        PyErr_SetString(PyExc_TypeError, "union node by_label must be a dict");
        return -1;
    }
    p->nbranches = PyDict_GET_SIZE(by_label);
    p->branches = PyMem_Calloc(p->nbranches ? p->nbranches : 1, sizeof(Branch));
    p->label_index = PyDict_New();
    if (p->branches == NULL || p->label_index == NULL) {
        if (p->branches == NULL) PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t it = 0, i = 0;
    PyObject *label, *branch;
    while (PyDict_Next(by_label, &it, &label, &branch)) {
        if (!PyTuple_Check(branch) || PyTuple_GET_SIZE(branch) != 2) {
            PyErr_SetString(PyExc_TypeError, "union branch must be (name, node)");
            return -1;
        }
        Plan *bp = plan_of(PyTuple_GET_ITEM(branch, 1));
        if (bp == NULL) return -1;
        p->touches_context |= bp->touches_context;
        p->branches[i].plan = bp;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyDict_SetItem(p->label_index, label, index) < 0) {
            Py_XDECREF(index);
            return -1;
        }
        Py_DECREF(index);
        i++;
    }
    PyObject *deflt = get_borrowed(node, "default");
    if (deflt == NULL) return -1;
    if (deflt != Py_None) {
        if (!PyTuple_Check(deflt) || PyTuple_GET_SIZE(deflt) != 2) {
            PyErr_SetString(PyExc_TypeError, "union default must be (name, node)");
            return -1;
        }
        p->default_plan = plan_of(PyTuple_GET_ITEM(deflt, 1));
        if (p->default_plan == NULL) return -1;
        p->touches_context |= p->default_plan->touches_context;
        p->has_default = 1;
    }
    p->d_offset = slot_offset(p->cls, s_d);
    p->v_offset = slot_offset(p->cls, s_v);
    p->direct = class_is_plain(p->cls) && p->d_offset && p->v_offset;
    return 0;
}

static Op
op_from_name(PyObject *name, int *touches_context)
{
    static const struct { const char *name; Op op; } table[] = {
        {"null", OP_NULL}, {"number", OP_NUMBER}, {"boolean", OP_BOOLEAN},
        {"octet", OP_OCTET}, {"char", OP_CHAR}, {"string", OP_STRING}, {"enum", OP_ENUM},
        {"struct", OP_STRUCT}, {"union", OP_UNION}, {"sequence", OP_SEQUENCE},
        {"octet_seq", OP_OCTET_SEQ}, {"char_seq", OP_CHAR_SEQ},
        {"number_seq", OP_NUMBER_SEQ}, {"boolean_seq", OP_BOOLEAN_SEQ},
        {"recursive", OP_RECURSIVE},
    };
    static const char *context_ops[] = {"any", "value", "abstract_interface"};
    *touches_context = 0;
    if (PyUnicode_Check(name)) {
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
            if (PyUnicode_CompareWithASCIIString(name, table[i].name) == 0)
                return table[i].op;
        for (size_t i = 0; i < sizeof(context_ops) / sizeof(context_ops[0]); i++)
            if (PyUnicode_CompareWithASCIIString(name, context_ops[i]) == 0)
                *touches_context = 1;
    }
    return OP_PYTHON;
}

/* Compile one node.  The capsule is attached before the children are
 * compiled, so a recursive reference finds its (unfinished) target. */
static Plan *
compile_node(PyObject *node)
{
    PyObject *opname = PyObject_GetAttr(node, s_op);
    if (opname == NULL) return NULL;
    Plan *p = PyMem_Calloc(1, sizeof(Plan));
    if (p == NULL) { Py_DECREF(opname); PyErr_NoMemory(); return NULL; }
    p->node = node;
    p->op = op_from_name(opname, &p->touches_context);
    Py_DECREF(opname);
    PyObject *capsule = PyCapsule_New(p, "pycdr.codec.plan", capsule_destructor);
    if (capsule == NULL) { plan_free(p); return NULL; }
    if (PyObject_SetAttr(node, s_c, capsule) < 0) {
        Py_DECREF(capsule);    /* frees p */
        return NULL;
    }
    Py_DECREF(capsule);        /* node._c holds it */
    int rc = 0;
    switch (p->op) {
    case OP_NUMBER: {
        Py_ssize_t kind;
        rc = get_ssize(node, "kind", &kind);
        p->kind = (int)kind;
        p->size = number_size(p->kind);
        if (rc == 0 && p->size == 0) p->op = OP_PYTHON;
        break;
    }
    case OP_STRING:
        rc = get_ssize(node, "bound", &p->bound);
        break;
    case OP_ENUM:
        p->items = get_borrowed(node, "items");
        if (p->items == NULL) { rc = -1; break; }
        if (!PyTuple_Check(p->items)) { p->op = OP_PYTHON; break; }
        p->count = PyTuple_GET_SIZE(p->items);
        break;
    case OP_STRUCT:
        rc = compile_struct(p, node);
        break;
    case OP_UNION:
        rc = compile_union(p, node);
        break;
    case OP_SEQUENCE: case OP_OCTET_SEQ: case OP_CHAR_SEQ: case OP_BOOLEAN_SEQ:
        rc = compile_sequence_common(p, node);
        break;
    case OP_NUMBER_SEQ: {
        rc = compile_sequence_common(p, node);
        if (rc < 0) break;
        if (p->elem->op != OP_NUMBER) { p->op = OP_PYTHON; break; }
        p->kind = p->elem->kind;
        p->size = p->elem->size;
        switch (p->kind) {
        case TK_SHORT: p->acode = 'h'; break;
        case TK_USHORT: p->acode = 'H'; break;
        case TK_LONG: p->acode = 'i'; break;
        case TK_ULONG: p->acode = 'I'; break;
        case TK_LONGLONG: p->acode = 'q'; break;
        case TK_ULONGLONG: p->acode = 'Q'; break;
        case TK_FLOAT: p->acode = 'f'; break;
        case TK_DOUBLE: p->acode = 'd'; break;
        }
        break;
    }
    case OP_RECURSIVE: {
        PyObject *target = get_borrowed(node, "target");
        if (target == NULL) { rc = -1; break; }
        p->target = plan_of(target);
        if (p->target == NULL) rc = -1;
        /* touches_context of an unfinished target is not known yet: be safe */
        p->touches_context = 1;
        break;
    }
    default:
        break;
    }
    if (rc < 0 && (PyErr_ExceptionMatches(PyExc_AttributeError) ||
                   PyErr_ExceptionMatches(PyExc_TypeError))) {
        /* A node whose parameters are not what this module knows (pycdr/codec/plan/
         * changed shape): run that node in Python rather than fail. */
        PyErr_Clear();
        p->op = OP_PYTHON;
        p->touches_context = 1;
        return p;
    }
    if (rc < 0) {
        /* drop the half-built plan so a later call recompiles (and fails) cleanly */
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        if (PyObject_DelAttr(node, s_c) < 0) PyErr_Clear();
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return NULL;
    }
    return p;
}

/* ==========================================================================
 * 4. Byte order: loads and stores in either byte order, bulk swaps
 * ========================================================================== */

#if PY_LITTLE_ENDIAN
#define NATIVE_LITTLE 1
#else
#define NATIVE_LITTLE 0
#endif

ALWAYS_INLINE uint16_t load16(const unsigned char *p, int swap)
{ uint16_t v; memcpy(&v, p, 2); return swap ? __builtin_bswap16(v) : v; }
ALWAYS_INLINE uint32_t load32(const unsigned char *p, int swap)
{ uint32_t v; memcpy(&v, p, 4); return swap ? __builtin_bswap32(v) : v; }
ALWAYS_INLINE uint64_t load64(const unsigned char *p, int swap)
{ uint64_t v; memcpy(&v, p, 8); return swap ? __builtin_bswap64(v) : v; }
ALWAYS_INLINE void store16(unsigned char *p, uint16_t v, int swap)
{ if (swap) v = __builtin_bswap16(v); memcpy(p, &v, 2); }
ALWAYS_INLINE void store32(unsigned char *p, uint32_t v, int swap)
{ if (swap) v = __builtin_bswap32(v); memcpy(p, &v, 4); }
ALWAYS_INLINE void store64(unsigned char *p, uint64_t v, int swap)
{ if (swap) v = __builtin_bswap64(v); memcpy(p, &v, 8); }

/* Bulk byte swaps for the array mapping.  Baseline x86-64 (SSE2) has no byte
 * shuffle, so gcc leaves these loops scalar (one element a cycle); built once
 * more for SSSE3 and AVX2 (pshufb, chosen at load time by the CPU) they run
 * 16 or 32 bytes an instruction.  dst and src never overlap. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
    && !defined(__SANITIZE_ADDRESS__)
#define SWAP_LOOP __attribute__((target_clones("avx2", "ssse3", "default"), optimize("O3")))
#else
#define SWAP_LOOP
#endif

SWAP_LOOP static void
swap16_loop(unsigned char *restrict dst, const unsigned char *restrict src, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) store16(dst + 2 * i, load16(src + 2 * i, 1), 0);
}

SWAP_LOOP static void
swap32_loop(unsigned char *restrict dst, const unsigned char *restrict src, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) store32(dst + 4 * i, load32(src + 4 * i, 1), 0);
}

SWAP_LOOP static void
swap64_loop(unsigned char *restrict dst, const unsigned char *restrict src, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) store64(dst + 8 * i, load64(src + 8 * i, 1), 0);
}

/* Copy n elements of `size` bytes from src to dst (not overlapping), swapping
 * each when asked. */
static void
copy_swapped(unsigned char *dst, const unsigned char *src, Py_ssize_t n, int size, int swap)
{
    if (!swap) { memcpy(dst, src, (size_t)(n * size)); return; }
    switch (size) {
    case 2: swap16_loop(dst, src, n); break;
    case 4: swap32_loop(dst, src, n); break;
    case 8: swap64_loop(dst, src, n); break;
    }
}

/* ==========================================================================
 * 5. Reader: CDR bytes to Python values by their Plan
 * ========================================================================== */

/* -- 5.1 The reader, its checks, a node handed back to Python -------------- */

/* What the public decode functions need to make a CDRReader, made only when a
 * node is handed back to Python: _reader_for(data, start, origin, little,
 * version, tcs_w, numeric_arrays).  The objects are borrowed from the call. */
typedef struct {
    PyObject *data, *little, *version, *tcs_w, *numeric_arrays;
    Py_ssize_t start, origin;
} ReaderArgs;

typedef struct {
    const unsigned char *buf;
    Py_ssize_t pos, end, origin;
    int little, swap;
    int numeric_arrays;
    long depth;
    PyObject *reader;             /* the CDRReader for per-node fallbacks (owned), or NULL */
    const ReaderArgs *make_reader; /* how to make it when reader is NULL, or NULL */
} Reader;

/* Out of line: the cold path of every check. */
static NOINLINE PyObject *
fallback_null(void)
{
    if (!PyErr_Occurred()) PyErr_SetNone(Fallback);
    return NULL;
}

static NOINLINE int
fallback_int(void)
{
    if (!PyErr_Occurred()) PyErr_SetNone(Fallback);
    return -1;
}

/* Align to n (a power of two) and make sure `size` bytes follow; returns the
 * position of the value or -1 (Fallback set). */
ALWAYS_INLINE Py_ssize_t
reader_take(Reader *r, Py_ssize_t align, Py_ssize_t size)
{
    Py_ssize_t pos = r->pos + ((r->origin - r->pos) & (align - 1));
    if (unlikely(pos + size > r->end)) return fallback_int();
    r->pos = pos + size;
    return pos;
}

ALWAYS_INLINE int
reader_ulong(Reader *r, uint32_t *out)
{
    Py_ssize_t pos = reader_take(r, 4, 4);
    if (unlikely(pos < 0)) return -1;
    *out = load32(r->buf + pos, r->swap);
    return 0;
}

/* A sequence count (CDRReader.read_count): every element takes at least
 * min_size bytes, so a count larger than the bytes left is refused before
 * anything is allocated. */
ALWAYS_INLINE int
reader_count(Reader *r, const Plan *p, Py_ssize_t *out)
{
    if (p->is_array) { *out = p->bound; return 0; }
    uint32_t n;
    if (unlikely(reader_ulong(r, &n) < 0)) return -1;
    if (unlikely(n && (uint64_t)n * (uint64_t)p->min_size > (uint64_t)(r->end - r->pos)))
        return fallback_int();
    if (unlikely(p->bound && (Py_ssize_t)n > p->bound)) return fallback_int();
    *out = (Py_ssize_t)n;
    return 0;
}

static PyObject *read_plan(Reader *r, const Plan *p);

/* Hand one node back to Python: sync the CDRReader to our position. */
static NOINLINE PyObject *
read_python(Reader *r, const Plan *p)
{
    if (r->reader == NULL) {
        const ReaderArgs *a = r->make_reader;
        if (a == NULL) return fallback_null();
        PyObject *start = PyLong_FromSsize_t(a->start);
        PyObject *origin = PyLong_FromSsize_t(a->origin);
        if (start != NULL && origin != NULL) {
            PyObject *argv[7] = {a->data, start, origin, a->little, a->version, a->tcs_w,
                                 a->numeric_arrays};
            r->reader = PyObject_Vectorcall(reader_for_fn, argv, 7, NULL);
        }
        Py_XDECREF(start);
        Py_XDECREF(origin);
        if (r->reader == NULL) return NULL;
    }
    PyObject *num = PyLong_FromSsize_t(r->pos);
    if (num == NULL) return NULL;
    int rc = PyObject_SetAttr(r->reader, s_pos, num);
    Py_DECREF(num);
    if (rc < 0) return NULL;
    num = PyLong_FromLong(r->depth);
    if (num == NULL) return NULL;
    rc = PyObject_SetAttr(r->reader, s_depth, num);
    Py_DECREF(num);
    if (rc < 0) return NULL;
    PyObject *value = PyObject_CallMethodOneArg(p->node, s_read, r->reader);
    if (value == NULL) return NULL;
    num = PyObject_GetAttr(r->reader, s_pos);
    if (num == NULL) { Py_DECREF(value); return NULL; }
    Py_ssize_t pos = PyLong_AsSsize_t(num);
    Py_DECREF(num);
    if (pos == -1 && PyErr_Occurred()) { Py_DECREF(value); return NULL; }
    if (pos < r->pos || pos > r->end) { Py_DECREF(value); return fallback_null(); }
    r->pos = pos;
    return value;
}

/* -- 5.2 Int objects: the shared small ints -------------------------------- */

/* Ints from -32768 to 65535 (every short and ushort, and the small values
 * other integer types mostly carry: counts, indices, codes), each made once
 * and then shared, as CPython shares -5..256: decoding such an int costs no
 * allocation, which is most of what a list of new ints costs.  Ints are
 * immutable, so nothing can tell a shared one from a new one but `is`.  The
 * table (768 KiB) is allocated at the first such int, and each value made at
 * its first appearance: at most 98,304 ints (~3 MiB) for the process.  Without
 * the table (no memory for it) ints are simply made anew. */
#define SHARED_INT_MIN (-32768)
#define SHARED_INT_COUNT (65536 + 32768)
static PyObject **shared_ints;

static NOINLINE PyObject *
shared_int_fill(long v)
{
    if (shared_ints == NULL) {
        shared_ints = PyMem_Calloc(SHARED_INT_COUNT, sizeof(PyObject *));
        if (shared_ints == NULL) return PyLong_FromLong(v);
    }
    PyObject *o = PyLong_FromLong(v);
    if (o == NULL) return NULL;
    shared_ints[v - SHARED_INT_MIN] = o;       /* the table's reference */
    Py_INCREF(o);
    return o;
}

ALWAYS_INLINE PyObject *
shared_int(long v)      /* v in SHARED_INT_MIN .. SHARED_INT_MIN + SHARED_INT_COUNT - 1 */
{
    PyObject *o;
    if (unlikely(shared_ints == NULL) || unlikely((o = shared_ints[v - SHARED_INT_MIN]) == NULL))
        return shared_int_fill(v);
    Py_INCREF(o);
    return o;
}

#define SHARES(v) ((v) >= SHARED_INT_MIN && (v) < SHARED_INT_MIN + SHARED_INT_COUNT)

ALWAYS_INLINE PyObject *
int_from_signed(long long v)
{ return SHARES(v) ? shared_int((long)v) : PyLong_FromLongLong(v); }

/* A long's int: PyLong_FromLong, as array.tolist() makes it (PyLong_FromLongLong
 * takes a slower path for values of more than one 30-bit digit). */
ALWAYS_INLINE PyObject *
int_from_int32(int32_t v)
{ return SHARES(v) ? shared_int((long)v) : PyLong_FromLong(v); }

ALWAYS_INLINE PyObject *
int_from_unsigned(unsigned long long v)
{ return v < 65536 ? shared_int((long)v) : PyLong_FromUnsignedLongLong(v); }

/* -- 5.3 Numbers, strings, enums ------------------------------------------- */

/* The number of `kind` stored at b (swap: not in native byte order). */
ALWAYS_INLINE PyObject *
number_at(const unsigned char *b, int kind, int swap)
{
    switch (kind) {
    case TK_SHORT: return shared_int((int16_t)load16(b, swap));
    case TK_USHORT: return shared_int(load16(b, swap));
    case TK_LONG: return int_from_signed((int32_t)load32(b, swap));
    case TK_ULONG: return int_from_unsigned(load32(b, swap));
    case TK_LONGLONG: return int_from_signed((int64_t)load64(b, swap));
    case TK_ULONGLONG: return int_from_unsigned(load64(b, swap));
    case TK_FLOAT: {   /* as struct.unpack('f'): the float32 widened exactly */
        uint32_t u = load32(b, swap);
        float f;
        memcpy(&f, &u, 4);
        return PyFloat_FromDouble((double)f);
    }
    case TK_DOUBLE: {
        uint64_t u = load64(b, swap);
        double d;
        memcpy(&d, &u, 8);
        return PyFloat_FromDouble(d);
    }
    }
    return fallback_null();
}

ALWAYS_INLINE PyObject *
read_number(Reader *r, int kind, int size)
{
    Py_ssize_t pos = reader_take(r, size, size);
    if (unlikely(pos < 0)) return NULL;
    return number_at(r->buf + pos, kind, r->swap);
}

static PyObject *
read_string(Reader *r, const Plan *p)
{
    uint32_t n;
    if (unlikely(reader_ulong(r, &n) < 0)) return NULL;
    /* length 0 (no NUL) and a missing NUL are violations: Python reports them */
    if (unlikely(n == 0 || (Py_ssize_t)n > r->end - r->pos)) return fallback_null();
    const unsigned char *s = r->buf + r->pos;
    if (unlikely(s[n - 1] != 0)) return fallback_null();
    if (unlikely(p->bound && (Py_ssize_t)(n - 1) > p->bound)) return fallback_null();
    r->pos += n;
    return PyUnicode_DecodeLatin1((const char *)s, (Py_ssize_t)n - 1, NULL);
}

static PyObject *
read_enum(Reader *r, const Plan *p)
{
    uint32_t n;
    if (unlikely(reader_ulong(r, &n) < 0)) return NULL;
    if (unlikely((Py_ssize_t)n >= p->count)) return fallback_null();
    PyObject *item = PyTuple_GET_ITEM(p->items, n);
    Py_INCREF(item);
    return item;
}

/* -- 5.4 Structs, exceptions, unions --------------------------------------- */

static NOINLINE PyObject *
new_exception_instance(PyTypeObject *cls)
{
    PyObject *obj = cls->tp_new(cls, empty_tuple, NULL);
    if (obj == NULL) return NULL;
    PyObject *res = PyObject_CallOneArg(exception_init, obj);
    if (res == NULL) { Py_DECREF(obj); return NULL; }
    Py_DECREF(res);
    return obj;
}

/* A struct with a flat layout: one bounds check, members at precomputed
 * offsets, stored straight into the new instance's slots. */
static PyObject *
read_flat_struct(Reader *r, const Plan *p)
{
    Py_ssize_t phase = (r->pos - r->origin) & 7;
    Py_ssize_t size = p->flat_size[phase];
    /* short input: the Python path reports where */
    if (unlikely(size > r->end - r->pos)) return fallback_null();
    const Py_ssize_t *offsets = p->flat_offsets + phase * p->nmembers;
    const unsigned char *base = r->buf + r->pos;
    PyObject *obj = p->cls->tp_alloc(p->cls, 0);
    if (unlikely(obj == NULL)) return NULL;
    for (Py_ssize_t i = 0; i < p->nmembers; i++) {
        const Member *m = &p->members[i];
        const Plan *mp = m->plan;
        const unsigned char *b = base + offsets[i];
        PyObject *v;
        switch (mp->op) {
        case OP_NUMBER: v = number_at(b, mp->kind, r->swap); break;
        case OP_OCTET: v = PyLong_FromLong(*b); break;
        case OP_CHAR: v = PyUnicode_FromOrdinal(*b); break;     /* latin-1 */
        case OP_BOOLEAN:
            if (unlikely(*b > 1)) { Py_DECREF(obj); return fallback_null(); }
            v = PyBool_FromLong(*b);
            break;
        case OP_OCTET_SEQ: v = PyBytes_FromStringAndSize((const char *)b, mp->bound); break;
        default: /* OP_CHAR_SEQ */ v = PyUnicode_DecodeLatin1((const char *)b, mp->bound, NULL);
        }
        if (unlikely(v == NULL)) { Py_DECREF(obj); return NULL; }
        *(PyObject **)((char *)obj + m->offset) = v;    /* a fresh instance: slot empty */
    }
    r->pos += size;
    return obj;
}

static PyObject *
read_struct(Reader *r, const Plan *p)
{
    if (p->flat_offsets != NULL) return read_flat_struct(r, p);
    if (!p->direct && !p->is_exception) return read_python(r, p);
    PyObject *obj = p->direct ? p->cls->tp_alloc(p->cls, 0) : new_exception_instance(p->cls);
    if (obj == NULL) return NULL;
    if (p->is_exception) {
        /* the repository id first: a different one is a violation (Python reports it) */
        static const Plan unbounded_string = {.op = OP_STRING, .bound = 0};
        PyObject *rid = read_string(r, &unbounded_string);
        if (rid == NULL) { Py_DECREF(obj); return NULL; }
        int same = PyUnicode_GET_LENGTH(p->exc_id) == 0 ||
                   PyUnicode_Compare(rid, p->exc_id) == 0;
        Py_DECREF(rid);
        if (!same) { Py_DECREF(obj); return fallback_null(); }
    }
    /* The Python path decodes a flat struct with one struct.unpack, which makes
     * lists of its numeric arrays even when numeric_arrays is asked for. */
    int numeric_arrays = r->numeric_arrays;
    if (p->is_flat) r->numeric_arrays = 0;
    for (Py_ssize_t i = 0; i < p->nmembers; i++) {
        const Member *m = &p->members[i];
        PyObject *v = read_plan(r, m->plan);
        if (unlikely(v == NULL)) {
            r->numeric_arrays = numeric_arrays;
            Py_DECREF(obj);
            return NULL;
        }
        if (p->direct) {
            /* a fresh instance: the slot is empty */
            *(PyObject **)((char *)obj + m->offset) = v;
        } else {
            int rc = PyObject_SetAttr(obj, m->pyname, v);
            Py_DECREF(v);
            if (rc < 0) { r->numeric_arrays = numeric_arrays; Py_DECREF(obj); return NULL; }
        }
    }
    r->numeric_arrays = numeric_arrays;
    return obj;
}

static PyObject *
read_union(Reader *r, const Plan *p)
{
    if (!p->direct) return read_python(r, p);
    PyObject *d = read_plan(r, p->disc);
    if (d == NULL) return NULL;
    const Plan *branch = NULL;
    PyObject *index = PyDict_GetItemWithError(p->label_index, d);
    if (index != NULL) {
        branch = p->branches[PyLong_AsSsize_t(index)].plan;
    } else if (PyErr_Occurred()) {
        Py_DECREF(d);
        return fallback_null();
    } else if (p->has_default) {
        branch = p->default_plan;
    }
    PyObject *v;
    if (branch == NULL) {
        v = Py_None;
        Py_INCREF(v);
    } else {
        v = read_plan(r, branch);
        if (v == NULL) { Py_DECREF(d); return NULL; }
    }
    PyObject *obj = p->cls->tp_alloc(p->cls, 0);
    if (obj == NULL) { Py_DECREF(d); Py_DECREF(v); return NULL; }
    *(PyObject **)((char *)obj + p->d_offset) = d;
    *(PyObject **)((char *)obj + p->v_offset) = v;
    return obj;
}

/* -- 5.5 Sequences, the cyclic GC paused for long ones --------------------- */

/* Sequences shorter than this decode with the GC as it is (see read_sequence):
 * pycdr.codec.plan.GC_PAUSE_MIN, read at import. */
static Py_ssize_t gc_pause_min;

/* Whether values of plan `p` are containers the cyclic GC tracks. */
static int
makes_containers(const Plan *p)
{
    switch (p->op) {
    case OP_NULL: case OP_NUMBER: case OP_BOOLEAN: case OP_OCTET: case OP_CHAR:
    case OP_STRING: case OP_ENUM: case OP_OCTET_SEQ: case OP_CHAR_SEQ:
        return 0;
    default:
        return 1;
    }
}

static PyObject *
read_sequence(Reader *r, const Plan *p)
{
    Py_ssize_t n;
    if (unlikely(reader_count(r, p, &n) < 0)) return NULL;
    PyObject *out = PyList_New(n);
    if (out == NULL || n == 0) return out;
    /* the Python path's depth limit (SequenceNode.read) */
    if (unlikely(r->depth > max_depth)) { Py_DECREF(out); return fallback_null(); }
    r->depth++;
    /* sequence<flat struct>: no per-element dispatch or recursion guard */
    int flat = p->elem->op == OP_STRUCT && p->elem->flat_offsets != NULL;
    /* Many new container objects (struct instances, lists), all alive until the
     * sequence is: the cyclic GC would run several times meanwhile and promote
     * them towards the old generations, whose full collections scan the whole
     * heap -- in an ORB server that cost more than the decoding itself.  The GC
     * is paused while the elements are built (decoding makes no cycles) and
     * resumed as it was; a nested sequence finds it paused already. */
    int gc_paused = n >= gc_pause_min && makes_containers(p->elem) && PyGC_Disable();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = flat ? read_flat_struct(r, p->elem) : read_plan(r, p->elem);
        if (unlikely(v == NULL)) {
            if (gc_paused) PyGC_Enable();
            r->depth--;
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    if (gc_paused) PyGC_Enable();
    r->depth--;
    return out;
}

static PyObject *
read_raw_seq(Reader *r, const Plan *p)
{
    Py_ssize_t n;
    if (unlikely(reader_count(r, p, &n) < 0)) return NULL;
    if (unlikely(n > r->end - r->pos)) return fallback_null();
    const char *s = (const char *)r->buf + r->pos;
    r->pos += n;
    if (p->op == OP_OCTET_SEQ) return PyBytes_FromStringAndSize(s, n);
    return PyUnicode_DecodeLatin1(s, n, NULL);
}

static PyObject *
read_boolean_seq(Reader *r, const Plan *p)
{
    Py_ssize_t n;
    if (unlikely(reader_count(r, p, &n) < 0)) return NULL;
    if (unlikely(n > r->end - r->pos)) return fallback_null();
    const unsigned char *s = r->buf + r->pos;
    for (Py_ssize_t i = 0; i < n; i++)
        if (unlikely(s[i] > 1)) return fallback_null();
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = s[i] ? Py_True : Py_False;
        Py_INCREF(b);
        PyList_SET_ITEM(out, i, b);
    }
    r->pos += n;
    return out;
}

/* -- 5.6 Float objects kept for reuse, call arguments released ------------- */

/* Float objects kept for reuse (issue 21).  Decoding a 64 KB sequence<double> makes
 * 8,192 floats and freeing the call's arguments frees them again: past CPython's own
 * free list of 100 floats, each is a malloc and a free.  The threaded server's lane
 * knows when it holds the only reference to a served call's arguments (the servant
 * kept none): their lists' floats, each referenced by its list alone, come here
 * instead of being freed (release_arguments), and the next decoding takes them.  Only
 * under the GIL. */
#define FLOAT_POOL_MAX 16384
static PyObject *float_pool[FLOAT_POOL_MAX];
static Py_ssize_t float_pool_n;

ALWAYS_INLINE PyObject *new_float(double d)
{
    if (float_pool_n > 0) {
        PyObject *f = float_pool[--float_pool_n];     /* (its one reference, now ours) */
        ((PyFloatObject *)f)->ob_fval = d;
        return f;
    }
    return PyFloat_FromDouble(d);
}

ALWAYS_INLINE PyObject *float_from_bits(uint32_t u)
{ float f; memcpy(&f, &u, 4); return new_float((double)f); }
ALWAYS_INLINE PyObject *double_from_bits(uint64_t u)
{ double d; memcpy(&d, &u, 8); return new_float(d); }

/* Release a served call's arguments (a tuple or list, or NULL), their floats kept in
 * the pool where nothing else can see them: the arguments referenced by the caller
 * alone, a list referenced by them alone, a float by its list alone.  No code runs
 * between taking a list's floats and freeing the list (whose free skips the NULLs). */
static void
release_arguments(PyObject *call_args)
{
    if (call_args == NULL) return;
    if (Py_REFCNT(call_args) == 1 &&
            (PyTuple_CheckExact(call_args) || PyList_CheckExact(call_args))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(call_args);
        PyObject **items = PySequence_Fast_ITEMS(call_args);
        for (Py_ssize_t i = 0; i < n && float_pool_n < FLOAT_POOL_MAX; i++) {
            PyObject *a = items[i];
            if (!PyList_CheckExact(a) || Py_REFCNT(a) != 1) continue;
            PyObject **elements = ((PyListObject *)a)->ob_item;
            for (Py_ssize_t j = PyList_GET_SIZE(a) - 1; j >= 0 && float_pool_n < FLOAT_POOL_MAX;
                    j--) {
                PyObject *f = elements[j];
                if (PyFloat_CheckExact(f) && Py_REFCNT(f) == 1) {
                    float_pool[float_pool_n++] = f;
                    elements[j] = NULL;
                }
            }
        }
    }
    Py_DECREF(call_args);
}

/* -- 5.7 Number sequences: lists and the array mapping --------------------- */

/* The opt-in array mapping: array.array(acode) of the input's elements.
 * frombytes (of a view on the input: one memcpy) gives it its length, as the
 * array type has no C API to allocate one; when the byte order differs, the
 * swapped elements are then written over it straight from the input (the
 * vectorized loops above), never swapped in place. */
static NOINLINE PyObject *
number_array(const Plan *p, const unsigned char *s, Py_ssize_t n, int swap)
{
    PyObject *code = PyUnicode_FromOrdinal((unsigned char)p->acode);   /* a cached latin-1 char */
    if (code == NULL) return NULL;
    PyObject *a = PyObject_CallOneArg(array_type, code);
    Py_DECREF(code);
    if (a == NULL) return NULL;
    PyObject *view = PyMemoryView_FromMemory((char *)s, n * p->size, PyBUF_READ);
    if (view == NULL) { Py_DECREF(a); return NULL; }
    PyObject *args[2] = {a, view};
    PyObject *res = PyObject_Vectorcall(array_frombytes, args, 2, NULL);
    Py_DECREF(view);
    if (res == NULL) { Py_DECREF(a); return NULL; }
    Py_DECREF(res);
    if (swap) {
        Py_buffer b;
        if (PyObject_GetBuffer(a, &b, PyBUF_WRITABLE) < 0) { Py_DECREF(a); return NULL; }
        copy_swapped(b.buf, s, n, p->size, 1);
        PyBuffer_Release(&b);
    }
    return a;
}

static PyObject *
read_number_seq(Reader *r, const Plan *p)
{
    Py_ssize_t n;
    if (unlikely(reader_count(r, p, &n) < 0)) return NULL;
    if (n == 0) return PyList_New(0);
    Py_ssize_t size = p->size;
    if (unlikely(n > PY_SSIZE_T_MAX / size)) return fallback_null();
    Py_ssize_t pos = reader_take(r, size, n * size);
    if (unlikely(pos < 0)) return NULL;
    const unsigned char *s = r->buf + pos;
    int swap = r->swap;
    if (r->numeric_arrays) return number_array(p, s, n, swap);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    PyObject **items = ((PyListObject *)out)->ob_item;
    /* one loop per kind, so the element conversion is straight-line code */
#define NUMBER_LOOP(MAKE)                                               \
    for (Py_ssize_t i = 0; i < n; i++) {                                \
        const unsigned char *b = s + i * size;                          \
        PyObject *v = (MAKE);                                           \
        if (unlikely(v == NULL)) { Py_DECREF(out); return NULL; }       \
        items[i] = v;                                                   \
    }
    /* ... and one per byte order, the swap a constant in each (no test per item) */
#define NUMBER_LOOPS(MAKE)                                              \
    if (swap) { const int swap_ = 1; NUMBER_LOOP(MAKE) }                \
    else { const int swap_ = 0; NUMBER_LOOP(MAKE) }
    switch (p->kind) {
    case TK_SHORT: NUMBER_LOOPS(shared_int((int16_t)load16(b, swap_))) break;
    case TK_USHORT: NUMBER_LOOPS(shared_int(load16(b, swap_))) break;
    case TK_LONG: NUMBER_LOOPS(int_from_int32((int32_t)load32(b, swap_))) break;
    case TK_ULONG: NUMBER_LOOPS(int_from_unsigned(load32(b, swap_))) break;
    case TK_LONGLONG: NUMBER_LOOPS(int_from_signed((int64_t)load64(b, swap_))) break;
    case TK_ULONGLONG: NUMBER_LOOPS(int_from_unsigned(load64(b, swap_))) break;
    case TK_FLOAT: NUMBER_LOOPS(float_from_bits(load32(b, swap_))) break;
    case TK_DOUBLE: NUMBER_LOOPS(double_from_bits(load64(b, swap_))) break;
    }
#undef NUMBER_LOOPS
#undef NUMBER_LOOP
    return out;
}

/* -- 5.8 read_plan: a value by its node's op ------------------------------- */

static PyObject *
read_plan(Reader *r, const Plan *p)
{
    switch (p->op) {
    case OP_NUMBER:
        return read_number(r, p->kind, p->size);
    case OP_OCTET: {
        Py_ssize_t pos = reader_take(r, 1, 1);
        if (unlikely(pos < 0)) return NULL;
        return PyLong_FromLong(r->buf[pos]);
    }
    case OP_BOOLEAN: {
        Py_ssize_t pos = reader_take(r, 1, 1);
        if (unlikely(pos < 0)) return NULL;
        unsigned char b = r->buf[pos];
        if (unlikely(b > 1)) return fallback_null();
        return PyBool_FromLong(b);
    }
    case OP_CHAR: {
        Py_ssize_t pos = reader_take(r, 1, 1);
        if (unlikely(pos < 0)) return NULL;
        return PyUnicode_FromOrdinal(r->buf[pos]);   /* latin-1 */
    }
    case OP_STRING:
        return read_string(r, p);
    case OP_STRUCT: {
        if (Py_EnterRecursiveCall(" in pycdr decode")) return NULL;
        PyObject *v = read_struct(r, p);
        Py_LeaveRecursiveCall();
        return v;
    }
    case OP_SEQUENCE: {
        if (Py_EnterRecursiveCall(" in pycdr decode")) return NULL;
        PyObject *v = read_sequence(r, p);
        Py_LeaveRecursiveCall();
        return v;
    }
    case OP_NUMBER_SEQ:
        return read_number_seq(r, p);
    case OP_OCTET_SEQ: case OP_CHAR_SEQ:
        return read_raw_seq(r, p);
    case OP_BOOLEAN_SEQ:
        return read_boolean_seq(r, p);
    case OP_ENUM:
        return read_enum(r, p);
    case OP_UNION: {
        if (Py_EnterRecursiveCall(" in pycdr decode")) return NULL;
        PyObject *v = read_union(r, p);
        Py_LeaveRecursiveCall();
        return v;
    }
    case OP_RECURSIVE: {
        /* the Python path's depth limit (RecursionGuard.read) */
        if (unlikely(r->depth > max_depth)) return fallback_null();
        r->depth++;
        PyObject *v = read_plan(r, p->target);
        r->depth--;
        return v;
    }
    case OP_NULL:
        Py_RETURN_NONE;
    case OP_PYTHON:
    default:
        return read_python(r, p);
    }
}

/* ==========================================================================
 * 6. Writer: Python values to CDR bytes by their Plan
 * ==========================================================================
 *
 * Appends to a bytearray.  Its size runs ahead of the bytes
 * written (len) so that most writes need no resize; it is cut back to
 * len before Python sees it (per-node fallbacks, the end of the call).
 * encode() writes into a bytes object instead (is_bytes), resized in
 * place at the end: the result costs no copy of its own.  It turns into
 * a bytearray (one copy, cold) when a node is handed back to Python.
 */

/* -- 6.1 The writer: growth, the CDRWriter synced, a node handed back ------ */

typedef struct {
    PyObject *ba;          /* the CDRWriter's bytearray, or (is_bytes) our bytes */
    int is_bytes;          /* ba is a bytes object only this call holds */
    unsigned char *data;
    Py_ssize_t len, cap, origin;
    int little, swap;
    PyObject *writer;          /* the CDRWriter for per-node fallbacks, or NULL */
    const struct WriterArgs *make_writer;  /* how to make it when writer is NULL, or NULL */
    int owns_writer;           /* writer was made here (a new reference) */
} Writer;

/* What the public encode functions need to make a CDRWriter over the bytes
 * written so far, made only when a node is handed back to Python:
 * _writer_for(bytearray, little, version, offset, tcs_c, tcs_w, wstring_bom).
 * The objects are borrowed from the call. */
typedef struct WriterArgs {
    PyObject *little, *version, *offset, *tcs_c, *tcs_w, *wstring_bom;
} WriterArgs;

static NOINLINE int
writer_grow(Writer *w, Py_ssize_t need)
{
    Py_ssize_t want = w->len + need;
    if (want < w->cap * 2) want = w->cap * 2;
    if (want < 64) want = 64;
    if (w->is_bytes) {
        /* refcount 1, ours alone: _PyBytes_Resize may realloc it (on failure
         * it frees it and leaves NULL) */
        if (_PyBytes_Resize(&w->ba, want) < 0) return -1;
        w->data = (unsigned char *)PyBytes_AS_STRING(w->ba);
        w->cap = want;
        return 0;
    }
    if (PyByteArray_Resize(w->ba, want) < 0) return -1;
    w->data = (unsigned char *)PyByteArray_AS_STRING(w->ba);
    w->cap = want;
    return 0;
}

ALWAYS_INLINE int
writer_reserve(Writer *w, Py_ssize_t need)
{
    if (likely(w->len + need <= w->cap)) return 0;
    return writer_grow(w, need);
}

/* Pad to `align` with zeros and make room for `size` bytes; returns where the
 * value goes, or NULL. */
ALWAYS_INLINE unsigned char *
writer_take(Writer *w, Py_ssize_t align, Py_ssize_t size)
{
    Py_ssize_t pad = (w->origin - w->len) & (align - 1);
    if (unlikely(writer_reserve(w, pad + size) < 0)) return NULL;
    unsigned char *p = w->data + w->len;
    if (pad) { memset(p, 0, (size_t)pad); p += pad; }
    w->len += pad + size;
    return p;
}

static int
writer_sync_out(Writer *w)
{
    /* cut the bytearray back to what is written (no realloc when it stays
     * above half its allocation, which our doubling keeps) */
    if (PyByteArray_Resize(w->ba, w->len) < 0) return -1;
    w->cap = w->len;
    w->data = (unsigned char *)PyByteArray_AS_STRING(w->ba);
    return 0;
}

static int
writer_sync_in(Writer *w)
{
    w->len = PyByteArray_GET_SIZE(w->ba);
    /* take back the spare allocation Python's appends left (no realloc) */
    Py_ssize_t spare = ((PyByteArrayObject *)w->ba)->ob_alloc - 1 -
                       (((PyByteArrayObject *)w->ba)->ob_start -
                        ((PyByteArrayObject *)w->ba)->ob_bytes);
    if (spare > w->len && PyByteArray_Resize(w->ba, spare) < 0) return -1;
    w->cap = PyByteArray_GET_SIZE(w->ba);
    w->data = (unsigned char *)PyByteArray_AS_STRING(w->ba);
    return 0;
}

static int write_plan(Writer *w, const Plan *p, PyObject *v);

/* encode()'s bytes turned into the bytearray a CDRWriter needs. */
static NOINLINE int
writer_to_bytearray(Writer *w)
{
    PyObject *ba = PyByteArray_FromStringAndSize((const char *)w->data, w->len);
    if (ba == NULL) return -1;
    Py_SETREF(w->ba, ba);
    w->is_bytes = 0;
    w->cap = w->len;
    w->data = (unsigned char *)PyByteArray_AS_STRING(ba);
    return 0;
}

/* Hand one node back to Python: its write() appends to the same bytearray. */
static NOINLINE int
write_python(Writer *w, const Plan *p, PyObject *v)
{
    if (w->is_bytes && writer_to_bytearray(w) < 0) return -1;
    if (writer_sync_out(w) < 0) return -1;
    if (w->writer == NULL) {
        const WriterArgs *a = w->make_writer;
        if (a == NULL) return fallback_int();
        PyObject *argv[7] = {w->ba, a->little, a->version, a->offset, a->tcs_c, a->tcs_w,
                             a->wstring_bom};
        w->writer = PyObject_Vectorcall(writer_for_fn, argv, 7, NULL);
        if (w->writer == NULL) return -1;
        w->owns_writer = 1;
    }
    PyObject *res = PyObject_CallMethodObjArgs(p->node, s_write, w->writer, v, NULL);
    if (writer_sync_in(w) < 0) { Py_XDECREF(res); return -1; }
    if (res != NULL) {
        /* the node must have appended to the same bytearray */
        PyObject *buf = PyObject_GetAttr(w->writer, s_buf);
        int same = buf == w->ba;
        Py_XDECREF(buf);
        if (!same) { Py_DECREF(res); return fallback_int(); }
    }
    if (res == NULL) return -1;
    Py_DECREF(res);
    return 0;
}

/* -- 6.2 Counts and numbers ------------------------------------------------ */

ALWAYS_INLINE int
write_ulong(Writer *w, uint32_t n)
{
    unsigned char *b = writer_take(w, 4, 4);
    if (unlikely(b == NULL)) return -1;
    store32(b, n, w->swap);
    return 0;
}

/* A count, checked as the Python path checks it. */
ALWAYS_INLINE int
write_count(Writer *w, const Plan *p, Py_ssize_t n)
{
    if (p->is_array) return n == p->bound ? 0 : fallback_int();
    if (unlikely(p->bound && n > p->bound)) return fallback_int();
    if (unlikely(n > 0xFFFFFFFFLL)) return fallback_int();
    return write_ulong(w, (uint32_t)n);
}

/* The value of an exact int of up to 60 bits read straight from its digits: 1,
 * or 0 for a larger int (the caller then asks PyLong_AsLongLongAndOverflow).
 * The call, its type check and its digit loop were most of what encoding a
 * list of ints cost (13 ns an element, against 1.4 for floats).  The digits
 * are picked by selects, not branches: random data mispredicts branches on the
 * sign and digit count, and the second digit is never read unless it exists. */
ALWAYS_INLINE int
small_int_value(PyObject *x, long long *out)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Long_IsCompact((PyLongObject *)x)) return 0;
    *out = (long long)PyUnstable_Long_CompactValue((PyLongObject *)x);
    return 1;
#elif PYLONG_BITS_IN_DIGIT == 30
    static const digit no_digit = 0;
    Py_ssize_t size = Py_SIZE(x);
    Py_ssize_t n = size < 0 ? -size : size;
    if (unlikely(n > 2)) return 0;
    const digit *d = ((PyLongObject *)x)->ob_digit;
    const digit *low = n >= 1 ? d : &no_digit;
    const digit *high = n == 2 ? d + 1 : &no_digit;
    long long magnitude = (long long)*low | ((long long)*high << PyLong_SHIFT);
    *out = size < 0 ? -magnitude : magnitude;
    return 1;
#else
    (void)x; (void)out;
    return 0;
#endif
}

static int
write_number(Writer *w, const Plan *p, PyObject *v)
{
    int kind = p->kind;
    if (kind == TK_FLOAT || kind == TK_DOUBLE) {
        if (unlikely(!PyFloat_CheckExact(v))) return write_python(w, p, v);
        double x = PyFloat_AS_DOUBLE(v);
        unsigned char *b = writer_take(w, p->size, p->size);
        if (unlikely(b == NULL)) return -1;
        int rc = kind == TK_FLOAT ? PyFloat_Pack4(x, (char *)b, w->little)
                                  : PyFloat_Pack8(x, (char *)b, w->little);
        if (unlikely(rc < 0)) { PyErr_Clear(); return fallback_int(); }
        return 0;
    }
    if (unlikely(!PyLong_CheckExact(v))) return write_python(w, p, v);
    int overflow = 0;
    if (kind == TK_ULONGLONG) {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return fallback_int(); }
        unsigned char *b = writer_take(w, 8, 8);
        if (unlikely(b == NULL)) return -1;
        store64(b, (uint64_t)u, w->swap);
        return 0;
    }
    long long x;
    if (!small_int_value(v, &x)) {
        x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (unlikely(overflow || (x == -1 && PyErr_Occurred()))) {
            PyErr_Clear();
            return fallback_int();
        }
    }
    switch (kind) {
    case TK_SHORT: if (x < INT16_MIN || x > INT16_MAX) return fallback_int(); break;
    case TK_USHORT: if (x < 0 || x > UINT16_MAX) return fallback_int(); break;
    case TK_LONG: if (x < INT32_MIN || x > INT32_MAX) return fallback_int(); break;
    case TK_ULONG: if (x < 0 || x > (long long)UINT32_MAX) return fallback_int(); break;
    default: break;
    }
    unsigned char *b = writer_take(w, p->size, p->size);
    if (unlikely(b == NULL)) return -1;
    switch (p->size) {
    case 2: store16(b, (uint16_t)x, w->swap); break;
    case 4: store32(b, (uint32_t)x, w->swap); break;
    case 8: store64(b, (uint64_t)x, w->swap); break;
    }
    return 0;
}

/* -- 6.3 Strings and enums ------------------------------------------------- */

/* The latin-1 bytes of an exact str, or NULL (not latin-1: the Python path
 * decides, with a code set error). */
ALWAYS_INLINE const char *
latin1_of(PyObject *s, Py_ssize_t *n)
{
    if (unlikely(PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND)) return NULL;
    *n = PyUnicode_GET_LENGTH(s);
    return (const char *)PyUnicode_1BYTE_DATA(s);
}

static int
write_string(Writer *w, const Plan *p, PyObject *v)
{
    if (unlikely(!PyUnicode_CheckExact(v))) return write_python(w, p, v);
    Py_ssize_t n;
    const char *s = latin1_of(v, &n);
    if (unlikely(s == NULL)) return fallback_int();
    if (unlikely((p->bound && n > p->bound) || n >= 0xFFFFFFFFLL)) return fallback_int();
    if (unlikely(memchr(s, 0, (size_t)n) != NULL)) return fallback_int();
    unsigned char *b = writer_take(w, 4, 4 + n + 1);
    if (unlikely(b == NULL)) return -1;
    store32(b, (uint32_t)(n + 1), w->swap);
    memcpy(b + 4, s, (size_t)n);
    b[4 + n] = 0;
    return 0;
}

static int
write_enum(Writer *w, const Plan *p, PyObject *v)
{
    /* fast only for the enumerator objects themselves (what decode returns);
     * names, plain ints and foreign enumerators go through EnumNode.write */
    if (PyLong_Check(v)) {
        long i = PyLong_AsLong(v);
        if (i == -1 && PyErr_Occurred()) PyErr_Clear();
        else if (i >= 0 && i < p->count && PyTuple_GET_ITEM(p->items, i) == v)
            return write_ulong(w, (uint32_t)i);
    }
    return write_python(w, p, v);
}

/* -- 6.4 Structs and unions ------------------------------------------------ */

/* The value of a struct member for writing (new reference), or NULL. */
ALWAYS_INLINE PyObject *
member_value(const Plan *p, const Member *m, PyObject *v, int direct)
{
    if (direct) {
        PyObject *x = *(PyObject **)((char *)v + m->offset);
        if (unlikely(x == NULL)) return fallback_null();   /* unset: AttributeError */
        Py_INCREF(x);
        return x;
    }
    PyObject *x = PyObject_GetAttr(v, m->pyname);
    if (x == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
        return fallback_null();
    }
    return x;
}

/* Store x, a member value of the one-pass struct code, at b; 0 done, 1 when
 * x is anything but the plain value of its type (nothing set, no exception
 * raised: the member-by-member path then judges it, as it always has). */
ALWAYS_INLINE int
store_flat_member(unsigned char *b, const Plan *mp, PyObject *x, const Writer *w)
{
    switch (mp->op) {
    case OP_NUMBER: {
        int kind = mp->kind;
        if (kind == TK_DOUBLE || kind == TK_FLOAT) {
            if (unlikely(!PyFloat_CheckExact(x))) return 1;
            double d = PyFloat_AS_DOUBLE(x);
            if (kind == TK_DOUBLE) {
                uint64_t u;
                memcpy(&u, &d, 8);
                store64(b, u, w->swap);
            } else if (unlikely(PyFloat_Pack4(d, (char *)b, w->little) < 0)) {
                PyErr_Clear();      /* out of float range: an error, Python reports it */
                return 1;
            }
            return 0;
        }
        if (unlikely(!PyLong_CheckExact(x))) return 1;
        if (kind == TK_ULONGLONG) {
            unsigned long long u = PyLong_AsUnsignedLongLong(x);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
            store64(b, (uint64_t)u, w->swap);
            return 0;
        }
        long long y;
        if (!small_int_value(x, &y)) {
            int overflow;
            y = PyLong_AsLongLongAndOverflow(x, &overflow);
            if (unlikely(overflow || (y == -1 && PyErr_Occurred()))) { PyErr_Clear(); return 1; }
        }
        switch (kind) {
        case TK_SHORT: if (y < INT16_MIN || y > INT16_MAX) return 1;
            store16(b, (uint16_t)y, w->swap); break;
        case TK_USHORT: if (y < 0 || y > UINT16_MAX) return 1;
            store16(b, (uint16_t)y, w->swap); break;
        case TK_LONG: if (y < INT32_MIN || y > INT32_MAX) return 1;
            store32(b, (uint32_t)y, w->swap); break;
        case TK_ULONG: if (y < 0 || y > (long long)UINT32_MAX) return 1;
            store32(b, (uint32_t)y, w->swap); break;
        default: store64(b, (uint64_t)y, w->swap); break;   /* TK_LONGLONG */
        }
        return 0;
    }
    case OP_OCTET: {
        if (unlikely(!PyLong_CheckExact(x))) return 1;
        int overflow;
        long y = PyLong_AsLongAndOverflow(x, &overflow);
        if (unlikely(overflow || y < 0 || y > 255)) { PyErr_Clear(); return 1; }
        *b = (unsigned char)y;
        return 0;
    }
    case OP_BOOLEAN:
        if (x == Py_True) *b = 1;
        else if (x == Py_False) *b = 0;
        else return 1;
        return 0;
    case OP_CHAR:
        if (unlikely(!PyUnicode_CheckExact(x) || PyUnicode_GET_LENGTH(x) != 1 ||
                     PyUnicode_READ_CHAR(x, 0) > 255))
            return 1;
        *b = (unsigned char)PyUnicode_READ_CHAR(x, 0);
        return 0;
    case OP_OCTET_SEQ:
        if (unlikely(!PyBytes_CheckExact(x) || PyBytes_GET_SIZE(x) != mp->bound)) return 1;
        memcpy(b, PyBytes_AS_STRING(x), (size_t)mp->bound);
        return 0;
    default: {   /* OP_CHAR_SEQ */
        Py_ssize_t n;
        const char *s = PyUnicode_CheckExact(x) ? latin1_of(x, &n) : NULL;
        if (unlikely(s == NULL || n != mp->bound)) return 1;
        memcpy(b, s, (size_t)n);
        return 0;
    }
    }
}

/* A struct with a flat layout in one pass: 1 written, 0 when some member is
 * not a plain value of its type (nothing written: the caller goes member by
 * member), -1 on error. */
static int
write_flat_struct(Writer *w, const Plan *p, PyObject *v)
{
    Py_ssize_t phase = (w->len - w->origin) & 7;
    Py_ssize_t size = p->flat_size[phase];
    if (unlikely(writer_reserve(w, size) < 0)) return -1;
    unsigned char *base = w->data + w->len;     /* spare room until len moves */
    memset(base, 0, (size_t)size);              /* the padding */
    const Py_ssize_t *offsets = p->flat_offsets + phase * p->nmembers;
    for (Py_ssize_t i = 0; i < p->nmembers; i++) {
        const Member *m = &p->members[i];
        PyObject *x = *(PyObject **)((char *)v + m->offset);
        if (unlikely(x == NULL)) return 0;
        if (unlikely(store_flat_member(base + offsets[i], m->plan, x, w))) return 0;
    }
    w->len += size;
    return 1;
}

static int
write_struct(Writer *w, const Plan *p, PyObject *v)
{
    if (p->flat_offsets != NULL && Py_TYPE(v) == p->cls) {
        int rc = write_flat_struct(w, p, v);
        if (rc != 0) return rc < 0 ? -1 : 0;
    }
    if (PyDict_Check(v)) return write_python(w, p, v);   /* dict values: Python's own path */
    if (p->is_exception) {
        static const Plan unbounded_string = {.op = OP_STRING, .bound = 0};
        if (write_string(w, &unbounded_string, p->exc_id) < 0) return -1;
    }
    int direct = p->direct && Py_TYPE(v) == p->cls;
    for (Py_ssize_t i = 0; i < p->nmembers; i++) {
        const Member *m = &p->members[i];
        PyObject *x = member_value(p, m, v, direct);
        if (unlikely(x == NULL)) return -1;
        int rc = write_plan(w, m->plan, x);
        Py_DECREF(x);
        if (unlikely(rc < 0)) return -1;
    }
    return 0;
}

static int
write_union(Writer *w, const Plan *p, PyObject *v)
{
    PyObject *d, *value;
    if (PyObject_TypeCheck(v, (PyTypeObject *)union_base)) {
        d = PyObject_GetAttr(v, s_d);
        if (d == NULL) return fallback_int();
        value = PyObject_GetAttr(v, s_v);
        if (value == NULL) { Py_DECREF(d); return fallback_int(); }
    } else if (PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 2) {
        d = PyTuple_GET_ITEM(v, 0);
        value = PyTuple_GET_ITEM(v, 1);
        Py_INCREF(d);
        Py_INCREF(value);
    } else {
        return fallback_int();
    }
    int rc = -1;
    if (p->disc_is_enum) {
        /* d = items[disc.ordinal(d)], as UnionNode.write does */
        Py_ssize_t i = -1;
        if (PyLong_Check(d)) {
            i = PyLong_AsSsize_t(d);
            if (i == -1 && PyErr_Occurred()) PyErr_Clear();
            if (i < 0 || i >= p->disc->count || PyTuple_GET_ITEM(p->disc->items, i) != d) i = -1;
        }
        if (i < 0) {
            PyObject *disc_node = p->disc->node;
            PyObject *ord = PyObject_CallMethodOneArg(disc_node, s_ordinal, d);
            if (ord == NULL) goto done;
            i = PyLong_AsSsize_t(ord);
            Py_DECREF(ord);
            if (i < 0 || i >= p->disc->count) { fallback_int(); goto done; }
        }
        PyObject *item = PyTuple_GET_ITEM(p->disc->items, i);
        Py_INCREF(item);
        Py_SETREF(d, item);
    }
    if (write_plan(w, p->disc, d) < 0) goto done;
    const Plan *branch = NULL;
    PyObject *index = PyDict_GetItemWithError(p->label_index, d);
    if (index != NULL) branch = p->branches[PyLong_AsSsize_t(index)].plan;
    else if (PyErr_Occurred()) { PyErr_Clear(); fallback_int(); goto done; }
    else if (p->has_default) branch = p->default_plan;
    if (branch == NULL) {
        rc = value == Py_None ? 0 : fallback_int();
        goto done;
    }
    rc = write_plan(w, branch, value);
done:
    Py_DECREF(d);
    Py_DECREF(value);
    return rc;
}

/* -- 6.5 Sequences and number arrays --------------------------------------- */

static int
write_sequence(Writer *w, const Plan *p, PyObject *v)
{
    if (!PyList_Check(v) && !PyTuple_Check(v)) return fallback_int();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (write_count(w, p, n) < 0) return -1;
    int flat = p->elem->op == OP_STRUCT && p->elem->flat_offsets != NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* re-checked each time: a Python fallback node could change the list */
        if (unlikely(i >= PySequence_Fast_GET_SIZE(v))) return fallback_int();
        PyObject *x = PySequence_Fast_GET_ITEM(v, i);
        if (flat && Py_TYPE(x) == p->elem->cls) {
            /* sequence<flat struct>: no dispatch or recursion guard (and no
             * Python code runs in between, so x stays alive) */
            int rc = write_flat_struct(w, p->elem, x);
            if (rc > 0) continue;
            if (rc < 0) return -1;
        }
        Py_INCREF(x);
        int rc = write_plan(w, p->elem, x);
        Py_DECREF(x);
        if (unlikely(rc < 0)) return -1;
    }
    return 0;
}

static int
write_octet_seq(Writer *w, const Plan *p, PyObject *v)
{
    const char *s;
    Py_ssize_t n;
    if (PyBytes_CheckExact(v)) { s = PyBytes_AS_STRING(v); n = PyBytes_GET_SIZE(v); }
    else if (PyByteArray_CheckExact(v) && v != w->ba) {
        s = PyByteArray_AS_STRING(v); n = PyByteArray_GET_SIZE(v);
    }
    else return write_python(w, p, v);
    if (write_count(w, p, n) < 0) return -1;
    unsigned char *b = writer_take(w, 1, n);    /* may move a bytearray's data? no: v != w->ba */
    if (unlikely(b == NULL)) return -1;
    memcpy(b, s, (size_t)n);
    return 0;
}

static int
write_char_seq(Writer *w, const Plan *p, PyObject *v)
{
    if (!PyUnicode_CheckExact(v)) return write_python(w, p, v);
    Py_ssize_t n;
    const char *s = latin1_of(v, &n);
    if (s == NULL) return fallback_int();
    if (write_count(w, p, n) < 0) return -1;
    unsigned char *b = writer_take(w, 1, n);
    if (unlikely(b == NULL)) return -1;
    memcpy(b, s, (size_t)n);
    return 0;
}

static int
write_boolean_seq(Writer *w, const Plan *p, PyObject *v)
{
    if (!PyList_Check(v) && !PyTuple_Check(v)) return fallback_int();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (write_count(w, p, n) < 0) return -1;
    unsigned char *b = writer_take(w, 1, n);
    if (unlikely(b == NULL)) return -1;
    PyObject **items = PySequence_Fast_ITEMS(v);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = items[i];
        if (x == Py_True) b[i] = 1;
        else if (x == Py_False) b[i] = 0;
        else if (PyLong_CheckExact(x)) {
            /* BooleanSeqNode.write: type(b) is int and b in (0, 1) */
            int overflow;
            long u = PyLong_AsLongAndOverflow(x, &overflow);
            if (overflow || (u != 0 && u != 1)) return fallback_int();
            b[i] = (unsigned char)u;
        }
        else return fallback_int();
    }
    return 0;
}

/* Store element i of a list of Python numbers at b (CDR byte order), as
 * array.array(acode, list) would convert it; -1 (Fallback) for anything else. */
ALWAYS_INLINE int
store_number_element(const Plan *p, unsigned char *b, PyObject *x, int swap)
{
    int kind = p->kind;
    if (kind == TK_DOUBLE || kind == TK_FLOAT) {
        double d;
        if (likely(PyFloat_CheckExact(x))) d = PyFloat_AS_DOUBLE(x);
        else if (PyLong_CheckExact(x)) {
            d = PyLong_AsDouble(x);
            if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return fallback_int(); }
        }
        else return fallback_int();
        if (kind == TK_DOUBLE) {
            uint64_t u; memcpy(&u, &d, 8); store64(b, u, swap);
        } else if (PyFloat_Pack4(d, (char *)b, swap ? !NATIVE_LITTLE : NATIVE_LITTLE) < 0) {
            /* as struct.pack('f'): out of range is an error (Python reports it) */
            PyErr_Clear();
            return fallback_int();
        }
        return 0;
    }
    if (unlikely(!PyLong_CheckExact(x))) return fallback_int();
    if (kind == TK_ULONGLONG) {
        unsigned long long u = PyLong_AsUnsignedLongLong(x);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return fallback_int(); }
        store64(b, (uint64_t)u, swap);
        return 0;
    }
    long long y;
    if (!small_int_value(x, &y)) {
        int overflow;
        y = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (unlikely(overflow || (y == -1 && PyErr_Occurred()))) { PyErr_Clear(); return fallback_int(); }
    }
    switch (kind) {
    case TK_SHORT: if (y < INT16_MIN || y > INT16_MAX) return fallback_int();
        store16(b, (uint16_t)y, swap); break;
    case TK_USHORT: if (y < 0 || y > UINT16_MAX) return fallback_int();
        store16(b, (uint16_t)y, swap); break;
    case TK_LONG: if (y < INT32_MIN || y > INT32_MAX) return fallback_int();
        store32(b, (uint32_t)y, swap); break;
    case TK_ULONG: if (y < 0 || y > (long long)UINT32_MAX) return fallback_int();
        store32(b, (uint32_t)y, swap); break;
    case TK_LONGLONG: store64(b, (uint64_t)y, swap); break;
    }
    return 0;
}

static int
write_number_array(Writer *w, const Plan *p, PyObject *v)
{
    /* NumberSeqNode.write takes an array.array of its own typecode as is */
    PyObject *code = PyObject_GetAttr(v, s_typecode);
    if (code == NULL) return -1;
    int same = PyUnicode_Check(code) && PyUnicode_GET_LENGTH(code) == 1 &&
               PyUnicode_READ_CHAR(code, 0) == (Py_UCS4)p->acode;
    Py_DECREF(code);
    if (!same) return write_python(w, p, v);
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0) return -1;
    Py_ssize_t n = view.len / p->size;
    int rc = write_count(w, p, n);
    if (rc == 0 && n) {
        unsigned char *b = writer_take(w, p->size, n * p->size);
        if (b == NULL) rc = -1;
        else copy_swapped(b, view.buf, n, p->size, w->little != NATIVE_LITTLE);
    }
    PyBuffer_Release(&view);
    return rc;
}

static int
write_number_seq(Writer *w, const Plan *p, PyObject *v)
{
    if (!PyList_Check(v) && !PyTuple_Check(v)) {
        if (PyObject_TypeCheck(v, (PyTypeObject *)array_type)) return write_number_array(w, p, v);
        return fallback_int();
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (write_count(w, p, n) < 0) return -1;
    if (n == 0) return 0;
    Py_ssize_t size = p->size;
    unsigned char *b = writer_take(w, size, n * size);
    if (unlikely(b == NULL)) return -1;
    PyObject **items = PySequence_Fast_ITEMS(v);
    int swap = w->swap;
    if (p->kind == TK_DOUBLE) {
        /* floats get a loop of their own: nothing else in it (ints still go
         * through store_number_element) */
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = items[i];
            if (likely(PyFloat_CheckExact(x))) {
                double d = PyFloat_AS_DOUBLE(x);
                uint64_t u;
                memcpy(&u, &d, 8);
                store64(b + i * 8, u, swap);
            }
            else if (unlikely(store_number_element(p, b + i * 8, x, swap) < 0)) return -1;
        }
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (unlikely(store_number_element(p, b + i * size, items[i], swap) < 0)) return -1;
    return 0;
}

/* -- 6.6 write_plan: a value by its node's op ------------------------------ */

static int
write_plan(Writer *w, const Plan *p, PyObject *v)
{
    switch (p->op) {
    case OP_NUMBER:
        return write_number(w, p, v);
    case OP_OCTET: {
        if (unlikely(!PyLong_CheckExact(v))) return write_python(w, p, v);
        long x = PyLong_AsLong(v);
        if (unlikely(x < 0 || x > 255)) { PyErr_Clear(); return write_python(w, p, v); }
        unsigned char *b = writer_take(w, 1, 1);
        if (unlikely(b == NULL)) return -1;
        *b = (unsigned char)x;
        return 0;
    }
    case OP_BOOLEAN: {
        if (unlikely(v != Py_True && v != Py_False)) return write_python(w, p, v);
        unsigned char *b = writer_take(w, 1, 1);
        if (unlikely(b == NULL)) return -1;
        *b = v == Py_True;
        return 0;
    }
    case OP_CHAR: {
        if (unlikely(!PyUnicode_CheckExact(v) || PyUnicode_GET_LENGTH(v) != 1 ||
                     PyUnicode_READ_CHAR(v, 0) > 255))
            return write_python(w, p, v);
        unsigned char *b = writer_take(w, 1, 1);
        if (unlikely(b == NULL)) return -1;
        *b = (unsigned char)PyUnicode_READ_CHAR(v, 0);
        return 0;
    }
    case OP_STRING:
        return write_string(w, p, v);
    case OP_STRUCT: {
        if (Py_EnterRecursiveCall(" in pycdr encode")) return -1;
        int rc = write_struct(w, p, v);
        Py_LeaveRecursiveCall();
        return rc;
    }
    case OP_SEQUENCE: {
        if (Py_EnterRecursiveCall(" in pycdr encode")) return -1;
        int rc = write_sequence(w, p, v);
        Py_LeaveRecursiveCall();
        return rc;
    }
    case OP_NUMBER_SEQ:
        return write_number_seq(w, p, v);
    case OP_OCTET_SEQ:
        return write_octet_seq(w, p, v);
    case OP_CHAR_SEQ:
        return write_char_seq(w, p, v);
    case OP_BOOLEAN_SEQ:
        return write_boolean_seq(w, p, v);
    case OP_ENUM:
        return write_enum(w, p, v);
    case OP_UNION: {
        if (Py_EnterRecursiveCall(" in pycdr encode")) return -1;
        int rc = write_union(w, p, v);
        Py_LeaveRecursiveCall();
        return rc;
    }
    case OP_RECURSIVE:
        return write_plan(w, p->target, v);
    case OP_NULL:
        return v == Py_None ? 0 : fallback_int();
    case OP_PYTHON:
    default:
        return write_python(w, p, v);
    }
}

/* ==========================================================================
 * 7. Module functions: read(), write(), encode() of one plan node
 * ========================================================================== */

/* A RecursionError from our own guards means "too deep for C": let the
 * Python path decide (it has its own limit and error). */
static void
recursion_to_fallback(void)
{
    if (PyErr_ExceptionMatches(PyExc_RecursionError)) {
        PyErr_Clear();
        PyErr_SetNone(Fallback);
    }
}

/* Run the plan over a reader set up by the caller; the reader's own reference
 * is released.  NULL (the error set) or the value. */
static PyObject *
read_top(Reader *r, const Plan *p)
{
    PyObject *value = read_plan(r, p);
    if (value == NULL) recursion_to_fallback();
    Py_CLEAR(r->reader);
    return value;
}

PyDoc_STRVAR(read_doc,
"read(node, data, pos, end, origin, little, numeric_arrays, reader)\n--\n\n"
"Decode one value with the plan `node` from data[pos:end] (alignment counted from\n"
"`origin`). `reader` is the CDRReader over the same buffer used when a node is\n"
"handed back to Python (the read starts at its depth), or None: then a node\n"
"handed back raises Fallback.  Returns (value, new pos).  Raises Fallback (or a\n"
"CDRError from a Python node) when the Python path must run instead.");

static PyObject *
speedups_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "read() takes 8 arguments");
        return NULL;
    }
    Plan *p = plan_of(args[0]);
    if (p == NULL) return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    Py_ssize_t end = PyLong_AsSsize_t(args[3]);
    Py_ssize_t origin = PyLong_AsSsize_t(args[4]);
    int little = PyObject_IsTrue(args[5]);
    int numeric_arrays = PyObject_IsTrue(args[6]);
    if (PyErr_Occurred()) return NULL;
    long depth = 0;
    PyObject *reader = args[7] == Py_None ? NULL : args[7];
    if (reader != NULL) {
        /* a stream read starts at the reader's depth */
        PyObject *d = PyObject_GetAttr(reader, s_depth);
        if (d == NULL) return NULL;
        depth = PyLong_AsLong(d);
        Py_DECREF(d);
        if (depth == -1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return fallback_null();
    }
    if (pos < 0 || end > view.len || pos > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "pos/end outside the buffer");
        return NULL;
    }
    Py_XINCREF(reader);
    Reader r = {
        .buf = view.buf, .pos = pos, .end = end, .origin = origin,
        .little = little, .swap = little != NATIVE_LITTLE,
        .numeric_arrays = numeric_arrays, .depth = depth,
        .reader = reader, .make_reader = NULL,
    };
    PyObject *value = read_top(&r, p);
    PyBuffer_Release(&view);
    if (value == NULL) return NULL;
    return Py_BuildValue("(Nn)", value, r.pos);
}

PyDoc_STRVAR(write_doc,
"write(node, writer, value)\n--\n\n"
"Encode `value` with the plan `node`, appending to the CDRWriter `writer`\n"
"(its bytearray, origin and byte order). On an exception the bytearray is cut\n"
"back to its length at the call; Fallback means the Python path must run.");

static PyObject *
speedups_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "write() takes 3 arguments");
        return NULL;
    }
    Plan *p = plan_of(args[0]);
    if (p == NULL) return NULL;
    PyObject *writer = args[1];
    PyObject *ba = PyObject_GetAttr(writer, s_buf);
    if (ba == NULL) return NULL;
    if (!PyByteArray_CheckExact(ba)) { Py_DECREF(ba); return fallback_null(); }
    PyObject *o = PyObject_GetAttr(writer, s_origin);
    if (o == NULL) { Py_DECREF(ba); return NULL; }
    Py_ssize_t origin = PyLong_AsSsize_t(o);
    Py_DECREF(o);
    PyObject *l = PyObject_GetAttr(writer, s_little);
    if (l == NULL) { Py_DECREF(ba); return NULL; }
    int little = PyObject_IsTrue(l);
    Py_DECREF(l);
    if (PyErr_Occurred()) { Py_DECREF(ba); return NULL; }
    Py_ssize_t start = PyByteArray_GET_SIZE(ba);
    Writer w = {
        .ba = ba, .data = (unsigned char *)PyByteArray_AS_STRING(ba),
        .len = start, .cap = start, .origin = origin,
        .little = little, .swap = little != NATIVE_LITTLE, .writer = writer,
        .make_writer = NULL, .owns_writer = 0,
    };
    int rc = write_plan(&w, p, args[2]);
    if (rc == 0) rc = writer_sync_out(&w);
    if (rc < 0) {
        recursion_to_fallback();
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        if (PyByteArray_Check(ba) && PyByteArray_GET_SIZE(ba) > start &&
                PyByteArray_Resize(ba, start) < 0)
            PyErr_Clear();
        PyErr_Restore(exc_type, exc_value, exc_tb);
        Py_DECREF(ba);
        return NULL;
    }
    Py_DECREF(ba);
    Py_RETURN_NONE;
}

/* The CDR bytes of `value`, written into a bytes object of our own.
 * order_octet >= 0: an encapsulation, that octet first.  NULL: the error set. */
static PyObject *
encode_top(const Plan *p, PyObject *value, Py_ssize_t origin, int little, int order_octet,
           const WriterArgs *make_writer)
{
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, 64);
    if (bytes == NULL) return NULL;
    Writer w = {
        .ba = bytes, .is_bytes = 1, .data = (unsigned char *)PyBytes_AS_STRING(bytes),
        .len = 0, .cap = 64, .origin = origin,
        .little = little, .swap = little != NATIVE_LITTLE, .writer = NULL,
        .make_writer = make_writer, .owns_writer = 0,
    };
    if (order_octet >= 0) w.data[w.len++] = (unsigned char)order_octet;
    PyObject *out = NULL;
    if (write_plan(&w, p, value) == 0) {
        if (w.is_bytes) {
            /* cut to size in place: the bytes we wrote are the result */
            if (_PyBytes_Resize(&w.ba, w.len) == 0) out = w.ba;
            w.ba = NULL;
        } else {
            out = PyBytes_FromStringAndSize((const char *)w.data, w.len);
        }
    } else {
        recursion_to_fallback();
    }
    if (w.owns_writer) Py_DECREF(w.writer);
    Py_XDECREF(w.ba);
    return out;
}

PyDoc_STRVAR(encode_doc,
"encode(node, value, origin, little)\n--\n\n"
"The CDR bytes of `value` encoded with the plan `node`, the first byte at\n"
"`origin` relative to the alignment origin (0 or -offset).  Nothing is handed\n"
"back to Python: Fallback means the Python path must run.");

static PyObject *
speedups_encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "encode() takes 4 arguments");
        return NULL;
    }
    Plan *p = plan_of(args[0]);
    if (p == NULL) return NULL;
    Py_ssize_t origin = PyLong_AsSsize_t(args[2]);
    if (origin == -1 && PyErr_Occurred()) return NULL;
    int little = PyObject_IsTrue(args[3]);
    if (little < 0) return NULL;
    return encode_top(p, args[1], origin, little, -1, NULL);
}

/* ==========================================================================
 * 8. Public entry points: marshal's encode and decode as C callables
 * ==========================================================================
 *
 * The public entry points: pycdr.codec.marshal.encode, decode,
 * encode_encapsulation and decode_encapsulation as C callables
 * (vectorcall) with the pure-Python functions' signatures.  A call the
 * C code takes (the usual keywords, ISO-8859-1 chars, not lenient, data
 * bytes or bytearray) runs here without any Python frame; every other
 * call, and every call the C run hands back (Fallback, a CDRError from a
 * node handed to Python, trailing bytes), is passed unchanged to the
 * pure-Python function, which gives the exact result or error.
 */

typedef enum {
    ENTRY_ENCODE, ENTRY_DECODE, ENTRY_ENCODE_ENCAPSULATION, ENTRY_DECODE_ENCAPSULATION
} EntryKind;

static const char *const entry_names[] = {
    "encode", "decode", "encode_encapsulation", "decode_encapsulation"};

enum {
    KW_LITTLE, KW_VERSION, KW_OFFSET, KW_TCS_C, KW_TCS_W, KW_LENIENT, KW_WARNINGS,
    KW_NUMERIC_ARRAYS, KW_ALLOW_TRAILING, KW_WSTRING_BOM, KW_COUNT
};
static const char *const keyword_texts[KW_COUNT] = {
    "little", "version", "offset", "tcs_c", "tcs_w", "lenient", "warnings",
    "numeric_arrays", "allow_trailing", "wstring_bom"};
static PyObject *keyword_names[KW_COUNT];   /* interned */

#define KW(k) (1u << (k))
/* The keywords of each pure-Python function (pycdr/codec/marshal.py); any other
 * name goes to it, which raises its TypeError. */
static const unsigned entry_keywords[] = {
    [ENTRY_ENCODE] = KW(KW_LITTLE) | KW(KW_VERSION) | KW(KW_OFFSET) | KW(KW_TCS_C) |
                     KW(KW_TCS_W) | KW(KW_WSTRING_BOM),
    [ENTRY_DECODE] = KW(KW_LITTLE) | KW(KW_VERSION) | KW(KW_OFFSET) | KW(KW_TCS_C) |
                     KW(KW_TCS_W) | KW(KW_LENIENT) | KW(KW_WARNINGS) |
                     KW(KW_NUMERIC_ARRAYS) | KW(KW_ALLOW_TRAILING),
    [ENTRY_ENCODE_ENCAPSULATION] = KW(KW_LITTLE) | KW(KW_VERSION) | KW(KW_TCS_C) |
                                   KW(KW_TCS_W),
    [ENTRY_DECODE_ENCAPSULATION] = KW(KW_VERSION) | KW(KW_TCS_C) | KW(KW_TCS_W) |
                                   KW(KW_LENIENT) | KW(KW_WARNINGS) |
                                   KW(KW_NUMERIC_ARRAYS) | KW(KW_ALLOW_TRAILING),
};
#undef KW

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict;        /* __wrapped__, __doc__, __name__... (functools.update_wrapper) */
    PyObject *py_fn;       /* the pure-Python function */
    EntryKind kind;
} Entry;

/* Sort the call's keyword arguments into kw[] (borrowed; NULL: not given).
 * 0: a name this entry does not take, or not exactly two positionals: the
 * pure-Python function must judge the call. */
static int
sort_arguments(const Entry *e, PyObject *const *args, size_t nargsf, PyObject *kwnames,
               PyObject **kw)
{
    if (PyVectorcall_NARGS(nargsf) != 2) return 0;
    if (kwnames == NULL) return 1;
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        int k = 0;
        while (k < KW_COUNT && name != keyword_names[k]) k++;   /* interned: usual case */
        if (k == KW_COUNT)
            for (k = 0; k < KW_COUNT; k++)
                if (PyUnicode_Compare(name, keyword_names[k]) == 0) break;
        if (k == KW_COUNT || !(entry_keywords[e->kind] & (1u << k))) return 0;
        kw[k] = args[2 + i];
    }
    return 1;
}

/* The truth of an optional flag (absent: false); -1 when asking fails (the
 * pure-Python function then meets the same failure). */
static int
flag_value(PyObject *v)
{
    if (v == NULL || v == Py_False) return 0;
    if (v == Py_True) return 1;
    int t = PyObject_IsTrue(v);
    if (t < 0) PyErr_Clear();
    return t;
}

/* tcs_c absent or an int equal to ISO-8859-1: the only char code set run here. */
static int
tcs_c_is_latin1(PyObject *v)
{
    if (v == NULL) return default_tcs_c_is_latin1;
    if (!PyLong_CheckExact(v)) return 0;
    long code = PyLong_AsLong(v);
    if (code == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    return code == iso_8859_1;
}

/* `offset` absent or an int; -1: anything else (the pure-Python function judges). */
static int
offset_value(PyObject *v, Py_ssize_t *out)
{
    *out = 0;
    if (v == NULL) return 0;
    if (!PyLong_CheckExact(v)) return -1;
    *out = PyLong_AsSsize_t(v);
    if (*out == -1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
    return *out < -PY_SSIZE_T_MAX ? -1 : 0;    /* -offset must not overflow */
}

/* The plan node of a TypeCode: its cached plan read straight from the slot
 * when it is a plain TypeCode, else pycdr.codec.plan.plan_for(tc).  New reference. */
static PyObject *
plan_node_of(PyObject *tc)
{
    if (Py_TYPE(tc) == typecode_type && plans_offset) {
        PyObject *node = *(PyObject **)((char *)tc + plans_offset);
        if (node != NULL && node != Py_None) {
            Py_INCREF(node);
            return node;
        }
    }
    return PyObject_CallOneArg(plan_for_fn, tc);
}

#define OPT(v, dflt) ((v) != NULL ? (v) : (dflt))

/* decode / decode_encapsulation.  1: done (*out set); 0: the pure-Python
 * function must run the call; -1: an error (Fallback or CDRError: hand back). */
static int
entry_decode(const Entry *e, PyObject *const *args, PyObject **kw, PyObject **out)
{
    PyObject *tc = args[0], *data = args[1];
    if (!PyBytes_CheckExact(data) && !PyByteArray_CheckExact(data)) return 0;
    if (flag_value(kw[KW_LENIENT]) != 0 || !tcs_c_is_latin1(kw[KW_TCS_C])) return 0;
    int numeric_arrays = flag_value(kw[KW_NUMERIC_ARRAYS]);
    int allow_trailing = flag_value(kw[KW_ALLOW_TRAILING]);
    if (numeric_arrays < 0 || allow_trailing < 0) return 0;
    /* a bytearray cannot be resized while we hold its buffer */
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return -1;
    const unsigned char *buf = view.buf;
    ReaderArgs make = {
        .data = data, .version = OPT(kw[KW_VERSION], default_version),
        .tcs_w = OPT(kw[KW_TCS_W], default_tcs_w),
        .numeric_arrays = OPT(kw[KW_NUMERIC_ARRAYS], Py_False),
    };
    int little;
    if (e->kind == ENTRY_DECODE) {
        Py_ssize_t offset;
        little = flag_value(kw[KW_LITTLE]);
        if (little < 0 || offset_value(kw[KW_OFFSET], &offset) < 0) goto not_taken;
        make.little = OPT(kw[KW_LITTLE], Py_False);
        make.start = 0;
        make.origin = -offset;
    } else {
        /* the byte-order octet: anything but 0 or 1 is the Python path's error */
        if (view.len == 0 || buf[0] > 1) goto not_taken;
        little = buf[0];
        make.little = little ? Py_True : Py_False;
        make.start = 1;
        make.origin = 0;
    }
    PyObject *node = plan_node_of(tc);
    if (node == NULL) { PyBuffer_Release(&view); return -1; }
    Plan *p = plan_of(node);
    PyObject *value = NULL;
    Reader r = {
        .buf = buf, .pos = make.start, .end = view.len, .origin = make.origin,
        .little = little, .swap = little != NATIVE_LITTLE,
        .numeric_arrays = numeric_arrays, .depth = 0,
        .reader = NULL, .make_reader = &make,
    };
    if (p != NULL) value = read_top(&r, p);
    Py_DECREF(node);
    PyBuffer_Release(&view);
    if (value == NULL) return -1;
    if (r.pos != r.end && !allow_trailing) {
        Py_DECREF(value);      /* trailing bytes: the Python path reports them */
        return 0;
    }
    *out = value;
    return 1;
not_taken:
    PyBuffer_Release(&view);
    return 0;
}

/* encode / encode_encapsulation; returns as entry_decode. */
static int
entry_encode(const Entry *e, PyObject *const *args, PyObject **kw, PyObject **out)
{
    if (!tcs_c_is_latin1(kw[KW_TCS_C])) return 0;
    int little = flag_value(kw[KW_LITTLE]);
    Py_ssize_t offset;
    if (little < 0 || offset_value(kw[KW_OFFSET], &offset) < 0) return 0;
    static PyObject *zero;     /* encode_encapsulation's writer starts at offset 0 */
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL) return -1;
    WriterArgs make = {
        .little = OPT(kw[KW_LITTLE], Py_False), .version = OPT(kw[KW_VERSION], default_version),
        .offset = OPT(kw[KW_OFFSET], zero), .tcs_c = OPT(kw[KW_TCS_C], default_tcs_c),
        .tcs_w = OPT(kw[KW_TCS_W], default_tcs_w),
        .wstring_bom = OPT(kw[KW_WSTRING_BOM], Py_False),
    };
    PyObject *node = plan_node_of(args[0]);
    if (node == NULL) return -1;
    Plan *p = plan_of(node);
    if (p != NULL) {
        if (e->kind == ENTRY_ENCODE)
            *out = encode_top(p, args[1], -offset, little, -1, &make);
        else    /* the byte-order octet, then the value aligned from it */
            *out = encode_top(p, args[1], 0, little, little, &make);
    }
    Py_DECREF(node);
    return p != NULL && *out != NULL ? 1 : -1;
}

#undef OPT

static PyObject *
entry_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Entry *e = (Entry *)self;
    /* _cmarshal.enabled: tests and benchmarks switch the C path off with it */
    PyObject *enabled = PyDict_GetItemWithError(cmarshal_globals, s_enabled);
    int on = enabled == Py_True || (enabled != NULL && PyObject_IsTrue(enabled) > 0);
    if (PyErr_Occurred()) PyErr_Clear();       /* the flag unreadable: Python path */
    PyObject *kw[KW_COUNT] = {NULL};
    if (on && sort_arguments(e, args, nargsf, kwnames, kw)) {
        PyObject *out = NULL;
        int rc = (e->kind == ENTRY_DECODE || e->kind == ENTRY_DECODE_ENCAPSULATION)
                 ? entry_decode(e, args, kw, &out) : entry_encode(e, args, kw, &out);
        if (rc > 0) return out;
        if (rc < 0) {
            /* Fallback, or a CDRError from a node run by Python: the pure-Python
             * function re-runs the call and gives the exact error */
            if (!PyErr_ExceptionMatches(Fallback) && !PyErr_ExceptionMatches(cdr_error))
                return NULL;
            PyErr_Clear();
        }
    }
    return PyObject_Vectorcall(e->py_fn, args, nargsf, kwnames);
}

static int
entry_traverse(Entry *e, visitproc visit, void *arg)
{
    Py_VISIT(e->dict);
    Py_VISIT(e->py_fn);
    return 0;
}

static int
entry_clear(Entry *e)
{
    Py_CLEAR(e->dict);
    Py_CLEAR(e->py_fn);
    return 0;
}

static void
entry_dealloc(Entry *e)
{
    PyObject_GC_UnTrack(e);
    entry_clear(e);
    PyObject_GC_Del(e);
}

static PyObject *
entry_repr(Entry *e)
{
    return PyUnicode_FromFormat("<C-backed pycdr.codec.marshal.%s>", entry_names[e->kind]);
}

/* As a builtin function: not bound when stored on a class.  (It also makes
 * pydoc and inspect.isroutine treat it as a function.) */
static PyObject *
entry_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    Py_INCREF(self);
    return self;
}

static PyGetSetDef entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject Entry_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pycdr.codec._speedups.Entry",
    .tp_doc = "A pycdr.codec.marshal entry point run in C; __wrapped__ is the pure-Python function.",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dictoffset = offsetof(Entry, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_getset = entry_getset,
    .tp_descr_get = entry_descr_get,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_repr = (reprfunc)entry_repr,
};

PyDoc_STRVAR(entry_doc,
"entry(name, py_fn)\n--\n\n"
"The C-backed version of pycdr.codec.marshal's `name` (encode, decode,\n"
"encode_encapsulation or decode_encapsulation): same signature as `py_fn`, the\n"
"pure-Python function, to which it passes every call it does not take.\n"
"configure() must have been called.");

static PyObject *
speedups_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "entry(name, py_fn)");
        return NULL;
    }
    if (cmarshal_globals == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "entry() before configure()");
        return NULL;
    }
    int kind = 0;
    while (kind < 4 && PyUnicode_CompareWithASCIIString(args[0], entry_names[kind]) != 0)
        kind++;
    if (kind == 4) {
        PyErr_Format(PyExc_ValueError, "no C entry point %R", args[0]);
        return NULL;
    }
    Entry *e = PyObject_GC_New(Entry, &Entry_Type);
    if (e == NULL) return NULL;
    e->vectorcall = entry_vectorcall;
    e->dict = NULL;
    e->py_fn = Py_NewRef(args[1]);
    e->kind = (EntryKind)kind;
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

PyDoc_STRVAR(configure_doc,
"configure(cmarshal_globals, plan_for, TypeCode, CDRError, reader_for, writer_for,\n"
"          iso_8859_1, default_version, default_tcs_c, default_tcs_w)\n--\n\n"
"What the entry points need from pycdr (pycdr/codec/_cmarshal.py calls it once):\n"
"the namespace holding the `enabled` flag, the plan compiler, the TypeCode\n"
"class, the error class handed back, the reader/writer factories for nodes\n"
"handed back to Python, and the defaults of the pure-Python functions.");

static PyObject *
speedups_configure(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 || !PyDict_Check(args[0]) || !PyType_Check(args[2]) ||
            !PyType_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "configure() takes 10 arguments (see its doc)");
        return NULL;
    }
    long iso = PyLong_AsLong(args[6]);
    if (iso == -1 && PyErr_Occurred()) return NULL;
    long dflt = PyLong_AsLong(args[8]);
    if (dflt == -1 && PyErr_Occurred()) return NULL;
    Py_XSETREF(cmarshal_globals, Py_NewRef(args[0]));
    Py_XSETREF(plan_for_fn, Py_NewRef(args[1]));
    Py_XSETREF(typecode_type, (PyTypeObject *)Py_NewRef(args[2]));
    plans_offset = slot_offset(typecode_type, s_plans);
    Py_XSETREF(cdr_error, Py_NewRef(args[3]));
    Py_XSETREF(reader_for_fn, Py_NewRef(args[4]));
    Py_XSETREF(writer_for_fn, Py_NewRef(args[5]));
    iso_8859_1 = iso;
    default_tcs_c_is_latin1 = dflt == iso;
    Py_XSETREF(default_version, Py_NewRef(args[7]));
    Py_XSETREF(default_tcs_c, Py_NewRef(args[8]));
    Py_XSETREF(default_tcs_w, Py_NewRef(args[9]));
    Py_RETURN_NONE;
}

PyDoc_STRVAR(touches_context_doc,
"touches_context(node)\n--\n\n"
"Whether the plan holds nodes that keep state in a stream's context (any, value\n"
"types): a stream read/write of such a plan cannot be safely re-run after a\n"
"fallback, so the wrappers give it to Python from the start.");

static PyObject *
speedups_touches_context(PyObject *self, PyObject *node)
{
    Plan *p = plan_of(node);
    if (p == NULL) return NULL;
    return PyBool_FromLong(p->touches_context);
}

/* ==========================================================================
 * 9. GIOP 1.2/1.3 messages: the ORB's fast decode (decode_common_12)
 * ========================================================================== */

/* decode_common_12(data, header, body_view) is pycdr/giop/messages/fast12.py's
 * _decode_common_12, the ORB's hot path (GIOP 1.2/1.3 Requests with a KeyAddr
 * target, NO_EXCEPTION Replies), in C: the same checks in the same order, the
 * same result -- the message, or None where the Python function returns None
 * (the general decoder then judges the message and gives its errors).  It
 * calls back into Python for what is rare on that path: parse_header when no
 * header is given, the service-context list when it is not empty, and the
 * whole Python function for data other than bytes/bytearray.
 *
 * The messages are made without their dataclass __init__ (a third of the
 * Python function's time): the instance dict is a copy of a template of the
 * fields' defaults, in field order, that configure_giop() got from
 * dataclasses.fields(), with the default_factory fields made anew and the
 * decoded fields set.  So the fields are described once, by the dataclass. */

static PyObject *giop_request_type, *giop_reply_type, *giop_keyaddr_type;
/* Each class's field defaults in field order, and its ((field, factory), ...): */
static PyObject *giop_request_template, *giop_request_factories;
static PyObject *giop_reply_template, *giop_reply_factories;
static PyObject *giop_no_fields;      /* {} and () for KeyAddr: the caller sets its field */
static PyObject *giop_contexts_fn;    /* messages._fast_service_contexts */
static PyObject *giop_parse_header;   /* header.parse_header */
static PyObject *giop_python_fn;      /* messages._decode_common_12 in Python */
static PyObject *s_version, *s_little, *s_service_contexts, *s_body, *s_body_offset,
    *s_request_id, *s_response_flags, *s_target, *s_operation, *s_reply_status,
    *s_message_size, *s_object_key;

/* A new instance of `type` (a dataclass) whose dict is `template` with the
 * `factories` fields made anew; the caller sets the decoded fields. */
static PyObject *
giop_instance(PyObject *type, PyObject *template, PyObject *factories, PyObject **dict_out)
{
    PyObject *dict = PyDict_Copy(template);
    if (dict == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(factories);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(factories, i);
        PyObject *name = PyTuple_GET_ITEM(pair, 0);
        PyObject *factory = PyTuple_GET_ITEM(pair, 1);
        /* (the usual factories, list and dict, made without a call: the same values) */
        PyObject *value = factory == (PyObject *)&PyList_Type ? PyList_New(0)
            : factory == (PyObject *)&PyDict_Type ? PyDict_New()
            : PyObject_CallNoArgs(factory);
        if (value == NULL) goto fail;
        int rc = PyDict_SetItem(dict, name, value);
        Py_DECREF(value);
        if (rc < 0) goto fail;
    }
    PyObject *obj = PyBaseObject_Type.tp_new((PyTypeObject *)type, empty_tuple, NULL);
    if (obj == NULL) goto fail;
    /* (GenericSetDict, not setattr: KeyAddr is a frozen dataclass) */
    if (PyObject_GenericSetDict(obj, dict, NULL) < 0) { Py_DECREF(obj); goto fail; }
    *dict_out = dict;          /* borrowed: the instance holds it */
    Py_DECREF(dict);
    return obj;
fail:
    Py_DECREF(dict);
    return NULL;
}

/* dict[name] = value, stealing value (NULL: an error already set). */
static int
giop_set(PyObject *dict, PyObject *name, PyObject *value)
{
    if (value == NULL) return -1;
    int rc = PyDict_SetItem(dict, name, value);
    Py_DECREF(value);
    return rc;
}

/* The header's fields: GiopHeader is a NamedTuple (version, flags, msg_type,
 * size, magic). */
static int
giop_header_fields(PyObject *header, PyObject **version, long *flags, long *msg_type,
                   long long *size, PyObject **magic)
{
    if (!PyTuple_Check(header) || PyTuple_GET_SIZE(header) != 5) {
        PyErr_SetString(PyExc_TypeError, "decode_common_12: header must be a GiopHeader");
        return -1;
    }
    *version = PyTuple_GET_ITEM(header, 0);
    *flags = PyLong_AsLong(PyTuple_GET_ITEM(header, 1));
    if (*flags == -1 && PyErr_Occurred()) return -1;
    *msg_type = PyLong_AsLong(PyTuple_GET_ITEM(header, 2));
    if (*msg_type == -1 && PyErr_Occurred()) return -1;
    *size = PyLong_AsLongLong(PyTuple_GET_ITEM(header, 3));
    if (*size == -1 && PyErr_Occurred()) return -1;
    *magic = PyTuple_GET_ITEM(header, 4);
    return 0;
}

/* Whether `version` is (1, 2) or (1, 3). */
static int
giop_fast_version(PyObject *version)
{
    if (!PyTuple_Check(version) || PyTuple_GET_SIZE(version) != 2) return 0;
    PyObject *major = PyTuple_GET_ITEM(version, 0), *minor = PyTuple_GET_ITEM(version, 1);
    if (!PyLong_CheckExact(major) || !PyLong_CheckExact(minor)) return 0;
    long a = PyLong_AsLong(major), b = PyLong_AsLong(minor);
    return a == 1 && (b == 2 || b == 3);
}

/* A read-only view of data[start:stop] (no copy; it keeps data alive). */
static PyObject *
read_only_slice(PyObject *data, Py_ssize_t start, Py_ssize_t stop)
{
    PyObject *whole = PyMemoryView_FromObject(data);
    if (whole == NULL) return NULL;
    PyObject *part = PySequence_GetSlice(whole, start, stop);
    Py_DECREF(whole);
    if (part == NULL) return NULL;
    ((PyMemoryViewObject *)part)->view.readonly = 1;   /* as memoryview.toreadonly() */
    return part;
}

static PyObject *giop_decode_checked(PyObject *data, PyObject *version, long flags,
                                     long msg_type, long long size,
                                     const unsigned char *buf, int body_view);

static PyObject *
giop_decode(PyObject *data, PyObject *header, const unsigned char *buf, Py_ssize_t len,
            int body_view)
{
    PyObject *version, *magic;
    long flags, msg_type;
    long long size;
    if (giop_header_fields(header, &version, &flags, &msg_type, &size, &magic) < 0)
        return NULL;
    long long end = 12 + size;
    if (end != len || !giop_fast_version(version) || flags > 1 || flags < 0 ||
            !PyBytes_Check(magic) || PyBytes_GET_SIZE(magic) != 4 ||
            memcmp(PyBytes_AS_STRING(magic), "GIOP", 4) != 0)
        Py_RETURN_NONE;
    return giop_decode_checked(data, version, flags, msg_type, size, buf, body_view);
}

/* giop_decode once the header passed its checks: a GIOP 1.2/1.3 header (`version`),
 * flags 0 or 1, and exactly 12 + size bytes at buf. */
static PyObject *
giop_decode_checked(PyObject *data, PyObject *version, long flags, long msg_type,
                    long long size, const unsigned char *buf, int body_view)
{
    long long end = 12 + size;
    int little = flags == 1, swap = little != NATIVE_LITTLE;
    /* The fixed fields, read before anything is made. */
    uint32_t request_id;
    uint64_t pos;
    uint64_t key_end = 0, op_start = 0, op_len = 0;
    unsigned char response_flags = 0;
    PyObject *type, *template, *factories;
    if (msg_type == 0) {                                     /* Request */
        if (end < 28) Py_RETURN_NONE;
        request_id = load32(buf + 12, swap);
        response_flags = buf[16];
        if (buf[17] || buf[18] || buf[19] || load16(buf + 20, swap) != 0)
            Py_RETURN_NONE;                                  /* reserved; not KeyAddr */
        key_end = 28 + (uint64_t)load32(buf + 24, swap);
        pos = key_end + (-key_end & 3);                      /* the operation's length */
        if (pos + 4 > (uint64_t)end) Py_RETURN_NONE;
        op_len = load32(buf + pos, swap);
        pos += 4;
        if (op_len == 0 || pos + op_len > (uint64_t)end || buf[pos + op_len - 1] != 0)
            Py_RETURN_NONE;
        op_start = pos;
        pos += op_len;
        type = giop_request_type;
        template = giop_request_template;
        factories = giop_request_factories;
    } else if (msg_type == 1) {                              /* Reply */
        if (end < 24) Py_RETURN_NONE;
        request_id = load32(buf + 12, swap);
        if (load32(buf + 16, swap) != 0) Py_RETURN_NONE;     /* not NO_EXCEPTION */
        pos = 20;
        type = giop_reply_type;
        template = giop_reply_template;
        factories = giop_reply_factories;
    } else {
        Py_RETURN_NONE;
    }
    PyObject *contexts;
    uint64_t aligned = pos + (-pos & 3);
    if (aligned + 4 > (uint64_t)end) Py_RETURN_NONE;
    if (load32(buf + aligned, swap) == 0) {
        contexts = PyList_New(0);
        if (contexts == NULL) return NULL;
        pos = aligned + 4;
    } else {
        PyObject *got = PyObject_CallFunction(giop_contexts_fn, "OKKOO", data,
                                              (unsigned long long)pos,
                                              (unsigned long long)end,
                                              little ? Py_True : Py_False, version);
        if (got == NULL) return NULL;
        if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2) {
            Py_DECREF(got);
            PyErr_SetString(PyExc_TypeError, "_fast_service_contexts: not a pair");
            return NULL;
        }
        contexts = Py_NewRef(PyTuple_GET_ITEM(got, 0));
        unsigned long long after = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(got, 1));
        Py_DECREF(got);
        if (after == (unsigned long long)-1 && PyErr_Occurred()) {
            Py_DECREF(contexts);
            return NULL;
        }
        if (contexts == Py_None) return contexts;           /* the general path judges */
        pos = after;
    }
    if (pos < (uint64_t)end) {
        pos += -pos & 7;
        if (pos > (uint64_t)end) { Py_DECREF(contexts); Py_RETURN_NONE; }
    }
    PyObject *dict;
    PyObject *msg = giop_instance(type, template, factories, &dict);
    if (msg == NULL) { Py_DECREF(contexts); return NULL; }
    if (giop_set(dict, s_service_contexts, contexts) < 0 ||     /* (first: it is owned) */
        giop_set(dict, s_version, Py_NewRef(version)) < 0 ||
        giop_set(dict, s_little, PyBool_FromLong(little)) < 0 ||
        giop_set(dict, s_body, body_view
                 ? read_only_slice(data, (Py_ssize_t)pos, (Py_ssize_t)end)
                 : PyBytes_FromStringAndSize((const char *)buf + pos,
                                             (Py_ssize_t)(end - pos))) < 0 ||
        giop_set(dict, s_body_offset, PyLong_FromUnsignedLongLong(pos)) < 0 ||
        giop_set(dict, s_request_id, PyLong_FromUnsignedLong(request_id)) < 0 ||
        giop_set(dict, s_message_size, PyLong_FromLongLong(size)) < 0)
        goto fail;
    if (msg_type == 0) {
        PyObject *kdict;
        PyObject *key = giop_instance(giop_keyaddr_type, giop_no_fields, empty_tuple, &kdict);
        if (key == NULL) goto fail;
        if (giop_set(kdict, s_object_key,
                     PyBytes_FromStringAndSize((const char *)buf + 28,
                                               (Py_ssize_t)(key_end - 28))) < 0) {
            Py_DECREF(key);
            goto fail;
        }
        if (giop_set(dict, s_target, key) < 0 ||
            giop_set(dict, s_response_flags, PyLong_FromLong(response_flags)) < 0 ||
            giop_set(dict, s_operation,
                     PyUnicode_DecodeLatin1((const char *)buf + op_start,
                                            (Py_ssize_t)(op_len - 1), NULL)) < 0)
            goto fail;
    } else if (giop_set(dict, s_reply_status, PyLong_FromLong(0)) < 0) {
        goto fail;
    }
    return msg;
fail:
    Py_DECREF(msg);
    return NULL;
}

PyDoc_STRVAR(decode_common_12_doc,
"decode_common_12(data, header, body_view=False)\n--\n\n"
"pycdr.giop.messages.fast12._decode_common_12 in C: the Request or Reply of the ORB's\n"
"hot path decoded from the whole message `data`, or None for the general\n"
"decoder.  `header` is parse_header(data), or None.  configure_giop() first.");

static PyObject *
speedups_decode_common_12(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode_common_12(data, header, body_view=False)");
        return NULL;
    }
    if (giop_request_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "decode_common_12() before configure_giop()");
        return NULL;
    }
    PyObject *data = args[0], *header = args[1];
    int body_view = 0;
    if (nargs == 3 && (body_view = PyObject_IsTrue(args[2])) < 0) return NULL;
    if (!PyBytes_CheckExact(data) && !PyByteArray_CheckExact(data))
        return PyObject_Vectorcall(giop_python_fn, args, nargs, NULL);
    PyObject *parsed = NULL;
    if (header == Py_None) {
        header = parsed = PyObject_CallOneArg(giop_parse_header, data);
        if (header == NULL) return NULL;
    }
    /* (a buffer export: a bytearray cannot be resized meanwhile, by the
     * service-context callback or anything else) */
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        Py_XDECREF(parsed);
        return NULL;
    }
    PyObject *msg = giop_decode(data, header, view.buf, view.len, body_view);
    PyBuffer_Release(&view);
    Py_XDECREF(parsed);
    return msg;
}

/* frame_common_12(data, pos, max_message_size) is fast12.py's _frame_common_12: the
 * whole messages at data[pos:] that decode_common_12 takes, one after the other, as
 * [(bytes, message with its body a view of them), ...], and the position of the
 * first other one -- an incomplete message, a header that is not GIOP 1.2/1.3 with
 * flags 0 or 1 of a Request or Reply, one over max_message_size, or one that
 * decode_common_12 leaves to the general decoder.  A message that is all of `data`
 * is `data` itself, not a copy.  The header is read here, in the order and with the
 * outcome of parse_header() and decode_common_12's checks together (any header one of
 * them refuses ends the run), so no GiopHeader is made. */
static PyObject *giop_versions[2];    /* (1, 2) and (1, 3), made once */

static int
framing_arguments(const char *usage, PyObject *const *args, Py_ssize_t nargs,
                  Py_ssize_t want, Py_ssize_t *pos, long long *max_size)
{
    /* The arguments frame_common_12 and frame_chain_12 share: (data, pos,
     * max_message_size, ...), `usage` naming the call in errors. 0, or -1 with an
     * exception set. */
    if (nargs != want) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (giop_request_type == NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s before configure_giop()", usage);
        return -1;
    }
    if (!PyBytes_CheckExact(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s: data must be bytes", usage);
        return -1;
    }
    *pos = PyLong_AsSsize_t(args[1]);
    if (*pos == -1 && PyErr_Occurred()) return -1;
    *max_size = PyLong_AsLongLong(args[2]);
    if (*max_size == -1 && PyErr_Occurred()) return -1;
    if (*pos < 0 || *pos > PyBytes_GET_SIZE(args[0])) {
        PyErr_Format(PyExc_ValueError, "%s: pos out of range", usage);
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        if (giop_versions[i] == NULL &&
                (giop_versions[i] = Py_BuildValue("(ii)", 1, 2 + i)) == NULL)
            return -1;
    }
    return 0;
}

static PyObject *
speedups_frame_common_12(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos;
    long long max_size;
    if (framing_arguments("frame_common_12(data, pos, max_message_size)", args, nargs, 3,
                          &pos, &max_size) < 0)
        return NULL;
    PyObject *data = args[0];
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(data);
    PyObject *taken = PyList_New(0);
    if (taken == NULL) return NULL;
    while (len - pos >= 12) {
        const unsigned char *h = buf + pos;
        if (memcmp(h, "GIOP", 4) != 0 || h[4] != 1 || (h[5] != 2 && h[5] != 3) ||
                h[6] > 1 || h[7] > 1)
            break;
        long long size = load32(h + 8, (h[6] == 1) != NATIVE_LITTLE);
        if (size > max_size || 12 + size > (long long)(len - pos))
            break;
        Py_ssize_t total = (Py_ssize_t)(12 + size);
        PyObject *raw = pos == 0 && total == len ? Py_NewRef(data)
            : PyBytes_FromStringAndSize((const char *)h, total);
        if (raw == NULL) goto fail;
        PyObject *msg = giop_decode_checked(raw, giop_versions[h[5] - 2], h[6], h[7], size,
                                            (const unsigned char *)PyBytes_AS_STRING(raw), 1);
        if (msg == NULL) { Py_DECREF(raw); goto fail; }
        if (msg == Py_None) { Py_DECREF(msg); Py_DECREF(raw); break; }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) { Py_DECREF(msg); Py_DECREF(raw); goto fail; }
        PyTuple_SET_ITEM(pair, 0, raw);
        PyTuple_SET_ITEM(pair, 1, msg);
        int rc = PyList_Append(taken, pair);
        Py_DECREF(pair);
        if (rc < 0) goto fail;
        pos += total;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) goto fail;
    PyTuple_SET_ITEM(result, 0, taken);
    PyObject *end = PyLong_FromSsize_t(pos);
    if (end == NULL) { Py_DECREF(result); return NULL; }
    PyTuple_SET_ITEM(result, 1, end);
    return result;
fail:
    Py_DECREF(taken);
    return NULL;
}

PyDoc_STRVAR(frame_common_12_doc,
"frame_common_12(data, pos, max_message_size)\n--\n\n"
"pycdr.giop.messages.fast12._frame_common_12 in C: ([(bytes, message), ...], end) of the\n"
"whole messages at data[pos:] that decode_common_12 takes (bodies as views), up to the\n"
"first other one.  `data`: bytes.  configure_giop() first.");

/* frame_chain_12(data, pos, max_message_size, max_reassembly_size) is fast12.py's
 * _frame_chain_12: a fragmented GIOP 1.2/1.3 Request or Reply at data[pos:] whose
 * first message (flags 2 or 3, a multiple of 8 bytes) and Fragments (its request id,
 * version and byte order; each a multiple of 8 bytes but the last; each within
 * max_message_size, together within max_reassembly_size) are all whole there, joined
 * as GiopConnection joins fragments and decoded by decode_common_12: (frames, whole,
 * message, end), the frames views of data when the chain is all of it, else copies;
 * None for anything else. */
static PyObject *
speedups_frame_chain_12(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos;
    long long max_size;
    if (framing_arguments("frame_chain_12(data, pos, max_message_size, max_reassembly_size)",
                          args, nargs, 4, &pos, &max_size) < 0)
        return NULL;
    long long max_whole = PyLong_AsLongLong(args[3]);
    if (max_whole == -1 && PyErr_Occurred()) return NULL;
    PyObject *data = args[0];
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(data);
    if (len - pos < 12) Py_RETURN_NONE;
    const unsigned char *h = buf + pos;
    if (memcmp(h, "GIOP", 4) != 0 || h[4] != 1 || (h[5] != 2 && h[5] != 3) ||
            (h[6] != 2 && h[6] != 3) || h[7] > 1)
        Py_RETURN_NONE;
    int little = h[6] & 1, swap = little != NATIVE_LITTLE;
    long long size = load32(h + 8, swap), total = 12 + size;
    if (size < 4 || size > max_size || total > (long long)(len - pos) || total % 8)
        Py_RETURN_NONE;
    uint32_t request_id = load32(h + 12, swap);
    /* The fragments: checked first, nothing made until the chain is whole. */
    Py_ssize_t p = pos + (Py_ssize_t)total;
    Py_ssize_t count = 1;
    for (;;) {
        if (len - p < 12) Py_RETURN_NONE;
        const unsigned char *f = buf + p;
        if (memcmp(f, "GIOP", 4) != 0 || f[7] != 7 || f[4] != 1 || f[5] != h[5] ||
                (f[6] & 1) != little)
            Py_RETURN_NONE;
        long long fsize = load32(f + 8, swap), t = 12 + fsize;
        if (fsize < 4 || fsize > max_size || t > (long long)(len - p) ||
                load32(f + 12, swap) != request_id)
            Py_RETURN_NONE;
        int more = f[6] & 2;
        size += fsize - 4;
        if ((more && t % 8) || size > max_whole) Py_RETURN_NONE;
        p += (Py_ssize_t)t;
        count++;
        if (!more) break;
    }
    Py_ssize_t end = p;
    /* The whole message: the first's header (its byte order, no other flag) and data,
     * then each fragment's data. */
    PyObject *whole = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(12 + size));
    if (whole == NULL) return NULL;
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(whole);
    memcpy(w, "GIOP", 4);
    w[4] = 1; w[5] = h[5]; w[6] = (unsigned char)little; w[7] = h[7];
    uint32_t whole_size = (uint32_t)size;
    if (little) {
        w[8] = whole_size & 0xff; w[9] = whole_size >> 8 & 0xff;
        w[10] = whole_size >> 16 & 0xff; w[11] = whole_size >> 24;
    } else {
        w[11] = whole_size & 0xff; w[10] = whole_size >> 8 & 0xff;
        w[9] = whole_size >> 16 & 0xff; w[8] = whole_size >> 24;
    }
    Py_ssize_t at = 12;
    long long first_size = load32(h + 8, swap);
    memcpy(w + at, h + 12, (size_t)first_size);
    at += (Py_ssize_t)first_size;
    PyObject *frames = PyList_New(count), *view = NULL, *msg = NULL;
    if (frames == NULL) goto fail;
    view = PyMemoryView_FromObject(data);
    if (view == NULL) goto fail;
    /* (views only when the chain is all of data: a view keeps all of it alive) */
    int views = pos == 0 && end == len;
    PyObject *frame = views
        ? PySequence_GetSlice(view, pos, pos + (Py_ssize_t)(12 + first_size))
        : PyBytes_FromStringAndSize((const char *)h, (Py_ssize_t)(12 + first_size));
    if (frame == NULL) goto fail;
    PyList_SET_ITEM(frames, 0, frame);
    p = pos + (Py_ssize_t)(12 + first_size);
    for (Py_ssize_t i = 1; i < count; i++) {
        const unsigned char *f = buf + p;
        Py_ssize_t t = 12 + (Py_ssize_t)load32(f + 8, swap);
        memcpy(w + at, f + 16, (size_t)(t - 16));
        at += t - 16;
        frame = views ? PySequence_GetSlice(view, p, p + t)
                      : PyBytes_FromStringAndSize((const char *)f, t);
        if (frame == NULL) goto fail;
        PyList_SET_ITEM(frames, i, frame);
        p += t;
    }
    msg = giop_decode_checked(whole, giop_versions[h[5] - 2], little, h[7], size,
                              (const unsigned char *)PyBytes_AS_STRING(whole), 1);
    if (msg == NULL) goto fail;
    if (msg == Py_None) {
        Py_DECREF(view); Py_DECREF(frames); Py_DECREF(whole);
        return msg;
    }
    PyObject *result = Py_BuildValue("(NNNn)", frames, whole, msg, end);
    Py_DECREF(view);
    return result;
fail:
    Py_XDECREF(view);
    Py_XDECREF(frames);
    Py_XDECREF(msg);
    Py_DECREF(whole);
    return NULL;
}

PyDoc_STRVAR(frame_chain_12_doc,
"frame_chain_12(data, pos, max_message_size, max_reassembly_size)\n--\n\n"
"pycdr.giop.messages.fast12._frame_chain_12 in C: (frames, whole, message, end) of a\n"
"fragmented GIOP 1.2/1.3 Request or Reply whose fragments are all at data[pos:] (bytes),\n"
"joined and decoded by decode_common_12, or None.  configure_giop() first.");

PyDoc_STRVAR(configure_giop_doc,
"configure_giop(Request, request_defaults, request_factories,\n"
"               Reply, reply_defaults, reply_factories, KeyAddr,\n"
"               fast_service_contexts, parse_header, python_fn)\n--\n\n"
"What decode_common_12 needs from pycdr.giop.messages (which calls it once):\n"
"the three dataclasses; for Request and Reply, their fields' defaults in field\n"
"order (a dict) and ((field, default_factory), ...); and the Python functions\n"
"it hands the rare cases to.");

static int
giop_factories_ok(PyObject *factories)
{
    if (!PyTuple_Check(factories)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(factories); i++) {
        PyObject *pair = PyTuple_GET_ITEM(factories, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
                !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)) ||
                !PyCallable_Check(PyTuple_GET_ITEM(pair, 1)))
            return 0;
    }
    return 1;
}

static PyObject *
speedups_configure_giop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 || !PyType_Check(args[0]) || !PyDict_Check(args[1]) ||
            !giop_factories_ok(args[2]) || !PyType_Check(args[3]) ||
            !PyDict_Check(args[4]) || !giop_factories_ok(args[5]) ||
            !PyType_Check(args[6]) || !PyCallable_Check(args[7]) ||
            !PyCallable_Check(args[8]) || !PyCallable_Check(args[9])) {
        PyErr_SetString(PyExc_TypeError, "configure_giop() takes 10 arguments (see its doc)");
        return NULL;
    }
    static const char *names[] = {
        "version", "little", "service_contexts", "body", "body_offset", "request_id",
        "response_flags", "target", "operation", "reply_status", "message_size",
        "object_key"};
    PyObject **slots[] = {
        &s_version, &s_little, &s_service_contexts, &s_body, &s_body_offset, &s_request_id,
        &s_response_flags, &s_target, &s_operation, &s_reply_status, &s_message_size,
        &s_object_key};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*slots[i] == NULL && (*slots[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    }
    if (giop_no_fields == NULL && (giop_no_fields = PyDict_New()) == NULL)
        return NULL;
    Py_XSETREF(giop_request_type, Py_NewRef(args[0]));
    Py_XSETREF(giop_request_template, Py_NewRef(args[1]));
    Py_XSETREF(giop_request_factories, Py_NewRef(args[2]));
    Py_XSETREF(giop_reply_type, Py_NewRef(args[3]));
    Py_XSETREF(giop_reply_template, Py_NewRef(args[4]));
    Py_XSETREF(giop_reply_factories, Py_NewRef(args[5]));
    Py_XSETREF(giop_keyaddr_type, Py_NewRef(args[6]));
    Py_XSETREF(giop_contexts_fn, Py_NewRef(args[7]));
    Py_XSETREF(giop_parse_header, Py_NewRef(args[8]));
    Py_XSETREF(giop_python_fn, Py_NewRef(args[9]));
    Py_RETURN_NONE;
}

/* ==========================================================================
 * 10. serve_request: the server's Request -> Reply in one call
 * ==========================================================================
 *
 * serve_request: a servant operation's whole Request -> Reply in one
 * call (issue 21), for the ORB's usual case.  The server learns, on the
 * general path, which (object key, operation) pairs may take it, and
 * keeps them in a table: {object key: {operation: (op, call, argument
 * plan nodes, result plan nodes)}}.  A message this function does not
 * take is left untouched (None): nothing has run, the general path
 * decodes and judges it, with its typed errors and offsets.  Taken: a
 * complete, unfragmented GIOP 1.0-1.2 Request (either byte order), a
 * twoway (1.2 response_flags 3; 1.0/1.1 response_expected 1), or a oneway
 * (0; 0) of an operation with no results (nothing to answer), with no
 * service contexts, a 1.2 KeyAddr target, zero reserved octets, a key
 * and operation in the table, its request id not outstanding, arguments
 * decoded by their plans in C.  Then call(op, [arguments]) runs and the
 * result and out values are encoded into the complete Reply (bytes, the
 * same bytes as the general path's template).  What the servant gives
 * that this cannot encode (an exception, an awaitable, values the plans
 * do not take) comes back as (op, request_id, minor, little, what,
 * raised) for the general path to answer.
 */

/* Read a ulong at the next 4-aligned position (origin: the message start). */
static int
serve_ulong(const unsigned char *buf, Py_ssize_t len, Py_ssize_t *pos, int swap,
            uint32_t *out)
{
    Py_ssize_t p = *pos + (-*pos & 3);
    if (p + 4 > len) return -1;
    *out = load32(buf + p, swap);
    *pos = p + 4;
    return 0;
}

/* An octet sequence's or string's (start, length) at *pos; -1 past the end. */
static int
serve_counted(const unsigned char *buf, Py_ssize_t len, Py_ssize_t *pos, int swap,
              Py_ssize_t *start, Py_ssize_t *n)
{
    uint32_t count;
    if (serve_ulong(buf, len, pos, swap, &count) < 0) return -1;
    if ((uint64_t)count > (uint64_t)(len - *pos)) return -1;
    *start = *pos;
    *n = (Py_ssize_t)count;
    *pos += count;
    return 0;
}

/* The parsed head of a Request this path takes. */
typedef struct {
    int minor, little, swap;
    int oneway;                 /* no reply expected (response flags 0) */
    uint32_t request_id;
    Py_ssize_t key_start, key_len, op_start, op_len, body;
} ServeHead;

/* 1: `buf` is a Request this path takes (head filled in); 0: not. */
static int
serve_parse_head(const unsigned char *buf, Py_ssize_t len, ServeHead *h)
{
    if (len < 12 || memcmp(buf, "GIOP", 4) != 0 || buf[4] != 1 || buf[5] > 2 ||
            (buf[6] & ~1) != 0 || buf[7] != 0)
        return 0;
    h->minor = buf[5];
    h->little = buf[6] & 1;
    h->swap = h->little != NATIVE_LITTLE;
    if ((uint64_t)load32(buf + 8, h->swap) + 12 != (uint64_t)len) return 0;
    Py_ssize_t pos = 12;
    uint32_t n;
    if (h->minor < 2) {
        if (serve_ulong(buf, len, &pos, h->swap, &n) < 0 || n != 0) return 0;
        if (serve_ulong(buf, len, &pos, h->swap, &h->request_id) < 0) return 0;
        Py_ssize_t fixed = h->minor == 1 ? 4 : 1;      /* response_expected, reserved[3] */
        if (pos + fixed > len || (buf[pos] != 1 && buf[pos] != 0)) return 0;
        h->oneway = buf[pos] == 0;
        if (h->minor == 1 && (buf[pos + 1] | buf[pos + 2] | buf[pos + 3])) return 0;
        pos += fixed;
        Py_ssize_t principal, principal_len;
        if (serve_counted(buf, len, &pos, h->swap, &h->key_start, &h->key_len) < 0 ||
                serve_counted(buf, len, &pos, h->swap, &h->op_start, &h->op_len) < 0 ||
                serve_counted(buf, len, &pos, h->swap, &principal, &principal_len) < 0)
            return 0;
    } else {
        if (len < 28) return 0;
        h->request_id = load32(buf + 12, h->swap);
        if ((buf[16] != 3 && buf[16] != 0) || buf[17] | buf[18] | buf[19] ||
                buf[20] | buf[21])
            return 0;                       /* twoway or oneway, reserved, KeyAddr */
        h->oneway = buf[16] == 0;
        pos = 24;
        if (serve_counted(buf, len, &pos, h->swap, &h->key_start, &h->key_len) < 0 ||
                serve_counted(buf, len, &pos, h->swap, &h->op_start, &h->op_len) < 0 ||
                serve_ulong(buf, len, &pos, h->swap, &n) < 0 || n != 0)
            return 0;
        if (pos < len) {
            pos += -pos & 7;
            if (pos > len) return 0;
        }
    }
    if (h->op_len == 0 || buf[h->op_start + h->op_len - 1] != 0) return 0;
    h->op_len -= 1;
    h->body = pos;
    return 1;
}

/* The table's entry for the head's key and operation (a new reference: the
 * servant may change the table while it runs), or NULL (none; an error set
 * only when a lookup failed). */
static PyObject *
serve_entry(PyObject *table, const unsigned char *buf, const ServeHead *h)
{
    PyObject *key = PyBytes_FromStringAndSize((const char *)buf + h->key_start, h->key_len);
    if (key == NULL) return NULL;
    PyObject *ops = PyDict_GetItemWithError(table, key);
    Py_DECREF(key);
    if (ops == NULL || !PyDict_Check(ops)) return NULL;
    PyObject *name = PyUnicode_DecodeLatin1((const char *)buf + h->op_start, h->op_len, NULL);
    if (name == NULL) return NULL;
    PyObject *entry = PyDict_GetItemWithError(ops, name);
    Py_DECREF(name);
    if (entry == NULL) return NULL;
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4 ||
            !PyTuple_Check(PyTuple_GET_ITEM(entry, 2)) ||
            !PyTuple_Check(PyTuple_GET_ITEM(entry, 3))) {
        PyErr_SetString(PyExc_TypeError, "serve_request: a table entry is "
                        "(op, call, argument nodes, result nodes)");
        return NULL;
    }
    return Py_NewRef(entry);
}

/* The arguments decoded by their plans; NULL with no error set: not taken. */
static PyObject *
serve_arguments(const unsigned char *buf, Py_ssize_t len, const ServeHead *h,
                PyObject *nodes)
{
    Py_ssize_t n = PyTuple_GET_SIZE(nodes);
    PyObject *args = PyList_New(n);
    if (args == NULL) return NULL;
    Reader r = {
        .buf = buf, .pos = h->body, .end = len, .origin = 0,
        .little = h->little, .swap = h->swap, .numeric_arrays = 0, .depth = 0,
        .reader = NULL, .make_reader = NULL,
    };
    for (Py_ssize_t i = 0; i < n; i++) {
        Plan *p = plan_of(PyTuple_GET_ITEM(nodes, i));
        PyObject *value = p != NULL ? read_top(&r, p) : NULL;
        if (value == NULL) {
            Py_DECREF(args);
            /* the general path decodes them again and gives the error */
            if (PyErr_ExceptionMatches(Fallback) || PyErr_ExceptionMatches(cdr_error))
                PyErr_Clear();
            return NULL;
        }
        PyList_SET_ITEM(args, i, value);
    }
    return args;
}

/* The Reply to `h` with the values `returned` gives for `nodes`; NULL with
 * no error set: the general path must encode it. */
static PyObject *
serve_reply(const ServeHead *h, PyObject *nodes, PyObject *returned)
{
    Py_ssize_t n = PyTuple_GET_SIZE(nodes);
    PyObject *const *values = &returned;
    if (n > 1) {
        /* (a tuple or list of exactly n: else the general path's MARSHAL) */
        if (PyTuple_CheckExact(returned) && PyTuple_GET_SIZE(returned) == n)
            values = &PyTuple_GET_ITEM(returned, 0);
        else if (PyList_CheckExact(returned) && PyList_GET_SIZE(returned) == n)
            values = PySequence_Fast_ITEMS(returned);
        else
            return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, 128);
    if (bytes == NULL) return NULL;
    Writer w = {
        .ba = bytes, .is_bytes = 1, .data = (unsigned char *)PyBytes_AS_STRING(bytes),
        .len = 12, .cap = 128, .origin = 0,
        .little = h->little, .swap = h->swap, .writer = NULL,
        .make_writer = NULL, .owns_writer = 0,
    };
    memcpy(w.data, "GIOP", 4);
    w.data[4] = 1;
    w.data[5] = (unsigned char)h->minor;
    w.data[6] = (unsigned char)h->little;
    w.data[7] = 1;                                      /* Reply */
    int rc;
    if (h->minor < 2)       /* no service contexts, the id, NO_EXCEPTION */
        rc = write_ulong(&w, 0) | write_ulong(&w, h->request_id) | write_ulong(&w, 0);
    else                    /* (24 bytes: the body's 8-alignment adds nothing) */
        rc = write_ulong(&w, h->request_id) | write_ulong(&w, 0) | write_ulong(&w, 0);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        Plan *p = plan_of(PyTuple_GET_ITEM(nodes, i));
        rc = p != NULL ? write_plan(&w, p, values[i]) : -1;
    }
    PyObject *out = NULL;
    if (rc == 0) {
        store32(w.data + 8, (uint32_t)(w.len - 12), w.swap);
        if (_PyBytes_Resize(&w.ba, w.len) == 0) out = w.ba;
        w.ba = NULL;
    } else {
        /* whatever the plans said (Fallback, a type they refuse): the general
         * path encodes the values again and answers as it does */
        PyErr_Clear();
    }
    Py_XDECREF(w.ba);
    return out;
}

PyDoc_STRVAR(serve_request_doc,
"serve_request(data, table, outstanding)\n--\n\n"
"A Request taken whole (see pycdr/codec/_speedups.c): None when not taken (nothing ran),\n"
"the Reply's bytes (b'': a oneway request served, nothing to send), or (op,\n"
"request_id, minor, little, what, raised, response_flags) when the servant ran and\n"
"the general path must answer (or, response_flags 0, judge what a oneway gave):\n"
"`what` is the exception it raised (raised True) or what it returned (False).  `table`: {object key: {operation: (op, call,\n"
"argument plan nodes, result plan nodes)}}; `outstanding`: the request ids awaiting\n"
"a reply on the connection (a Request reusing one is the general path's error).");

/* The ORB's one-call paths (serve_request and the rest below): 1 when the C path
 * is on, 0 when it is switched off (_cmarshal.enabled: tests), -1 with an error set. */
static int
c_path_on(void)
{
    PyObject *enabled = cmarshal_globals == NULL ? NULL
                        : PyDict_GetItemWithError(cmarshal_globals, s_enabled);
    if (enabled == Py_True) return 1;
    return PyErr_Occurred() ? -1 : 0;
}

/* serve_request on the bytes buf[:len] (kept unchanged while the servant runs).
 * `keep` (or NULL): where to leave the decoded arguments (a new reference, or
 * NULL) for the caller to release after it has sent the Reply: freeing a large
 * argument (8,192 floats for a 64 KB sequence<double>) takes tens of us the client
 * would otherwise wait through for its Reply. */
static PyObject *
serve_view(const unsigned char *buf, Py_ssize_t len, PyObject *table, PyObject *outstanding,
           PyObject **keep)
{
    PyObject *out = NULL, *call_args = NULL, *returned = NULL, *entry = NULL;
    ServeHead h;
    if (!serve_parse_head(buf, len, &h)) goto not_taken;
    entry = serve_entry(table, buf, &h);
    if (entry == NULL) goto not_taken;
    if (h.oneway) {
        /* (an operation with results called oneway: the general path, which drops
         * them as it does; no request id is booked for a oneway, none checked) */
        if (PyTuple_GET_SIZE(PyTuple_GET_ITEM(entry, 3)) != 0) goto not_taken;
    } else {
        PyObject *rid = PyLong_FromUnsignedLong(h.request_id);
        if (rid == NULL) goto done;
        int busy = PySet_Contains(outstanding, rid);
        Py_DECREF(rid);
        if (busy != 0) goto not_taken;
    }
    PyObject *op = PyTuple_GET_ITEM(entry, 0), *call = PyTuple_GET_ITEM(entry, 1);
    call_args = serve_arguments(buf, len, &h, PyTuple_GET_ITEM(entry, 2));
    if (call_args == NULL) goto not_taken;
    PyObject *argv[2] = {op, call_args};
    returned = PyObject_Vectorcall(call, argv, 2, NULL);
    PyObject *what;
    int raised = returned == NULL;
    if (raised) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL && value != NULL) PyException_SetTraceback(value, tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        if (value == NULL) goto done;
        what = value;                                   /* (owned) */
    } else {
        PyTypeObject *t = Py_TYPE(returned);
        if (h.oneway) {
            /* Nothing to send: b"".  (Anything but None from a method without results
             * goes to the general path, which judges it as it does: results_to_values.) */
            if (returned == Py_None) {
                out = PyBytes_FromStringAndSize(NULL, 0);
                goto done;
            }
        } else if (t->tp_as_async == NULL || t->tp_as_async->am_await == NULL) {
            out = serve_reply(&h, PyTuple_GET_ITEM(entry, 3), returned);
            if (out != NULL || PyErr_Occurred()) goto done;
        }
        what = Py_NewRef(returned);
    }
    out = Py_BuildValue("(OkiiNOi)", op, (unsigned long)h.request_id, h.minor, h.little,
                        what, raised ? Py_True : Py_False, h.oneway ? 0 : 3);
    goto done;
not_taken:
    if (!PyErr_Occurred()) out = Py_NewRef(Py_None);
done:
    if (keep != NULL)
        *keep = call_args;
    else
        Py_XDECREF(call_args);
    Py_XDECREF(returned);
    Py_XDECREF(entry);
    return out;
}

static PyObject *
speedups_serve_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyDict_Check(args[1]) || !PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "serve_request(data, table: dict, outstanding: set)");
        return NULL;
    }
    int on = c_path_on();
    if (on <= 0) {
        if (on < 0) return NULL;
        Py_RETURN_NONE;                 /* the C path switched off (tests) */
    }
    PyObject *data = args[0];
    if (!PyBytes_CheckExact(data) && !PyByteArray_CheckExact(data)) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    /* (the buffer stays exported while the servant runs: a bytearray cannot be
     * resized under the head read from it) */
    PyObject *out = serve_view(view.buf, view.len, args[1], args[2], NULL);
    PyBuffer_Release(&view);
    return out;
}

/* ==========================================================================
 * 11. The client's Request and Reply: encode_request, decode_reply
 * ==========================================================================
 *
 * The client's side of the same (issue 21): a Request encoded from its
 * template's bytes and the arguments' plans, and a NO_EXCEPTION Reply's
 * values decoded by the results' plans.  Both give None for what they do
 * not take; the general path then encodes or decodes it, with its errors.
 */

PyDoc_STRVAR(encode_request_doc,
"encode_request(prefix, request_id_at, request_id, little, nodes, args)\n--\n\n"
"A Request's bytes: `prefix` (a MessageTemplate's: the message up to its body, the\n"
"body's alignment included), the request id (a ulong) at `request_id_at`, then the\n"
"values `args` encoded by the plan nodes `nodes` (a tuple as long as args), the size\n"
"set in the header.  None when a plan does not take a value (the general path\n"
"encodes it and gives its error).");

/* The Request's bytes (a new bytes object), None when a plan does not take a
 * value, NULL with an error set.  `tail` (NULL: none): the last value, a bytes
 * object for an octet sequence plan, whose octets are left out of the bytes made
 * (the caller sends them after, without copying them: a large sequence's octets
 * cost a copy each call) while its count and the header's size count them. */
static PyObject *
request_bytes(PyObject *prefix, Py_ssize_t at, unsigned long request_id, int little,
              PyObject *nodes, PyObject *values, PyObject *tail)
{
    Py_ssize_t plen = PyBytes_GET_SIZE(prefix);
    if (plen < 12 || at < 12 || at + 4 > plen || request_id > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_ValueError, "encode_request: the prefix is no template's");
        return NULL;
    }
    int on = c_path_on();
    if (on <= 0) {
        if (on < 0) return NULL;
        Py_RETURN_NONE;
    }
    Py_ssize_t cap = plen + 64;
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, cap);
    if (bytes == NULL) return NULL;
    Writer w = {
        .ba = bytes, .is_bytes = 1, .data = (unsigned char *)PyBytes_AS_STRING(bytes),
        .len = plen, .cap = cap, .origin = 0,
        .little = little, .swap = little != NATIVE_LITTLE, .writer = NULL,
        .make_writer = NULL, .owns_writer = 0,
    };
    memcpy(w.data, PyBytes_AS_STRING(prefix), plen);
    int rc = 0;
    Py_ssize_t n = PyTuple_GET_SIZE(nodes), tail_len = 0;
    if (tail != NULL) {
        /* (the tail must be the last value, of an octet sequence's plan: anything
         * else is written by the general path, which judges it) */
        Plan *last = n > 0 ? plan_of(PyTuple_GET_ITEM(nodes, n - 1)) : NULL;
        if (last == NULL || last->op != OP_OCTET_SEQ || last->is_array ||
                !PyBytes_CheckExact(tail) || PyTuple_GET_ITEM(values, n - 1) != tail) {
            PyErr_Clear();
            Py_DECREF(w.ba);
            Py_RETURN_NONE;
        }
        tail_len = PyBytes_GET_SIZE(tail);
        n -= 1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        Plan *p = plan_of(PyTuple_GET_ITEM(nodes, i));
        rc = p != NULL ? write_plan(&w, p, PyTuple_GET_ITEM(values, i)) : -1;
    }
    if (rc == 0 && tail != NULL) {
        /* its count (the bound checked as write_octet_seq checks it); the octets follow */
        rc = write_count(&w, plan_of(PyTuple_GET_ITEM(nodes, n)), tail_len);
        if (rc == 0 && (uint64_t)(w.len - 12) + (uint64_t)tail_len > 0xFFFFFFFFull)
            rc = fallback_int();        /* (the general path's error for the size) */
    }
    PyObject *out = NULL;
    if (rc == 0) {
        store32(w.data + 8, (uint32_t)(w.len - 12 + tail_len), w.swap);
        store32(w.data + at, (uint32_t)request_id, w.swap);
        if (_PyBytes_Resize(&w.ba, w.len) == 0) out = w.ba;
        w.ba = NULL;
    } else {
        recursion_to_fallback();
        if (PyErr_ExceptionMatches(Fallback) || PyErr_ExceptionMatches(cdr_error) ||
                PyErr_ExceptionMatches(PyExc_TypeError) ||
                PyErr_ExceptionMatches(PyExc_ValueError) ||
                PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();          /* the general path encodes them again */
            out = Py_NewRef(Py_None);
        }
    }
    Py_XDECREF(w.ba);
    return out;
}

/* encode_request's and exchange's first arguments: (prefix, request_id_at,
 * request_id, little, nodes, args); -1 with an error set when they are not. */
static int
request_arguments(PyObject *const *args, Py_ssize_t *at, unsigned long *request_id,
                  int *little)
{
    if (!PyBytes_Check(args[0]) || !PyTuple_Check(args[4]) || !PyTuple_Check(args[5]) ||
            PyTuple_GET_SIZE(args[4]) != PyTuple_GET_SIZE(args[5])) {
        PyErr_SetString(PyExc_TypeError, "encode_request(prefix: bytes, request_id_at, "
                        "request_id, little, nodes: tuple, args: tuple of as many)");
        return -1;
    }
    *at = PyLong_AsSsize_t(args[1]);
    if (*at == -1 && PyErr_Occurred()) return -1;
    *request_id = PyLong_AsUnsignedLong(args[2]);
    if (*request_id == (unsigned long)-1 && PyErr_Occurred()) return -1;
    *little = PyObject_IsTrue(args[3]);
    return *little < 0 ? -1 : 0;
}

static PyObject *
speedups_encode_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "encode_request takes 6 arguments");
        return NULL;
    }
    Py_ssize_t at;
    unsigned long request_id;
    int little;
    if (request_arguments(args, &at, &request_id, &little) < 0) return NULL;
    return request_bytes(args[0], at, request_id, little, args[4], args[5], NULL);
}

PyDoc_STRVAR(decode_reply_doc,
"decode_reply(data, awaited)\n--\n\n"
"(request_id, values) of a whole GIOP 1.0-1.2 Reply with status NO_EXCEPTION and no\n"
"service contexts to a request in `awaited` ({request id: plan nodes}), its values\n"
"decoded by those nodes (a list, one value per node); None for any other message,\n"
"or when a plan hands the values back (the general path decodes it and gives its\n"
"errors).");

/* 1 when `buf` is a whole GIOP 1.0-1.2 Reply with status NO_EXCEPTION and no
 * service contexts (its request id, where its body starts, its byte order
 * filled in); 0: not. */
static int
reply_head(const unsigned char *buf, Py_ssize_t len, uint32_t *request_id, Py_ssize_t *body,
           int *little)
{
    Py_ssize_t pos = 12;
    if (len < 12 || memcmp(buf, "GIOP", 4) != 0 || buf[4] != 1 || buf[5] > 2 ||
            (buf[6] & ~1) != 0 || buf[7] != 1)
        return 0;
    int minor = buf[5], swap;
    *little = buf[6] & 1;
    swap = *little != NATIVE_LITTLE;
    if ((uint64_t)load32(buf + 8, swap) + 12 != (uint64_t)len) return 0;
    uint32_t contexts, status;
    if (minor < 2) {
        if (serve_ulong(buf, len, &pos, swap, &contexts) < 0 || contexts != 0 ||
                serve_ulong(buf, len, &pos, swap, request_id) < 0 ||
                serve_ulong(buf, len, &pos, swap, &status) < 0)
            return 0;
    } else {
        if (serve_ulong(buf, len, &pos, swap, request_id) < 0 ||
                serve_ulong(buf, len, &pos, swap, &status) < 0 ||
                serve_ulong(buf, len, &pos, swap, &contexts) < 0 || contexts != 0)
            return 0;
        if (pos < len) {
            pos += -pos & 7;
            if (pos > len) return 0;
        }
    }
    *body = pos;
    return status == 0;
}

/* The list of values `nodes` (a tuple of plan nodes) read from buf[body:];
 * NULL: with an error set, or with none when a plan hands the values back
 * (the general path decodes them and gives its errors). */
static PyObject *
reply_values(const unsigned char *buf, Py_ssize_t len, Py_ssize_t body, int little,
             PyObject *nodes)
{
    if (!PyTuple_Check(nodes)) {
        PyErr_SetString(PyExc_TypeError, "decode_reply: the result plans are tuples of nodes");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(nodes);
    PyObject *values = PyList_New(n);
    if (values == NULL) return NULL;
    Reader r = {
        .buf = buf, .pos = body, .end = len, .origin = 0,
        .little = little, .swap = little != NATIVE_LITTLE, .numeric_arrays = 0, .depth = 0,
        .reader = NULL, .make_reader = NULL,
    };
    for (Py_ssize_t i = 0; i < n; i++) {
        Plan *p = plan_of(PyTuple_GET_ITEM(nodes, i));
        PyObject *value = p != NULL ? read_top(&r, p) : NULL;
        if (value == NULL) {
            Py_DECREF(values);
            if (PyErr_ExceptionMatches(Fallback) || PyErr_ExceptionMatches(cdr_error))
                PyErr_Clear();
            return NULL;
        }
        PyList_SET_ITEM(values, i, value);
    }
    return values;
}

static PyObject *
speedups_decode_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "decode_reply(data, awaited: dict)");
        return NULL;
    }
    int on = c_path_on();
    if (on <= 0) {
        if (on < 0) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *data = args[0];
    if (!PyBytes_CheckExact(data) && !PyByteArray_CheckExact(data)) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *values = NULL, *rid = NULL, *out = NULL, *nodes = NULL;
    uint32_t request_id;
    Py_ssize_t body;
    int little;
    if (!reply_head(view.buf, view.len, &request_id, &body, &little)) goto not_taken;
    rid = PyLong_FromUnsignedLong(request_id);
    if (rid == NULL) goto done;
    nodes = PyDict_GetItemWithError(args[1], rid);
    if (nodes == NULL) {
        if (PyErr_Occurred()) goto done;
        goto not_taken;
    }
    Py_INCREF(nodes);         /* (held while the values are made) */
    values = reply_values(view.buf, view.len, body, little, nodes);
    if (values == NULL) {
        if (PyErr_Occurred()) goto done;
        goto not_taken;
    }
    out = PyTuple_Pack(2, rid, values);
    goto done;
not_taken:
    out = Py_NewRef(Py_None);
done:
    Py_XDECREF(nodes);
    Py_XDECREF(rid);
    Py_XDECREF(values);
    PyBuffer_Release(&view);
    return out;
}

/* ==========================================================================
 * 12. Blocking sockets (POSIX): exchange, send_request, serve_exchange
 * ==========================================================================
 *
 * The blocking client's whole twoway call (issue 21): the Request encoded
 * as encode_request does, sent, and its Reply read and decoded as
 * decode_reply does, in one C call with the GIL released while it waits.
 * Anything but the usual (a Reply in several messages or with others, an
 * exception, a bad header, a failed or timed-out read, the end of the
 * stream) goes back to the general path as the bytes read, which frames
 * and judges them as if it had read them itself.  The threaded server's
 * side of the same (serve_exchange): one read, and when it brings one
 * whole Request serve_request takes, the servant run and the Reply sent.
 */

#ifndef _WIN32
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

/* -- 12.1 Polling before sleeping ------------------------------------------ */

/* Polling before sleeping (issue 21).  A blocking read that sleeps until its message
 * comes pays the wake-up: on this project's 2-core machine a 1-byte loopback round trip
 * between two processes on two cores took 104-117 us sleeping at both ends, 44 us when
 * one end polled first, 10 us when both did (measured with a plain socket loop).  So a
 * lane's read first polls the socket (recv with MSG_DONTWAIT) for up to the `poll_ns`
 * its caller passes (the ORB's poll_wait), then sleeps as before.  Polling only pays
 * when a core is free for it, so it is bounded twice:
 * - at most as many threads of the process poll at once as it may use CPUs, so the
 *   threads of a server with many connections do not all poll (none on a machine with
 *   one CPU);
 * - each thread backs off: a poll that ends with nothing read makes the thread sleep
 *   straight away on its next 2, 4, ... 64 reads (a peer that answers slowly, an idle
 *   connection, a loaded machine where the peer does not get a core), and one that
 *   gets data resets it -- unless it polled for more than half its limit: a reply that
 *   slow costs more CPU polled than the wake-up it saves (a server whose Replies came
 *   some 150-200 us after each Request, 300 us polls: 44 % more calls/s for 191 us of
 *   client CPU a call against 67 sleeping, bench_poll.py), so it counts as a miss.
 * Each poll is one non-blocking recv: the data read is the read's, as a blocking recv
 * would have read it. */
#define POLL_BACKOFF_MAX 64
static int poll_slots = -1;             /* set on first use, under the GIL */
static int poll_busy;                   /* threads polling now (atomic) */
static __thread unsigned poll_skip;     /* this thread's reads left to sleep on */
static __thread unsigned poll_backoff;  /* and how many the next miss adds */
/* Counts since the module loaded (atomic), for poll_counts(): reads that polled and got
 * something, polled and slept after all, slept backing off, slept with no slot free. */
static unsigned long long poll_got, poll_missed, poll_backed_off, poll_no_slot;

static void
poll_slots_init(void)
{
    /* None on a one-CPU machine: the peer could only run once the poll gave way.  A
     * process pinned to one CPU of several may poll (its peer runs on another). */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cpus = 1;
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
#endif
    poll_slots = online > 1 ? (cpus > 1 ? cpus : 1) : 0;
}

static int64_t
monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Whether this read may poll now (poll_ns > 0, not backing off, a slot free): 1 takes
 * a slot, which poll_end gives back.  Called with the GIL released. */
static int
poll_begin(int64_t poll_ns)
{
    if (poll_ns <= 0) return 0;
    if (poll_skip > 0) {
        poll_skip--;
        __atomic_add_fetch(&poll_backed_off, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (__atomic_add_fetch(&poll_busy, 1, __ATOMIC_RELAXED) > poll_slots) {
        __atomic_sub_fetch(&poll_busy, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&poll_no_slot, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

/* The poll begun ended: with something to read soon enough (got), or not (a backoff). */
static void
poll_end(int got)
{
    __atomic_sub_fetch(&poll_busy, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(got ? &poll_got : &poll_missed, 1, __ATOMIC_RELAXED);
    if (got) {
        poll_backoff = 0;
    } else {
        poll_backoff = poll_backoff ? poll_backoff * 2 : 2;
        if (poll_backoff > POLL_BACKOFF_MAX) poll_backoff = POLL_BACKOFF_MAX;
        poll_skip = poll_backoff;
    }
}

/* recv(fd, buf, len, MSG_DONTWAIT) repeated for up to poll_ns (see above): what it
 * read (0: the end of the stream), -1 with errno set when it failed, or POLL_MISSED
 * when nothing came in that time or this read may not poll now: the caller then sleeps
 * in a blocking recv.  Called with the GIL released; poll_slots_init has run (poll_ns
 * is 0 otherwise). */
#define POLL_MISSED (-2)
static ssize_t
recv_polled(int fd, void *buf, size_t len, int64_t poll_ns)
{
    if (!poll_begin(poll_ns)) return POLL_MISSED;
    int64_t start = monotonic_ns(), now = start, until = start + poll_ns;
    ssize_t n;
    int err, waiting;
    for (;;) {
        n = recv(fd, buf, len, MSG_DONTWAIT);
        err = errno;
        waiting = n < 0 && (err == EAGAIN || err == EWOULDBLOCK);
        if (!waiting) break;
        now = monotonic_ns();
        if (now >= until) break;
    }
    poll_end(!waiting && now - start <= poll_ns / 2);
    errno = err;                /* (the recv's, for the caller) */
    return waiting ? POLL_MISSED : n;
}

/* Whether fd became readable (or failed) within poll_ns of polling; 0 also when this
 * read may not poll now.  Called with the GIL released. */
static int
poll_ready(int fd, int64_t poll_ns)
{
    if (!poll_begin(poll_ns)) return 0;
    int64_t start = monotonic_ns(), now = start, until = start + poll_ns;
    struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
    int ready;
    for (;;) {
        ready = poll(&p, 1, 0);
        if (ready != 0) break;
        now = monotonic_ns();
        if (now >= until) break;
    }
    poll_end(ready > 0 && now - start <= poll_ns / 2);
    return ready > 0;
}

PyDoc_STRVAR(poll_counts_doc,
"poll_counts()\n--\n\n"
"How the lanes' reads that may poll (poll_ns > 0) went since the module loaded, in\n"
"all threads: {'got': polled and read something within half the poll's limit,\n"
"'missed': polled and then slept, or read only later than that, 'backed_off': slept\n"
"at once after a miss, 'no_slot': slept at once, as\n"
"many threads as the process has CPUs polling already, 'slots': that many}.");
static PyObject *
speedups_poll_counts(PyObject *self, PyObject *unused)
{
    if (poll_slots < 0) poll_slots_init();
    return Py_BuildValue("{sKsKsKsKsi}",
                         "got", __atomic_load_n(&poll_got, __ATOMIC_RELAXED),
                         "missed", __atomic_load_n(&poll_missed, __ATOMIC_RELAXED),
                         "backed_off", __atomic_load_n(&poll_backed_off, __ATOMIC_RELAXED),
                         "no_slot", __atomic_load_n(&poll_no_slot, __ATOMIC_RELAXED),
                         "slots", poll_slots);
}

/* The poll_ns argument of a lane call (an int of nanoseconds, 0: sleep at once);
 * -1 with an error set. */
static int64_t
poll_argument(PyObject *value)
{
    long long ns = PyLong_AsLongLong(value);
    if (ns == -1 && PyErr_Occurred()) return -1;
    if (ns > 0 && poll_slots < 0) poll_slots_init();
    return ns > 0 ? (int64_t)ns : 0;
}

/* -- 12.2 Sending whole: send_request, a oneway call ----------------------- */

/* Send head[:hlen] then tail[:tlen] (tail may be NULL) over the blocking socket fd,
 * all of it, the two in one sendmsg (the tail's octets go from the caller's object:
 * no copy).  0: sent; an errno > 0: a send failed (part may have gone: EAGAIN when
 * the socket's SO_SNDTIMEO passed, as sendall's BlockingIOError); -1 with an error
 * set: a signal handler raised (EINTR runs the handlers, as sendall runs them).
 * The caller holds both buffers (immutable bytes) while the GIL is released. */
static int
send_whole(int fd, const char *head, Py_ssize_t hlen, const char *tail, Py_ssize_t tlen)
{
    Py_ssize_t sent = 0, total = hlen + (tail != NULL ? tlen : 0);
    while (sent < total) {
        ssize_t n;
        int err;
        if (sent >= hlen || tail == NULL || tlen == 0) {
            const char *at = sent < hlen ? head + sent : tail + (sent - hlen);
            Py_ssize_t left = total - sent;
            Py_BEGIN_ALLOW_THREADS
            n = send(fd, at, (size_t)left, MSG_NOSIGNAL);
            err = errno;
            Py_END_ALLOW_THREADS
        } else {
            struct iovec iov[2];
            iov[0].iov_base = (void *)(head + sent);
            iov[0].iov_len = (size_t)(hlen - sent);
            iov[1].iov_base = (void *)tail;
            iov[1].iov_len = (size_t)tlen;
            struct msghdr m;
            memset(&m, 0, sizeof m);
            m.msg_iov = iov;
            m.msg_iovlen = 2;
            Py_BEGIN_ALLOW_THREADS
            n = sendmsg(fd, &m, MSG_NOSIGNAL);
            err = errno;
            Py_END_ALLOW_THREADS
        }
        if (n >= 0) {
            sent += n;
        } else if (err != EINTR) {
            return err > 0 ? err : EIO;
        } else if (PyErr_CheckSignals() < 0) {
            return -1;
        }
    }
    return 0;
}

/* The tail argument of exchange and send_request: NULL for None. */
static PyObject *
tail_argument(PyObject *tail)
{
    return tail == Py_None ? NULL : tail;
}

PyDoc_STRVAR(send_request_doc,
"send_request(fd, prefix, request_id_at, request_id, little, nodes, args, tail)\n--\n\n"
"A oneway call over the blocking socket `fd`: the Request (the first six arguments\n"
"after fd as encode_request's) sent whole, nothing read.  `tail`: None, or the last\n"
"argument (bytes, for an octet sequence) when its octets go after the encoded bytes\n"
"without being copied into them (sendmsg).  Gives None: not encoded (nothing sent);\n"
"0: sent; an int > 0: the errno of a failed send (part of the Request may have gone).");

static PyObject *
speedups_send_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "send_request(fd, prefix, request_id_at, "
                        "request_id, little, nodes, args, tail)");
        return NULL;
    }
    int fd = PyObject_AsFileDescriptor(args[0]);
    if (fd < 0) return NULL;
    Py_ssize_t at;
    unsigned long request_id;
    int little;
    if (request_arguments(args + 1, &at, &request_id, &little) < 0) return NULL;
    PyObject *tail = tail_argument(args[7]);
    PyObject *request = request_bytes(args[1], at, request_id, little, args[5], args[6], tail);
    if (request == NULL || request == Py_None) return request;
    Py_XINCREF(tail);           /* (held while the GIL is released) */
    int rc = send_whole(fd, PyBytes_AS_STRING(request), PyBytes_GET_SIZE(request),
                        tail != NULL ? PyBytes_AS_STRING(tail) : NULL,
                        tail != NULL ? PyBytes_GET_SIZE(tail) : 0);
    Py_XDECREF(tail);
    Py_DECREF(request);
    return rc < 0 ? NULL : PyLong_FromLong(rc);
}

/* -- 12.3 exchange: the blocking client's twoway call ---------------------- */

PyDoc_STRVAR(exchange_doc,
"exchange(fd, prefix, request_id_at, request_id, little, nodes, args, result_nodes,\n"
"         buffer, limit, tail=None, poll_ns=0)\n--\n\n"
"A twoway call over the blocking socket `fd`: the Request (the first six arguments\n"
"after fd as encode_request's; `tail` as send_request's) sent whole, then reads\n"
"into `buffer` (a bytearray) until one\n"
"message of at most `limit` bytes is complete.  Gives None: not encoded (nothing\n"
"sent); an int: the errno of a failed send (part of the Request may have gone);\n"
"(size, values): the Reply came alone and whole, NO_EXCEPTION to this request, its\n"
"values decoded by `result_nodes`; bytes: what was read otherwise (maybe nothing: the\n"
"end of the stream, a failed or timed-out read), for the general path.  `poll_ns`:\n"
"how long each read polls the socket before it sleeps (see recv_polled).");

static PyObject *
speedups_exchange(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 10 || nargs > 12 || !PyByteArray_CheckExact(args[8])) {
        PyErr_SetString(PyExc_TypeError, "exchange(fd, prefix, request_id_at, request_id, "
                        "little, nodes, args, result_nodes, buffer: bytearray, limit, "
                        "tail=None, poll_ns=0)");
        return NULL;
    }
    int64_t poll_ns = nargs == 12 ? poll_argument(args[11]) : 0;
    if (poll_ns < 0) return NULL;
    int fd = PyObject_AsFileDescriptor(args[0]);
    if (fd < 0) return NULL;
    Py_ssize_t at, limit = PyLong_AsSsize_t(args[9]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    unsigned long request_id;
    int little;
    if (request_arguments(args + 1, &at, &request_id, &little) < 0) return NULL;
    PyObject *tail = nargs >= 11 ? tail_argument(args[10]) : NULL;
    PyObject *request = request_bytes(args[1], at, request_id, little, args[5], args[6], tail);
    if (request == NULL || request == Py_None) return request;

    /* Send it all. */
    Py_XINCREF(tail);           /* (held while the GIL is released) */
    int rc = send_whole(fd, PyBytes_AS_STRING(request), PyBytes_GET_SIZE(request),
                        tail != NULL ? PyBytes_AS_STRING(tail) : NULL,
                        tail != NULL ? PyBytes_GET_SIZE(tail) : 0);
    Py_XDECREF(tail);
    Py_DECREF(request);
    if (rc != 0) return rc < 0 ? NULL : PyLong_FromLong(rc);

    /* Read until one message is complete, or anything else happens. */
    Py_buffer view;
    if (PyObject_GetBuffer(args[8], &view, PyBUF_WRITABLE) < 0) return NULL;
    unsigned char *buf = view.buf;
    Py_ssize_t cap = view.len < limit ? view.len : limit, got = 0, total = -1;
    int signalled = 0;
    PyThreadState *released = PyEval_SaveThread();
    while (total < 0 || got < total) {
        ssize_t n = recv_polled(fd, buf + got, (size_t)(view.len - got), poll_ns);
        if (n == POLL_MISSED) {
            if (poll_ns > 0 && got == 0) {
                /* A signal that came while the socket was polled interrupted no
                 * system call: its handler runs now, before the read sleeps, as it
                 * would have run when the sleeping recv was interrupted (an exception
                 * it raises is the call's, the Request in flight, as on the general
                 * path).  Not once part of the Reply is read: that would be lost. */
                PyEval_RestoreThread(released);
                signalled = PyErr_CheckSignals() < 0;
                released = PyEval_SaveThread();
                if (signalled) break;
            }
            n = recv(fd, buf + got, (size_t)(view.len - got), 0);
        }
        if (n <= 0) break;          /* end of stream, timeout, error, signal */
        got += n;
        if (total < 0 && got >= 12) {
            if (memcmp(buf, "GIOP", 4) != 0) break;
            total = (Py_ssize_t)load32(buf + 8, (buf[6] & 1) != NATIVE_LITTLE) + 12;
            if (total > cap) break;
        }
        if (got == view.len) break;
    }
    PyEval_RestoreThread(released);
    if (signalled) {
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *out = NULL;
    uint32_t rid;
    Py_ssize_t body;
    int reply_little;
    if (got == total && total <= cap && reply_head(buf, got, &rid, &body, &reply_little) &&
            rid == (uint32_t)request_id) {
        PyObject *values = reply_values(buf, got, body, reply_little, args[7]);
        if (values != NULL)
            out = Py_BuildValue("(nN)", got, values);
        else if (PyErr_Occurred())
            goto done;
    }
    if (out == NULL)
        out = PyBytes_FromStringAndSize((const char *)buf, got);
done:
    PyBuffer_Release(&view);
    return out;
}

/* -- 12.4 serve_exchange: the threaded server's read, Requests served ------ */

PyDoc_STRVAR(serve_exchange_doc,
"serve_exchange(fd, table, outstanding, buffer, limit, pause, incomplete=None,\n"
"               poll_ns=0)\n--\n\n"
"The threaded server's read of the blocking socket `fd` into `buffer` (a bytearray),\n"
"with the GIL released.  The whole Requests of at most `limit` bytes each that\n"
"serve_request takes (`table`, `outstanding`: its), from the read's start on, are\n"
"served so, in order (`pause`: a context manager held while their servants run):\n"
"each twoway one's Reply sent, nothing for a oneway one.  When the read ends inside a\n"
"message of at most `limit` bytes, its rest is read too (`incomplete`: the seconds\n"
"each part may take, None: no limit; as the general path reads a started message).\n"
"Gives n > 0: the read was one such Request of n bytes, served; -errno: a Reply's\n"
"send failed; (taken, served, ran, rest, status): the first `taken` bytes read were\n"
"Requests served, `served` of them answered in C, and when `ran` is not None the\n"
"last one's servant ran and the general path answers it (`ran` as serve_request's\n"
"tuple); `rest` (bytes): what was read past them, for the general path; `status`: 0,\n"
"or how reading a started message's rest ended (-1: the end of the stream, else an\n"
"errno, EAGAIN: `incomplete` passed).  Nothing taken and nothing more read gives\n"
"(bytes read, 0), or (b'', -1) at the end of the stream, (b'', errno) when the read\n"
"failed (EAGAIN: the socket's wait limit passed); nothing ran.  None: the C path is\n"
"off (nothing read).  `poll_ns`: how long each read polls the socket before it sleeps\n"
"(see recv_polled).");

/* The size of the message starting buf[:len] when it is a GIOP Request of at most
 * `limit` bytes (its header whole), else 0; *whole: all of it is in buf[:len]. */
static Py_ssize_t
serve_request_size(const unsigned char *buf, Py_ssize_t len, Py_ssize_t limit, int *whole)
{
    *whole = 0;
    if (len < 12 || memcmp(buf, "GIOP", 4) != 0 || buf[7] != 0) return 0;
    uint64_t total = (uint64_t)load32(buf + 8, (buf[6] & 1) != NATIVE_LITTLE) + 12;
    if (total > (uint64_t)limit) return 0;
    *whole = total <= (uint64_t)len;
    return (Py_ssize_t)total;
}

/* Read into buf[*have:want] until it is full, waiting up to timeout_ms (-1: no limit)
 * for each part, as the general path reads a started message (each recv bounded by
 * its incomplete-message time).  0: done; -1: the end of the stream; an errno > 0
 * (EAGAIN: the wait passed); -2 with an error set: a signal handler raised. */
static int
serve_read_rest(int fd, unsigned char *buf, Py_ssize_t *have, Py_ssize_t want, int timeout_ms,
                int64_t poll_ns)
{
    while (*have < want) {
        ssize_t n;
        int err = 0;
        Py_BEGIN_ALLOW_THREADS
        struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
        /* (polled first: the rest of a large message is usually microseconds away) */
        int ready = poll_ns > 0 && poll_ready(fd, poll_ns) ? 1 : poll(&p, 1, timeout_ms);
        if (ready > 0) {
            n = recv(fd, buf + *have, (size_t)(want - *have), 0);
            err = errno;
        } else {
            n = -1;
            err = ready == 0 ? EAGAIN : errno;
        }
        Py_END_ALLOW_THREADS
        if (n > 0) {
            *have += n;
        } else if (n == 0) {
            return -1;
        } else if (err != EINTR) {
            return err > 0 ? err : EIO;
        } else if (PyErr_CheckSignals() < 0) {
            return -2;
        }
    }
    return 0;
}

/* The pause (a context manager) entered (1) or left (0); -1 with an error set. */
static int
serve_pause(PyObject *pause, int enter)
{
    PyObject *held = enter ? PyObject_CallMethod(pause, "__enter__", NULL)
                           : PyObject_CallMethod(pause, "__exit__", "OOO", Py_None, Py_None,
                                                 Py_None);
    if (held == NULL) return -1;
    Py_DECREF(held);
    return 0;
}

static PyObject *
speedups_serve_exchange(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 6 || nargs > 8 || !PyDict_Check(args[1]) || !PyAnySet_Check(args[2]) ||
            !PyByteArray_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "serve_exchange(fd, table: dict, outstanding: set, "
                        "buffer: bytearray, limit, pause, incomplete=None, poll_ns=0)");
        return NULL;
    }
    int on = c_path_on();
    if (on <= 0) {
        if (on < 0) return NULL;
        Py_RETURN_NONE;
    }
    int fd = PyObject_AsFileDescriptor(args[0]);
    if (fd < 0) return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[4]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    int timeout_ms = -1;
    int64_t poll_ns = nargs == 8 ? poll_argument(args[7]) : 0;
    if (poll_ns < 0) return NULL;
    if (nargs >= 7 && args[6] != Py_None) {
        double seconds = PyFloat_AsDouble(args[6]);
        if (seconds == -1.0 && PyErr_Occurred()) return NULL;
        /* (at least 1 ms, at most about 24 days: poll's int) */
        timeout_ms = !(seconds < 2e6) ? 2000000000 : seconds <= 0.001 ? 1
                     : (int)(seconds * 1000.0 + 0.999);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[3], &view, PyBUF_WRITABLE) < 0) return NULL;
    /* (the buffer stays exported until the end: the servants cannot resize it under
     * the Requests still to serve) */
    unsigned char *buf = view.buf;
    if (limit > view.len) limit = view.len;     /* (a message to read whole fits) */
    ssize_t got;
    int err;
    Py_BEGIN_ALLOW_THREADS
    got = recv_polled(fd, buf, (size_t)view.len, poll_ns);
    if (got == POLL_MISSED)     /* (a server's thread: signal handlers run elsewhere) */
        got = recv(fd, buf, (size_t)view.len, 0);
    err = errno;
    Py_END_ALLOW_THREADS
    PyObject *out = NULL, *ran = NULL;
    if (got <= 0) {
        out = Py_BuildValue("(y#i)", "", (Py_ssize_t)0, got == 0 ? -1 : err);
        goto release;
    }
    /* Serve the whole Requests the read begins with, one after another (a client
     * that does not wait for replies, making oneway calls, sends many before a read);
     * a Request the read ends inside is read whole first (the rest of a large one
     * comes in a later segment: 64 KiB of loopback's), moved to the buffer's start. */
    Py_ssize_t have = got, pos = 0, taken = 0, served = 0;
    int status = 0, failed = 0, paused = 0, more = 0, whole;
    for (;;) {
        Py_ssize_t size = serve_request_size(buf + pos, have - pos, limit, &whole);
        if (size == 0) break;
        if (!whole) {
            if (paused) {                       /* (not held while waiting) */
                paused = 0;
                if (serve_pause(args[5], 0) < 0) { failed = 1; break; }
            }
            memmove(buf, buf + pos, (size_t)(have - pos));
            have -= pos;
            pos = 0;
            more = 1;
            status = serve_read_rest(fd, buf, &have, size, timeout_ms, poll_ns);
            if (status == -2) { failed = 1; break; }
            if (status != 0) break;
        }
        if (!paused) {
            if (serve_pause(args[5], 1) < 0) { failed = 1; break; }
            paused = 1;
        }
        PyObject *arguments = NULL;
        PyObject *done = serve_view(buf + pos, size, args[1], args[2], &arguments);
        if (done == NULL || done == Py_None || !PyBytes_Check(done))
            Py_XDECREF(arguments);
        if (done == NULL) { failed = 1; break; }
        if (done == Py_None) { Py_DECREF(done); break; }
        pos += size;
        taken += size;
        if (!PyBytes_Check(done)) {     /* the servant ran: the general path answers */
            ran = done;
            break;
        }
        /* The Reply (none for a oneway), sent all; then the arguments freed. */
        int rc = send_whole(fd, PyBytes_AS_STRING(done), PyBytes_GET_SIZE(done), NULL, 0);
        release_arguments(arguments);
        Py_DECREF(done);
        if (rc != 0) {
            failed = 1;
            if (rc > 0) out = PyLong_FromLong(-(long)rc);
            break;
        }
        served++;
    }
    if (paused) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);    /* (__exit__ runs whatever happened) */
        if (serve_pause(args[5], 0) < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            Py_CLEAR(out);
            goto release;
        }
        PyErr_Restore(type, value, tb);
    }
    if (failed) goto release;
    if (pos == have && served == 1 && ran == NULL && status == 0) {
        out = PyLong_FromSsize_t(taken);        /* the usual twoway call */
        goto release;
    }
    if (taken > 0 || more) {
        out = Py_BuildValue("(nnOy#i)", taken, served, ran != NULL ? ran : Py_None,
                            (const char *)buf + pos, (Py_ssize_t)(have - pos), status);
        goto release;
    }
    out = Py_BuildValue("(y#i)", (const char *)buf, (Py_ssize_t)have, 0);
release:
    Py_XDECREF(ran);
    PyBuffer_Release(&view);
    return out;
}
#endif

/* ==========================================================================
 * 13. The module: its method table and PyInit__speedups
 * ========================================================================== */

static PyMethodDef speedups_methods[] = {
    {"read", (PyCFunction)(void (*)(void))speedups_read, METH_FASTCALL, read_doc},
    {"write", (PyCFunction)(void (*)(void))speedups_write, METH_FASTCALL, write_doc},
    {"encode", (PyCFunction)(void (*)(void))speedups_encode, METH_FASTCALL, encode_doc},
    {"touches_context", speedups_touches_context, METH_O, touches_context_doc},
    {"entry", (PyCFunction)(void (*)(void))speedups_entry, METH_FASTCALL, entry_doc},
    {"configure", (PyCFunction)(void (*)(void))speedups_configure, METH_FASTCALL,
     configure_doc},
    {"decode_common_12", (PyCFunction)(void (*)(void))speedups_decode_common_12,
     METH_FASTCALL, decode_common_12_doc},
    {"configure_giop", (PyCFunction)(void (*)(void))speedups_configure_giop, METH_FASTCALL,
     configure_giop_doc},
    {"frame_common_12", (PyCFunction)(void (*)(void))speedups_frame_common_12,
     METH_FASTCALL, frame_common_12_doc},
    {"frame_chain_12", (PyCFunction)(void (*)(void))speedups_frame_chain_12,
     METH_FASTCALL, frame_chain_12_doc},
    {"serve_request", (PyCFunction)(void (*)(void))speedups_serve_request, METH_FASTCALL,
     serve_request_doc},
    {"encode_request", (PyCFunction)(void (*)(void))speedups_encode_request, METH_FASTCALL,
     encode_request_doc},
    {"decode_reply", (PyCFunction)(void (*)(void))speedups_decode_reply, METH_FASTCALL,
     decode_reply_doc},
#ifndef _WIN32
    {"exchange", (PyCFunction)(void (*)(void))speedups_exchange, METH_FASTCALL, exchange_doc},
    {"send_request", (PyCFunction)(void (*)(void))speedups_send_request, METH_FASTCALL,
     send_request_doc},
    {"serve_exchange", (PyCFunction)(void (*)(void))speedups_serve_exchange, METH_FASTCALL,
     serve_exchange_doc},
    {"poll_counts", speedups_poll_counts, METH_NOARGS, poll_counts_doc},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "pycdr.codec._speedups",
    "The marshal plans of pycdr.codec.plan, run in C (see pycdr/codec/_speedups.c).", -1,
    speedups_methods,
};

static int
intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL) return NULL;
    if (intern(&s_read, "read") || intern(&s_write, "write") || intern(&s_pos, "pos") ||
        intern(&s_depth, "depth") || intern(&s_c, "_c") || intern(&s_op, "op") ||
        intern(&s_buf, "buf") || intern(&s_origin, "origin") || intern(&s_little, "little") ||
        intern(&s_typecode, "typecode") || intern(&s_d, "_d") || intern(&s_v, "_v") ||
        intern(&s_init, "__init__") || intern(&s_frombytes, "frombytes") || intern(&s_enabled, "enabled") || intern(&s_plans, "_plans") || intern(&s_ordinal, "ordinal") || intern(&s_disc, "disc"))
        goto fail;
    Fallback = PyErr_NewExceptionWithDoc(
        "pycdr.codec._speedups.Fallback",
        "Internal: the C path met something only the Python path may judge.", NULL, NULL);
    if (Fallback == NULL || PyModule_AddObjectRef(m, "Fallback", Fallback) < 0) goto fail;
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL) goto fail;
    for (int k = 0; k < KW_COUNT; k++)
        if (intern(&keyword_names[k], keyword_texts[k])) goto fail;
    if (PyModule_AddType(m, &Entry_Type) < 0) goto fail;
    PyObject *mod = PyImport_ImportModule("array");
    if (mod == NULL) goto fail;
    array_type = PyObject_GetAttrString(mod, "array");
    Py_DECREF(mod);
    if (array_type == NULL) goto fail;
    array_frombytes = PyObject_GetAttr(array_type, s_frombytes);
    if (array_frombytes == NULL) goto fail;
    mod = PyImport_ImportModule("pycdr.codec.values");
    if (mod == NULL) goto fail;
    PyObject *struct_base = PyObject_GetAttrString(mod, "Struct");
    union_base = PyObject_GetAttrString(mod, "Union");
    Py_DECREF(mod);
    if (struct_base == NULL || union_base == NULL) { Py_XDECREF(struct_base); goto fail; }
    struct_base_init = PyObject_GetAttrString(struct_base, "__init__");
    Py_DECREF(struct_base);
    if (struct_base_init == NULL) goto fail;
    exception_init = PyObject_GetAttrString(PyExc_Exception, "__init__");
    if (exception_init == NULL) goto fail;
    mod = PyImport_ImportModule("pycdr.codec.plan");
    if (mod == NULL) goto fail;
    PyObject *md = PyObject_GetAttrString(mod, "MAX_DEPTH");
    PyObject *gpm = PyObject_GetAttrString(mod, "GC_PAUSE_MIN");
    Py_DECREF(mod);
    if (md == NULL || gpm == NULL) { Py_XDECREF(md); Py_XDECREF(gpm); goto fail; }
    max_depth = PyLong_AsLong(md);
    gc_pause_min = PyLong_AsSsize_t(gpm);
    Py_DECREF(md);
    Py_DECREF(gpm);
    if (PyErr_Occurred()) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
