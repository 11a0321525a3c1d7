/* Compiled lift and lower of fixed-shape value types (CanonicalABI.md
 * §"Loading" and §"Flat Lowering").
 *
 * Part of ``polyengine.engine._accel``.  ``abi/kernels.py`` compiles a value
 * type into a *program*: nested tuples of plain data (an opcode first, see
 * the OP_ constants), which the interpreter below runs.  Its users: the
 * callable types of ``_accel_valuetypes.c`` (each holding the Python codec it
 * stands in for) and the compiled export call (``Export`` with a plan, whose
 * steps are at the end of this file).
 *
 * - Lowering parameters passed flat (``lower_flat_values``): a first pass
 *   only looks at the values; anything it does not accept exactly (another
 *   type, a value out of range, a string that is not valid UTF-8, a missing
 *   or extra key) hands the whole call to the Python codec before anything
 *   happened, so it raises its own error.  The second
 *   pass stores strings and ``list<u8>`` through the guest's realloc (in the
 *   Python codec's order) and appends the core values.
 * - Lifting a result returned through a pointer (``lift_flat_values`` past
 *   MAX_FLAT_RESULTS).  Reading has no effect, so any doubt (a bad pointer or
 *   discriminant, invalid UTF-8, the lift budget spent) reruns the Python
 *   codec from the start, which traps with its own code and message.
 *
 * Only utf8 strings and 32-bit memories are compiled; other types have no
 * program and keep the Python codecs.
 *
 * Guest memory and realloc: ``_accel_guest.c``.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_accel.h"

enum {
    OP_BOOL = 0,    /* (op,) */
    OP_INT = 1,     /* (op, size, signed) */
    OP_STR = 2,     /* (op,) utf8 */
    OP_BYTES = 3,   /* (op,) list<u8> */
    OP_RECORD = 4,  /* (op, keys, children, offsets, optional) */
    OP_TUPLE = 5,   /* (op, children, offsets) */
    OP_OPTION = 6,  /* (op, child, payload_off, disc_size, pad_some, pad_none) */
    OP_VARIANT = 7, /* (op, kinds, children, index, payload_off, disc_size, pads, optional) */
    OP_ENUM = 8,    /* (op, labels, index, disc_size) */
    OP_FLAGS = 9,   /* (op, names, bits, size) */
};

#define MAX_BYTES ((1 << 28) - 1)
#define DEPTH_LIMIT 64
PyObject *accel_str_budget = NULL;
static PyObject *str_kind = NULL;
static PyObject *str_value = NULL;
static PyObject *str_mv = NULL;

#define ITEM(node, k) PyTuple_GET_ITEM((node), (k))
#define IARG(node, k) small_arg(ITEM((node), (k)))

/* A program's integer (an opcode, a size, an offset): read at once when it
 * is one small exact int, as most are; else PyLong_AsSsize_t. */
static inline Py_ssize_t
small_arg(PyObject *o)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o))
        return (Py_ssize_t)PyUnstable_Long_CompactValue((PyLongObject *)o);
#else
    if (PyLong_CheckExact(o) && (Py_SIZE(o) == 0 || Py_SIZE(o) == 1))
        return Py_SIZE(o) == 0 ? 0 : (Py_ssize_t)((PyLongObject *)o)->ob_digit[0];
#endif
    return PyLong_AsSsize_t(o);
}

/* -- the first pass: does the kernel take this value exactly? ----------- */

/* 1: yes, 0: no (no exception), -1: an exception; memo (or NULL) keeps the
 * record fields looked up */
static int check(PyObject *node, PyObject *v, int depth, AccelMemo *memo);

void
accel_memo_clear(AccelMemo *memo)
{
    for (int k = 0; k < memo->n; k++)
        Py_DECREF(memo->items[k]);
    memo->n = 0;
    memo->full = 0;
}

static void
memo_keep(AccelMemo *memo, PyObject *x)
{
    if (memo == NULL || memo->full)
        return;
    if (memo->n == ACCEL_MEMO_SIZE) {
        memo->full = 1;
        return;
    }
    memo->items[memo->n++] = Py_NewRef(x);
}

static int
check_int(PyObject *node, PyObject *v)
{
    if (!PyLong_CheckExact(v))
        return 0;
    Py_ssize_t size = IARG(node, 1);
    int is_signed = (int)IARG(node, 2);
    if (is_signed) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow)
            return 0;
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (size < 8) {
            long long lim = 1LL << (size * 8 - 1);
            return x >= -lim && x < lim;
        }
        return 1;
    }
    if (_PyLong_Sign(v) < 0)
        return 0;
    unsigned long long x = accel_as_u64(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    return size >= 8 || x < (1ULL << (size * 8));
}

static int
check_seq(PyObject *children, PyObject *const *items, Py_ssize_t n, int depth, AccelMemo *memo)
{
    if (PyTuple_GET_SIZE(children) != n)
        return 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int r = check(PyTuple_GET_ITEM(children, k), items[k], depth + 1, memo);
        if (r != 1)
            return r;
    }
    return 1;
}

int
accel_check_seq(PyObject *children, PyObject *const *items, Py_ssize_t n, int depth)
{
    return check_seq(children, items, n, depth, NULL);
}

static int
check(PyObject *node, PyObject *v, int depth, AccelMemo *memo)
{
    if (depth > DEPTH_LIMIT)
        return 0;
    switch (IARG(node, 0)) {
    case OP_BOOL:
        return v == Py_True || v == Py_False;
    case OP_INT:
        return check_int(node, v);
    case OP_STR: {
        if (!PyUnicode_CheckExact(v))
            return 0;
        Py_ssize_t n;
        if (PyUnicode_AsUTF8AndSize(v, &n) == NULL) { /* a lone surrogate */
            if (!PyErr_ExceptionMatches(PyExc_UnicodeError))
                return -1;
            PyErr_Clear();
            return 0;
        }
        return n <= MAX_BYTES;
    }
    case OP_BYTES:
        return PyBytes_CheckExact(v) && PyBytes_GET_SIZE(v) <= MAX_BYTES;
    case OP_RECORD: {
        if (!PyDict_CheckExact(v))
            return 0;
        PyObject *keys = ITEM(node, 1), *children = ITEM(node, 2), *optional = ITEM(node, 4);
        Py_ssize_t found = 0;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(keys); k++) {
            PyObject *x = PyDict_GetItemWithError(v, PyTuple_GET_ITEM(keys, k));
            if (x == NULL) {
                if (PyErr_Occurred())
                    return -1;
                if (PyTuple_GET_ITEM(optional, k) != Py_True)
                    return 0;
                x = Py_None;
            }
            else
                found++;
            memo_keep(memo, x);
            int r = check(PyTuple_GET_ITEM(children, k), x, depth + 1, memo);
            if (r != 1)
                return r;
        }
        return found == PyDict_GET_SIZE(v); /* else a key that is no field */
    }
    case OP_TUPLE: {
        PyObject *children = ITEM(node, 1);
        if (PyTuple_CheckExact(v))
            return check_seq(children, &PyTuple_GET_ITEM(v, 0), PyTuple_GET_SIZE(v), depth,
                             memo);
        if (PyList_CheckExact(v))
            return check_seq(children, &PyList_GET_ITEM(v, 0), PyList_GET_SIZE(v), depth, memo);
        return 0;
    }
    case OP_OPTION:
        return v == Py_None ? 1 : check(ITEM(node, 1), v, depth + 1, memo);
    case OP_VARIANT: {
        if (!PyDict_CheckExact(v))
            return 0;
        PyObject *kind = PyDict_GetItemWithError(v, str_kind);
        if (kind == NULL)
            return PyErr_Occurred() ? -1 : 0;
        if (!PyUnicode_CheckExact(kind))
            return 0;
        PyObject *index = PyDict_GetItemWithError(ITEM(node, 3), kind);
        if (index == NULL)
            return PyErr_Occurred() ? -1 : 0;
        PyObject *child = PyTuple_GET_ITEM(ITEM(node, 2), PyLong_AsSsize_t(index));
        if (child == Py_None)
            return PyDict_GET_SIZE(v) == 1;
        if (PyDict_GET_SIZE(v) != 2)
            return 0;
        PyObject *value = PyDict_GetItemWithError(v, str_value);
        if (value == NULL)
            return PyErr_Occurred() ? -1 : 0;
        return check(child, value, depth + 1, memo);
    }
    case OP_ENUM: {
        if (!PyUnicode_CheckExact(v))
            return 0;
        PyObject *index = PyDict_GetItemWithError(ITEM(node, 2), v);
        return index != NULL ? 1 : (PyErr_Occurred() ? -1 : 0);
    }
    case OP_FLAGS: {
        if (!PyDict_CheckExact(v))
            return 0;
        PyObject *bits = ITEM(node, 2), *key, *b;
        Py_ssize_t pos = 0;
        while (PyDict_Next(v, &pos, &key, &b)) {
            if (!PyUnicode_CheckExact(key) || (b != Py_True && b != Py_False))
                return 0;
            PyObject *bit = PyDict_GetItemWithError(bits, key);
            if (bit == NULL)
                return PyErr_Occurred() ? -1 : 0;
        }
        return 1;
    }
    }
    return 0;
}

/* -- the second pass: store and flatten ----------------------------------- */

#define MAX_FLAT 16 /* MAX_FLAT_PARAMS: the most core values a plan's lower makes */

typedef struct {
    AccelValueCx *v;
    PyObject *block_trap; /* block_trap(cx, what, ptr, nbytes, align): raises */
    PyObject *out;        /* the list of core values, or NULL: they go to flat */
    AccelMemo *memo;      /* the record fields check() looked up, or NULL */
    int at;               /* the next of them */
    Py_ssize_t nflat;     /* how many core values flat holds (references) */
    PyObject *flat[MAX_FLAT];
} Lowering;

/* Append a core value (a new reference, consumed; NULL: an error is set). */
static int
emit(Lowering *lw, PyObject *o)
{
    if (o == NULL)
        return -1;
    if (lw->out == NULL) {
        if (lw->nflat < MAX_FLAT) {
            lw->flat[lw->nflat++] = o;
            return 0;
        }
        Py_DECREF(o);
        PyErr_SetString(PyExc_SystemError, "a plan's lower made more core values than it may");
        return -1;
    }
    int r = PyList_Append(lw->out, o);
    Py_DECREF(o);
    return r;
}

static int
append_u64(Lowering *lw, unsigned long long x)
{
    return emit(lw, PyLong_FromUnsignedLongLong(x));
}

static int
append_zeros(Lowering *lw, Py_ssize_t n)
{
    int r = 0;
    for (Py_ssize_t k = 0; k < n && r == 0; k++)
        r = emit(lw, PyLong_FromLong(0));
    return r;
}

/* allocate(cx, n), the block checked as the Python codec checks it, then
 * the bytes copied in; appends (ptr, units) */
static int
store_block(Lowering *lw, const char *data, Py_ssize_t n, const char *what)
{
    PyObject *ptr_obj = accel_allocate(lw->v, n);
    if (ptr_obj == NULL)
        return -1;
    unsigned long long ptr = accel_as_u64(ptr_obj);
    if (ptr == (unsigned long long)-1 && PyErr_Occurred()) {
        Py_DECREF(ptr_obj);
        return -1;
    }
    AccelBytes mem;
    if (accel_bytes_of(lw->v, &mem, 1) < 0) {
        Py_DECREF(ptr_obj);
        return -1;
    }
    int ok = ptr + (unsigned long long)n <= mem.len;
    if (ok && n > 0)
        memmove(mem.base + ptr, data, (size_t)n);
    accel_bytes_release(&mem);
    if (!ok) {
        PyObject *cx = accel_vcx_cx(lw->v);
        PyObject *r = cx == NULL ? NULL : PyObject_CallFunction(
            lw->block_trap, "OsOni", cx, what, ptr_obj, n, 1);
        Py_XDECREF(r);
        Py_DECREF(ptr_obj);
        if (r != NULL)
            PyErr_SetString(PyExc_AssertionError, "the block trap did not raise");
        return -1;
    }
    return emit(lw, ptr_obj) < 0 ? -1 : append_u64(lw, (unsigned long long)n);
}

static int lower(Lowering *lw, PyObject *node, PyObject *v);

static int
lower_seq(Lowering *lw, PyObject *children, PyObject *v)
{
    /* v is the tuple or list check() accepted; guest code (realloc) cannot
     * reach host objects, so it still has its length */
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(children); k++) {
        PyObject *x = PyTuple_Check(v) ? PyTuple_GET_ITEM(v, k) : PyList_GET_ITEM(v, k);
        Py_INCREF(x);
        int r = lower(lw, PyTuple_GET_ITEM(children, k), x);
        Py_DECREF(x);
        if (r < 0)
            return -1;
    }
    return 0;
}

static int
lower(Lowering *lw, PyObject *node, PyObject *v)
{
    switch (IARG(node, 0)) {
    case OP_BOOL:
        return append_u64(lw, v == Py_True);
    case OP_INT: {
        if (!IARG(node, 2))
            return emit(lw, Py_NewRef(v));
        long long x = accel_as_s64(v);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (IARG(node, 1) <= 4)
            return append_u64(lw, (unsigned long long)(uint32_t)x);
        return append_u64(lw, (unsigned long long)x);
    }
    case OP_STR: {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        return s == NULL ? -1 : store_block(lw, s, n, "string");
    }
    case OP_BYTES: {
        /* the same object check() saw: immutable */
        return store_block(lw, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), "list");
    }
    case OP_RECORD: {
        PyObject *keys = ITEM(node, 1), *children = ITEM(node, 2);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(keys); k++) {
            PyObject *x;
            if (lw->memo != NULL && !lw->memo->full && lw->at < lw->memo->n)
                x = lw->memo->items[lw->at++]; /* check() visited the fields in this order */
            else {
                x = PyDict_GetItemWithError(v, PyTuple_GET_ITEM(keys, k));
                if (x == NULL && PyErr_Occurred())
                    return -1;
                x = x == NULL ? Py_None : x;
            }
            Py_INCREF(x);
            int r = lower(lw, PyTuple_GET_ITEM(children, k), x);
            Py_DECREF(x);
            if (r < 0)
                return -1;
        }
        return 0;
    }
    case OP_TUPLE:
        return lower_seq(lw, ITEM(node, 1), v);
    case OP_OPTION:
        if (v == Py_None)
            return append_u64(lw, 0) < 0 ? -1 : append_zeros(lw, IARG(node, 5));
        if (append_u64(lw, 1) < 0 || lower(lw, ITEM(node, 1), v) < 0)
            return -1;
        return append_zeros(lw, IARG(node, 4));
    case OP_VARIANT: {
        PyObject *index = PyDict_GetItemWithError(
            ITEM(node, 3), PyDict_GetItemWithError(v, str_kind));
        if (index == NULL)
            return -1;
        Py_ssize_t i = PyLong_AsSsize_t(index);
        PyObject *child = PyTuple_GET_ITEM(ITEM(node, 2), i);
        Py_ssize_t pad = PyLong_AsSsize_t(PyTuple_GET_ITEM(ITEM(node, 6), i));
        if (append_u64(lw, (unsigned long long)i) < 0)
            return -1;
        if (child != Py_None) {
            PyObject *x = PyDict_GetItemWithError(v, str_value);
            if (x == NULL)
                return -1;
            Py_INCREF(x);
            int r = lower(lw, child, x);
            Py_DECREF(x);
            if (r < 0)
                return -1;
        }
        return append_zeros(lw, pad);
    }
    case OP_ENUM: {
        PyObject *index = PyDict_GetItemWithError(ITEM(node, 2), v);
        return index == NULL ? -1 : emit(lw, Py_NewRef(index));
    }
    case OP_FLAGS: {
        PyObject *bits = ITEM(node, 2), *key, *b;
        Py_ssize_t pos = 0;
        unsigned long long word = 0;
        while (PyDict_Next(v, &pos, &key, &b)) {
            if (b == Py_True)
                word |= PyLong_AsUnsignedLongLong(PyDict_GetItem(bits, key));
        }
        return append_u64(lw, word);
    }
    }
    PyErr_SetString(PyExc_SystemError, "bad value program");
    return -1;
}

/* -- reading -------------------------------------------------------------- */

typedef struct {
    const unsigned char *base;
    unsigned long long len;
    long long budget;
    int charged;
} Lifting;

static unsigned long long
read_le(const unsigned char *p, Py_ssize_t size)
{
    unsigned long long x = 0;
    for (Py_ssize_t k = size - 1; k >= 0; k--)
        x = (x << 8) | p[k];
    return x;
}

/* a new reference; NULL without an exception: fall back; NULL with one: error */
static PyObject *
load(Lifting *lf, PyObject *node, unsigned long long ptr, int depth)
{
    if (depth > DEPTH_LIMIT)
        return NULL;
    const unsigned char *p = lf->base + ptr;
    switch (IARG(node, 0)) {
    case OP_BOOL:
        return Py_NewRef(p[0] ? Py_True : Py_False);
    case OP_INT: {
        Py_ssize_t size = IARG(node, 1);
        unsigned long long x = read_le(p, size);
        if (!IARG(node, 2))
            return PyLong_FromUnsignedLongLong(x);
        if (size < 8 && (x >> (size * 8 - 1)) & 1)
            x |= ~0ULL << (size * 8);
        return PyLong_FromLongLong((long long)x);
    }
    case OP_STR:
    case OP_BYTES: {
        unsigned long long at = read_le(p, 4), n = read_le(p + 4, 4);
        if (n > MAX_BYTES || at + n > lf->len)
            return NULL;
        if (IARG(node, 0) == OP_BYTES) {
            lf->budget -= (long long)(2 * n);
            lf->charged = 1;
            if (lf->budget < 0)
                return NULL;
            return PyBytes_FromStringAndSize((const char *)lf->base + at, (Py_ssize_t)n);
        }
        PyObject *s = PyUnicode_DecodeUTF8((const char *)lf->base + at, (Py_ssize_t)n, NULL);
        if (s == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                return NULL;
            PyErr_Clear();
            return NULL;
        }
        lf->budget -= (long long)PyUnicode_GET_LENGTH(s);
        lf->charged = 1;
        if (lf->budget < 0) {
            Py_DECREF(s);
            return NULL;
        }
        return s;
    }
    case OP_RECORD: {
        PyObject *keys = ITEM(node, 1), *children = ITEM(node, 2), *offs = ITEM(node, 3);
        PyObject *d = PyDict_New();
        if (d == NULL)
            return NULL;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(keys); k++) {
            unsigned long long o = (unsigned long long)small_arg(PyTuple_GET_ITEM(offs, k));
            PyObject *x = load(lf, PyTuple_GET_ITEM(children, k), ptr + o, depth + 1);
            if (x == NULL || PyDict_SetItem(d, PyTuple_GET_ITEM(keys, k), x) < 0) {
                Py_XDECREF(x);
                Py_DECREF(d);
                return NULL;
            }
            Py_DECREF(x);
        }
        return d;
    }
    case OP_TUPLE: {
        PyObject *children = ITEM(node, 1), *offs = ITEM(node, 2);
        Py_ssize_t n = PyTuple_GET_SIZE(children);
        PyObject *t = PyTuple_New(n);
        if (t == NULL)
            return NULL;
        for (Py_ssize_t k = 0; k < n; k++) {
            unsigned long long o = (unsigned long long)small_arg(PyTuple_GET_ITEM(offs, k));
            PyObject *x = load(lf, PyTuple_GET_ITEM(children, k), ptr + o, depth + 1);
            if (x == NULL) {
                Py_DECREF(t);
                return NULL;
            }
            PyTuple_SET_ITEM(t, k, x);
        }
        return t;
    }
    case OP_OPTION: {
        unsigned long long i = read_le(p, IARG(node, 3));
        if (i > 1)
            return NULL;
        if (i == 0)
            return Py_NewRef(Py_None);
        return load(lf, ITEM(node, 1), ptr + (unsigned long long)IARG(node, 2), depth + 1);
    }
    case OP_VARIANT: {
        PyObject *kinds = ITEM(node, 1);
        unsigned long long i = read_le(p, IARG(node, 5));
        if (i >= (unsigned long long)PyTuple_GET_SIZE(kinds))
            return NULL;
        PyObject *child = PyTuple_GET_ITEM(ITEM(node, 2), (Py_ssize_t)i);
        PyObject *d = PyDict_New();
        if (d == NULL || PyDict_SetItem(d, str_kind, PyTuple_GET_ITEM(kinds, (Py_ssize_t)i)) < 0) {
            Py_XDECREF(d);
            return NULL;
        }
        if (child != Py_None) {
            PyObject *x = load(lf, child, ptr + (unsigned long long)IARG(node, 4), depth + 1);
            if (x == NULL || PyDict_SetItem(d, str_value, x) < 0) {
                Py_XDECREF(x);
                Py_DECREF(d);
                return NULL;
            }
            Py_DECREF(x);
        }
        return d;
    }
    case OP_ENUM: {
        PyObject *labels = ITEM(node, 1);
        unsigned long long i = read_le(p, IARG(node, 3));
        if (i >= (unsigned long long)PyTuple_GET_SIZE(labels))
            return NULL;
        return Py_NewRef(PyTuple_GET_ITEM(labels, (Py_ssize_t)i));
    }
    case OP_FLAGS: {
        PyObject *names = ITEM(node, 1);
        unsigned long long word = read_le(p, IARG(node, 3));
        PyObject *d = PyDict_New();
        if (d == NULL)
            return NULL;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
            PyObject *b = (word >> k) & 1 ? Py_True : Py_False;
            if (PyDict_SetItem(d, PyTuple_GET_ITEM(names, k), b) < 0) {
                Py_DECREF(d);
                return NULL;
            }
        }
        return d;
    }
    }
    return NULL;
}

/* -- the callables ------------------------------------------------------ */

/* The core values of the values ``vs`` (a tuple or list check_seq took). */
PyObject *
accel_lower_all(AccelValueCx *v, PyObject *programs, PyObject *vs, PyObject *block_trap)
{
    Lowering lw = {v, block_trap, PyList_New(0), NULL, 0, 0, {NULL}};
    if (lw.out == NULL)
        return NULL;
    Py_INCREF(vs); /* keeps the items alive while guest code runs */
    int r = lower_seq(&lw, programs, vs);
    Py_DECREF(vs);
    if (r < 0) {
        Py_DECREF(lw.out);
        return NULL;
    }
    return lw.out;
}

/* The value at the pointer that is the first core result, after the tuple
 * check of lift_flat_values.  1: *out is the value; 0: fall back; -1: an
 * exception.  *budget is what strings and lists may still read; *charged
 * says whether the lift read any. */
int
accel_lift_spilled(AccelValueCx *v, PyObject *program, unsigned long long size,
             unsigned long long align, PyObject *results, long long *budget, int *charged,
             PyObject **out)
{
    PyObject *first = PySequence_GetItem(results, 0);
    if (first == NULL)
        return -1;
    if (!PyLong_Check(first)) {
        Py_DECREF(first);
        return 0;
    }
    unsigned long long ptr = PyLong_AsUnsignedLongLongMask(first);
    Py_DECREF(first);
    if (ptr == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    ptr &= 0xFFFFFFFFULL;
    AccelBytes mem;
    if (accel_bytes_of(v, &mem, 0) < 0)
        return -1;
    PyObject *value = NULL;
    Lifting lf = {mem.base, mem.len, *budget, 0};
    if ((ptr & (align - 1)) == 0 && ptr + size <= lf.len)
        value = load(&lf, program, ptr, 0);
    accel_bytes_release(&mem);
    if (value == NULL)
        return PyErr_Occurred() ? -1 : 0;
    *budget = lf.budget;
    *charged = lf.charged;
    *out = value;
    return 1;
}

/* -- the export call's steps (``Export`` in _accel_export.c) --------------- */

/* plan: (programs, lift, opts, ci, make_cx, block_trap, lift_fallback, realloc,
 * memory, ci_dict), lift being (program, size, align), (program,) for a bool or
 * integer result or None (no result), realloc the specialised call of
 * opts.realloc's core function or None, memory an engine memory's (store state,
 * address, address of the state's cell) or None, ci_dict ci's __dict__ when it
 * holds ``may_leave`` plainly or None */

/* The bool or integer of a program from the first core result, as
 * scalar_lifting (abi/functions.py) converts it: the bits of its width, as its
 * signedness reads them. */
static PyObject *
lift_scalar(PyObject *node, PyObject *results)
{
    PyObject *first = PySequence_GetItem(results, 0);
    if (first == NULL)
        return NULL;
    unsigned long long x = PyLong_AsUnsignedLongLongMask(first);
    Py_DECREF(first);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (IARG(node, 0) == OP_BOOL)
        return Py_NewRef(x ? Py_True : Py_False);
    Py_ssize_t size = IARG(node, 1);
    if (size < 8)
        x &= (1ULL << (size * 8)) - 1;
    if (!IARG(node, 2))
        return PyLong_FromUnsignedLongLong(x);
    if (size < 8 && (x >> (size * 8 - 1)) & 1)
        x |= ~0ULL << (size * 8);
    return PyLong_FromLongLong((long long)x);
}

int
accel_values_check(PyObject *plan, PyObject *const *items, Py_ssize_t n, AccelMemo *memo)
{
    return check_seq(PyTuple_GET_ITEM(plan, 0), items, n, 0, memo);
}

PyObject *
accel_values_call(PyObject *plan, PyObject *core, PyObject *const *items, Py_ssize_t n,
                  AccelMemo *memo)
{
    PyObject *lift = PyTuple_GET_ITEM(plan, 1);
    AccelValueCx v;
    accel_vcx_from_parts(&v, PyTuple_GET_ITEM(plan, 2), PyTuple_GET_ITEM(plan, 3),
                         PyTuple_GET_ITEM(plan, 4), PyTuple_GET_ITEM(plan, 7),
                         PyTuple_GET_ITEM(plan, 8));
    if (PyTuple_GET_ITEM(plan, 9) != Py_None)
        v.inst_dict = PyTuple_GET_ITEM(plan, 9);
    PyObject *value = NULL, *results = NULL;
    /* the arguments: the caller's, which it holds during the call; the core
     * values gathered in lw.flat, then made the list core() takes */
    Lowering lw = {&v, PyTuple_GET_ITEM(plan, 5), NULL, memo, 0, 0, {NULL}};
    PyObject *programs = PyTuple_GET_ITEM(plan, 0);
    int lowered = 0;
    for (Py_ssize_t k = 0; k < n && lowered == 0; k++)
        lowered = lower(&lw, PyTuple_GET_ITEM(programs, k), items[k]);
    PyObject *flat = lowered < 0 ? NULL : PyList_New(lw.nflat);
    for (Py_ssize_t k = 0; k < lw.nflat; k++) {
        if (flat != NULL)
            PyList_SET_ITEM(flat, k, lw.flat[k]);
        else
            Py_DECREF(lw.flat[k]);
    }
    if (flat == NULL)
        goto done;
    results = PyObject_CallOneArg(core, flat);
    Py_DECREF(flat);
    if (results == NULL)
        goto done;
    if (v.cx != NULL && PyObject_DelAttr(v.cx, str_mv) < 0) { /* cx.refresh() */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            goto done;
        PyErr_Clear();
    }
    if (lift == Py_None) {
        value = Py_NewRef(Py_None);
        goto done;
    }
    if (PyTuple_GET_SIZE(lift) == 1) { /* a bool or an integer: the core result itself */
        value = lift_scalar(PyTuple_GET_ITEM(lift, 0), results);
        goto done;
    }
    long long budget = 0;
    int charged = 0;
    PyObject *left = accel_lift_budget(&v);
    if (left == NULL)
        goto done;
    budget = accel_as_s64(left);
    Py_DECREF(left);
    if (budget == -1 && PyErr_Occurred())
        goto done;
    if (v.cx != NULL) { /* a context made for a step in Python: its budget */
        PyObject *b = PyObject_GetAttr(v.cx, accel_str_budget);
        if (b == NULL)
            goto done;
        budget = accel_as_s64(b);
        Py_DECREF(b);
        if (budget == -1 && PyErr_Occurred())
            goto done;
    }
    int r = accel_lift_spilled(&v, PyTuple_GET_ITEM(lift, 0),
                         (unsigned long long)small_arg(PyTuple_GET_ITEM(lift, 1)),
                         (unsigned long long)small_arg(PyTuple_GET_ITEM(lift, 2)), results, &budget,
                         &charged, &value);
    if (r == 0) { /* the Python codec, from the start */
        PyObject *cx = accel_vcx_cx(&v);
        if (cx != NULL)
            value = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(plan, 6), cx, results, NULL);
    }
done:
    Py_XDECREF(results);
    accel_vcx_done(&v);
    return value;
}

int
accel_values_register(PyObject *module)
{
    if (accel_guest_register(module) < 0)
        return -1;
    if ((accel_str_budget = PyUnicode_InternFromString("budget")) == NULL
        || (str_kind = PyUnicode_InternFromString("kind")) == NULL
        || (str_value = PyUnicode_InternFromString("value")) == NULL
        || (str_mv = PyUnicode_InternFromString("mv")) == NULL)
        return -1;
    return accel_value_types_register(module);
}
