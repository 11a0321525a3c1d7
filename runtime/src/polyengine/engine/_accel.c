/* The compiled call path (architecture.md §5): the accelerated twin of
 * ``_callpath.py``, with identical behaviour.
 *
 * It reaches libwasmtime only through the function addresses handed to
 * ``init()`` by ``_accelerator.py`` (read from the library the ``wasmtime``
 * package already loaded), so it needs no wasmtime header and no second copy
 * of the library.  The few C layouts it relies on are declared below and
 * checked by the caller against the package's own declarations.
 *
 * Here:
 *
 * - ``Caller``: the call of one core function.  ``mode`` 0 is
 *   ``export_caller``'s specialised call (``call(*args)`` in the caller's
 *   slot formats, one result as the value, none as ``None``, several as a
 *   tuple); ``mode`` 1 is ``flat_caller``'s general call (``call(flat)`` ->
 *   tuple); ``mode`` 2 is ``CoreFunc.call_raw``'s fast case (the same, the
 *   results as a list).  The slots are on the C stack; the store's open-and-direct test
 *   reads the store's cell (a ``uint64`` that holds the store context while
 *   the store is open and not async-required, else 0), and anything other
 *   than the fast case goes to the Python callables it was built with.
 * - ``trampoline``: the host-function callback shared by every host function
 *   whose ``env`` carries a registered signature; it finds the body in
 *   ``HOST_ENTRIES`` exactly as the Python trampoline does.
 * - the callbacks of async host functions and the loops that link a core
 *   instance's imports live in ``_accel_link.c``.
 * - ``Export`` and ``Drive`` (``_accel_export.c``): the scalar export call
 *   of ``instance/_lift.py`` and the blocking facade's call of ``sync.py``.
 * - nothing else: every failure path hands over to the same Python code the
 *   pure path runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdbool.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "_accel.h"

#define ACCEL_ABI 1
#define MAX_SLOTS ACCEL_MAX_SLOTS
#define MAX_SIGS 4096
#define SIG_BITS 16

/* wasmtime_val_raw_t: a 16-byte union (wasmtime 50 C API). */
typedef union {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    uint8_t v128[16];
} val_raw_t;

typedef void *(*call_unchecked_t)(void *ctx, const void *func, val_raw_t *slots,
                                  size_t nslots, void **trap);
typedef void *(*trap_new_t)(const char *msg, size_t len);

static call_unchecked_t call_unchecked = NULL;
static trap_new_t trap_new = NULL;
static PyObject *host_entries = NULL;   /* HOST_ENTRIES (a dict) */
static PyObject *pack_slow = NULL;      /* _callpath._pack_results_slow */
#define PLAIN_KEY_BIT (1ULL << 63)      /* _store.PLAIN_KEY_BIT */
static PyTypeObject *state_type = NULL; /* _StoreState */
static Py_ssize_t host_depth_offset = -1;
static PyObject *str_record_host_error = NULL;
static PyObject *str_host_depth = NULL;

/* -- slot conversions ----------------------------------------------------- */


/* Write ``v`` into ``slot`` in format ``f``.  0 on success; -1 with an
 * exception set: TypeError for a value of the wrong type, ValueError for one
 * out of range (``value_errors`` turns the former into ValueError too, as the
 * pure path's ``struct`` does); OverflowError for a finite float beyond f32
 * when ``value_errors`` (as ``struct`` raises), else ValueError. */
static int
put_slot(val_raw_t *slot, char f, PyObject *v, int value_errors)
{
    memset(slot, 0, sizeof(*slot));
    /* a conversion of another type may run Python code */
    if (!PyLong_CheckExact(v) && !PyFloat_CheckExact(v) && ACCEL_APPLY_DEFERRED() < 0)
        return -1;
    if (f == 'f' || f == 'd') {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_SetString(value_errors ? PyExc_OverflowError : PyExc_ValueError,
                                "an argument does not fit its slot");
                return -1;
            }
            PyErr_Clear();
            PyErr_SetString(value_errors ? PyExc_ValueError : PyExc_TypeError,
                            "an argument does not fit its slot: not a float");
            return -1;
        }
        if (f == 'd') {
            slot->f64 = d;
            return 0;
        }
        float x = (float)d;
        if (isinf(x) && !isinf(d)) {
            PyErr_SetString(value_errors ? PyExc_OverflowError : PyExc_ValueError,
                            "an argument does not fit its slot: float too large for f32");
            return -1;
        }
        slot->f32 = x;
        return 0;
    }
    PyObject *n = v;
    if (!PyLong_Check(v)) {
        n = PyNumber_Index(v);
        if (n == NULL) {
            PyErr_Clear();
            PyErr_SetString(value_errors ? PyExc_ValueError : PyExc_TypeError,
                            "an argument does not fit its slot: not an integer");
            return -1;
        }
    }
    int bad = 0;
    switch (f) {
    case 'I': {
        unsigned long long u = accel_as_u64(n);
        if ((u == (unsigned long long)-1 && PyErr_Occurred()) || u > 0xFFFFFFFFull)
            bad = 1;
        else
            slot->i32 = (int32_t)(uint32_t)u;
        break;
    }
    case 'i': {
        long long s = accel_as_s64(n);
        if ((s == -1 && PyErr_Occurred()) || s < INT32_MIN || s > INT32_MAX)
            bad = 1;
        else
            slot->i32 = (int32_t)s;
        break;
    }
    case 'Q': {
        unsigned long long u = accel_as_u64(n);
        if (u == (unsigned long long)-1 && PyErr_Occurred())
            bad = 1;
        else
            slot->i64 = (int64_t)u;
        break;
    }
    case 'q': {
        long long s = accel_as_s64(n);
        if (s == -1 && PyErr_Occurred())
            bad = 1;
        else
            slot->i64 = (int64_t)s;
        break;
    }
    default:
        bad = 1;
    }
    if (n != v)
        Py_DECREF(n);
    if (bad) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "an argument does not fit its slot (format %c)", f);
        return -1;
    }
    return 0;
}

/* put_slot's common case inline: an int of one digit (accel_compact) in an
 * integer format it fits.  1 when written, 0: put_slot decides. */
static inline int
put_small_int(val_raw_t *slot, char f, PyObject *v)
{
    long long x;
    if ((f != 'I' && f != 'i' && f != 'Q' && f != 'q') || !accel_compact(v, &x)
        || (x < 0 && (f == 'I' || f == 'Q')))
        return 0;
    memset(slot, 0, sizeof(*slot));
    if (f == 'I' || f == 'i')
        slot->i32 = (int32_t)x; /* |x| < 2**30 */
    else
        slot->i64 = (int64_t)x;
    return 1;
}

static PyObject *
get_slot(const val_raw_t *slot, char f)
{
    switch (f) {
    case 'I': return PyLong_FromUnsignedLong((uint32_t)slot->i32);
    case 'i': return PyLong_FromLong(slot->i32);
    case 'Q': return PyLong_FromUnsignedLongLong((uint64_t)slot->i64);
    case 'q': return PyLong_FromLongLong(slot->i64);
    case 'f': return PyFloat_FromDouble((double)slot->f32);
    case 'd': return PyFloat_FromDouble(slot->f64);
    }
    PyErr_SetString(PyExc_SystemError, "unknown slot format");
    return NULL;
}

/* -- Caller --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    const uint64_t *cell;   /* the store's context while direct, else 0 */
    const void *func;       /* wasmtime_func_t* */
    Py_ssize_t nslots;
    Py_ssize_t n, m;
    int mode;               /* 0: export_caller, 1: flat_caller, 2: call_raw */
    int value_errors;       /* mode 0: every conversion error is a ValueError */
    char fmt[MAX_SLOTS];
    char rfmt[MAX_SLOTS];
    PyObject *slow;         /* the call when not direct (and mode 1's conversion failures) */
    PyObject *fail;         /* fail(trap, err): raises the call's failure */
    PyObject *keep;         /* owns the memory of cell and func */
} Caller;

static PyObject *
caller_failed(Caller *self, void *trap, void *err)
{
    if (ACCEL_APPLY_DEFERRED() < 0)
        return NULL;
    PyObject *r = PyObject_CallFunction(self->fail, "KK", (unsigned long long)(uintptr_t)trap,
                                        (unsigned long long)(uintptr_t)err);
    if (r != NULL) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_SystemError, "a failed call's handler returned");
    }
    return NULL;
}

static PyObject *
caller_results(Caller *self, const val_raw_t *slots)
{
    Py_ssize_t m = self->m;
    if (self->mode == 0) {
        if (m == 0)
            Py_RETURN_NONE;
        if (m == 1)
            return get_slot(&slots[0], self->rfmt[0]);
    }
    int list = self->mode == 2;
    PyObject *out = list ? PyList_New(m) : PyTuple_New(m);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *v = get_slot(&slots[k], self->rfmt[k]);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        if (list)
            PyList_SET_ITEM(out, k, v);
        else
            PyTuple_SET_ITEM(out, k, v);
    }
    return out;
}

static PyObject *
caller_invoke(Caller *self, const uint64_t ctx, val_raw_t *slots)
{
    void *trap = NULL;
    void *err;
    Py_BEGIN_ALLOW_THREADS
    err = call_unchecked((void *)(uintptr_t)ctx, self->func, slots, (size_t)self->nslots, &trap);
    Py_END_ALLOW_THREADS
    if (err != NULL || trap != NULL)
        return caller_failed(self, trap, err);
    return caller_results(self, slots);
}

static PyObject *
caller_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Caller *self = (Caller *)obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "a core call takes no keyword arguments");
        return NULL;
    }
    uint64_t ctx = *self->cell;
    val_raw_t slots[MAX_SLOTS];
    if (self->mode == 0) {
        if (nargs != self->n) {
            /* the pure path's fixed-arity closures raise TypeError, its struct ValueError */
            PyErr_Format(self->value_errors ? PyExc_ValueError : PyExc_TypeError,
                         "the call takes %zd arguments (%zd given)", self->n, nargs);
            return NULL;
        }
        if (!ctx)
            return ACCEL_APPLY_DEFERRED() < 0 ? NULL
                                              : PyObject_Vectorcall(self->slow, args, nargs, NULL);
        for (Py_ssize_t k = 0; k < nargs; k++) {
            if (!put_small_int(&slots[k], self->fmt[k], args[k])
                && put_slot(&slots[k], self->fmt[k], args[k], self->value_errors) < 0)
                return NULL;
        }
        for (Py_ssize_t k = nargs; k < self->nslots; k++)
            memset(&slots[k], 0, sizeof(val_raw_t));
        return caller_invoke(self, ctx, slots);
    }
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "the flat call takes one sequence");
        return NULL;
    }
    PyObject *flat = args[0];
    if (!ctx)
        return ACCEL_APPLY_DEFERRED() < 0 ? NULL : PyObject_CallOneArg(self->slow, flat);
    if (!PyTuple_CheckExact(flat) && !PyList_CheckExact(flat) && ACCEL_APPLY_DEFERRED() < 0)
        return NULL; /* iterating another sequence may run Python code */
    PyObject *seq = PySequence_Fast(flat, "flat arguments must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int ok = len == self->n;
    for (Py_ssize_t k = 0; ok && k < len; k++) {
        PyObject *v = items[k];
        char f = self->fmt[k];
        /* the pure path's struct accepts exactly these without converting */
        if (f == 'f' || f == 'd') {
            if (!PyFloat_Check(v) && !PyLong_Check(v)) {
                ok = 0;
                break;
            }
        }
        else if (!PyLong_Check(v)) {
            ok = 0;
            break;
        }
        if (put_slot(&slots[k], f, v, 1) < 0) {
            PyErr_Clear();
            ok = 0;
        }
    }
    Py_DECREF(seq);
    if (!ok)
        return ACCEL_APPLY_DEFERRED() < 0 ? NULL : PyObject_CallOneArg(self->slow, flat);
    for (Py_ssize_t k = len; k < self->nslots; k++)
        memset(&slots[k], 0, sizeof(val_raw_t));
    return caller_invoke(self, ctx, slots);
}

static int
caller_traverse(Caller *self, visitproc visit, void *arg)
{
    Py_VISIT(self->slow);
    Py_VISIT(self->fail);
    Py_VISIT(self->keep);
    return 0;
}

static int
caller_clear(Caller *self)
{
    Py_CLEAR(self->slow);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->keep);
    return 0;
}

static void
caller_dealloc(Caller *self)
{
    PyObject_GC_UnTrack(self);
    caller_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
valid_formats(const char *s, Py_ssize_t len, const char *allowed)
{
    for (Py_ssize_t k = 0; k < len; k++) {
        if (s[k] == '\0' || strchr(allowed, s[k]) == NULL)
            return 0;
    }
    return 1;
}

/* Caller(cell_addr, func_addr, nslots, formats, rformats, mode, value_errors, slow, fail, keep) */
static PyObject *
caller_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    unsigned long long cell, func;
    Py_ssize_t nslots, flen, rlen;
    const char *formats, *rformats;
    int mode, value_errors;
    PyObject *slow, *fail, *keep;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Caller takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "KKns#s#iiOOO", &cell, &func, &nslots, &formats, &flen,
                          &rformats, &rlen, &mode, &value_errors, &slow, &fail, &keep))
        return NULL;
    if (call_unchecked == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the accelerator is not initialised");
        return NULL;
    }
    /* Checked here once, as the pure path checks its buffers: either mistake
     * would let wasmtime touch memory it must not. */
    if (!cell || !func) {
        PyErr_SetString(PyExc_ValueError, "a core call needs a store cell and a function");
        return NULL;
    }
    if (flen >= MAX_SLOTS || rlen >= MAX_SLOTS || nslots < 1 || nslots > MAX_SLOTS
        || nslots < flen || nslots < rlen) {
        PyErr_SetString(PyExc_ValueError, "the signature does not fit the accelerated call");
        return NULL;
    }
    if (mode != 0 && mode != 1 && mode != 2) {
        PyErr_SetString(PyExc_ValueError, "unknown call mode");
        return NULL;
    }
    if (!valid_formats(formats, flen, "IiQqfd") || !valid_formats(rformats, rlen, "IiQqfd")) {
        PyErr_SetString(PyExc_ValueError, "unknown slot format");
        return NULL;
    }
    if (!PyCallable_Check(slow) || !PyCallable_Check(fail)) {
        PyErr_SetString(PyExc_TypeError, "slow and fail must be callable");
        return NULL;
    }
    Caller *self = (Caller *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = caller_vectorcall;
    self->cell = (const uint64_t *)(uintptr_t)cell;
    self->func = (const void *)(uintptr_t)func;
    self->nslots = nslots;
    self->n = flen;
    self->m = rlen;
    self->mode = mode;
    self->value_errors = value_errors != 0;
    memcpy(self->fmt, formats, (size_t)flen);
    memcpy(self->rfmt, rformats, (size_t)rlen);
    Py_INCREF(slow);
    self->slow = slow;
    Py_INCREF(fail);
    self->fail = fail;
    Py_INCREF(keep);
    self->keep = keep;
    return (PyObject *)self;
}

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polyengine.engine._accel.Caller",
    .tp_doc = "The compiled call of one core function (see _callpath.py).",
    .tp_basicsize = sizeof(Caller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = caller_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Caller, vectorcall),
    .tp_traverse = (traverseproc)caller_traverse,
    .tp_clear = (inquiry)caller_clear,
    .tp_dealloc = (destructor)caller_dealloc,
};

/* -- the host-function trampoline ----------------------------------------- */

typedef struct {
    Py_ssize_t n, m;
    char fmt[MAX_SLOTS];   /* I, Q, f, d: the unsigned reading */
    char rfmt[MAX_SLOTS];
} Sig;

static Sig sigs[MAX_SIGS];
static Py_ssize_t nsigs = 1; /* 0: no signature (never used by the compiled trampoline) */

static void *
trap_text(const char *text)
{
    return trap_new(text, strlen(text));
}

static PyObject **
depth_slot(PyObject *state)
{
    if (Py_TYPE(state) != state_type || host_depth_offset < 0)
        return NULL;
    return (PyObject **)((char *)state + host_depth_offset);
}

/* state.host_depth += delta; -1 with an exception set on failure */
static int
add_depth(PyObject *state, long delta)
{
    PyObject **slot = depth_slot(state);
    PyObject *old = slot != NULL ? *slot : PyObject_GetAttr(state, str_host_depth);
    if (old == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_AttributeError, "host_depth");
        return -1;
    }
    PyObject *new;
    if (PyLong_CheckExact(old)) {
        long v = PyLong_AsLong(old);
        new = (v == -1 && PyErr_Occurred()) ? NULL : PyLong_FromLong(v + delta);
    }
    else {
        PyObject *d = PyLong_FromLong(delta);
        new = d == NULL ? NULL : PyNumber_Add(old, d);
        Py_XDECREF(d);
    }
    if (slot == NULL)
        Py_DECREF(old);
    if (new == NULL)
        return -1;
    if (slot != NULL) {
        PyObject *prev = *slot;
        *slot = new;
        Py_XDECREF(prev);
        return 0;
    }
    int r = PyObject_SetAttr(state, str_host_depth, new);
    Py_DECREF(new);
    return r;
}

/* Fast packing of a body's results: exact ints in range, floats; else 0. */
static int
pack_fast(const Sig *sig, PyObject *out, val_raw_t *slots)
{
    if (!PyList_CheckExact(out) && !PyTuple_CheckExact(out))
        return 0;
    PyObject *seq = out;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len != sig->m)
        return 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    val_raw_t tmp[MAX_SLOTS];
    for (Py_ssize_t k = 0; k < len; k++) {
        PyObject *v = items[k];
        char f = sig->rfmt[k];
        memset(&tmp[k], 0, sizeof(val_raw_t));
        if (f == 'I' || f == 'Q') {
            if (!PyLong_CheckExact(v))
                return 0;
            int overflow = 0;
            long long s;
            if (!accel_compact(v, &s)) /* one digit: read inline */
                s = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || s < 0 || (f == 'I' && s > 0xFFFFFFFFll)) {
                if (f == 'Q' && overflow > 0) {
                    unsigned long long u = PyLong_AsUnsignedLongLong(v);
                    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                        PyErr_Clear();
                        return 0;
                    }
                    tmp[k].i64 = (int64_t)u;
                    continue;
                }
                PyErr_Clear();
                return 0;
            }
            if (f == 'I')
                tmp[k].i32 = (int32_t)(uint32_t)s;
            else
                tmp[k].i64 = s;
        }
        else if (PyFloat_CheckExact(v)) {
            double d = PyFloat_AS_DOUBLE(v);
            if (f == 'd') {
                tmp[k].f64 = d;
            }
            else {
                float x = (float)d;
                if (isinf(x) && !isinf(d))
                    return 0;
                tmp[k].f32 = x;
            }
        }
        else {
            return 0;
        }
    }
    memcpy(slots, tmp, (size_t)len * sizeof(val_raw_t));
    return 1;
}

static void *
record_error(PyObject *state)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    void *trap = NULL;
    if (value != NULL) {
        PyObject *r = PyObject_CallMethodOneArg(state, str_record_host_error, value);
        if (r != NULL) {
            unsigned long long a = accel_as_u64(r);
            if (!(a == (unsigned long long)-1 && PyErr_Occurred()))
                trap = (void *)(uintptr_t)a;
            Py_DECREF(r);
        }
        PyErr_Clear();
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (trap == NULL)
        trap = trap_text("host function failed");
    return trap;
}

static void *
trampoline(void *env, void *caller, val_raw_t *slots, size_t nslots)
{
    (void)caller;
    uintptr_t key = (uintptr_t)env;
    Py_ssize_t si = (Py_ssize_t)(key & ((1u << SIG_BITS) - 1));
    PyGILState_STATE gil = PyGILState_Ensure();
    void *result = NULL;
    if (si <= 0 || si >= nsigs) {
        result = trap_text("a host function without a signature was called");
        goto done;
    }
    const Sig *sig = &sigs[si];
    if ((size_t)sig->n > nslots || (size_t)sig->m > nslots) {
        result = trap_text("a host function was called with too few slots");
        goto done;
    }
    PyObject *pykey = PyLong_FromUnsignedLongLong((unsigned long long)key);
    PyObject *entry = NULL; /* owned */
    if (pykey != NULL) {
        entry = PyDict_GetItemWithError(host_entries, pykey);
        if (entry != NULL)
            Py_INCREF(entry);
        else if (!PyErr_Occurred() && (key & PLAIN_KEY_BIT) && accel_plain_entry != NULL) {
            /* a plain host function's first call: its store's builder makes the entry */
            entry = PyObject_CallOneArg(accel_plain_entry, pykey);
            if (entry == Py_None)
                Py_CLEAR(entry);
        }
        Py_DECREF(pykey);
    }
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) {
        Py_XDECREF(entry);
        PyErr_Clear();
        result = trap_text("a host function of a closed store was called");
        goto done;
    }
    PyObject *state = PyTuple_GET_ITEM(entry, 0);
    PyObject *fn = PyTuple_GET_ITEM(entry, 1);
    if (ACCEL_APPLY_DEFERRED() < 0 || add_depth(state, 1) < 0) {
        result = record_error(state);
        Py_DECREF(entry);
        goto done;
    }
    PyObject *args = PyTuple_New(sig->n);
    PyObject *out = NULL;
    if (args != NULL) {
        Py_ssize_t k;
        for (k = 0; k < sig->n; k++) {
            PyObject *v = get_slot(&slots[k], sig->fmt[k]);
            if (v == NULL)
                break;
            PyTuple_SET_ITEM(args, k, v);
        }
        if (k == sig->n)
            out = PyObject_CallOneArg(fn, args);
        Py_DECREF(args);
    }
    if (out != NULL) {
        if (!pack_fast(sig, out, slots)) {
            /* the pure path's packing, run by the pure path's code */
            PyObject *r = PyObject_CallFunction(pack_slow, "Ks#O",
                                                (unsigned long long)(uintptr_t)slots,
                                                sig->rfmt, sig->m, out);
            if (r == NULL)
                result = record_error(state);
            Py_XDECREF(r);
        }
        Py_DECREF(out);
    }
    else {
        result = record_error(state);
    }
    if (add_depth(state, -1) < 0) {
        if (result == NULL)
            result = record_error(state);
        else
            PyErr_Clear(); /* the first failure is the one reported */
    }
    Py_DECREF(entry);
done:
    PyGILState_Release(gil);
    return result;
}

/* -- module functions ----------------------------------------------------- */

static PyObject *
accel_init(PyObject *mod, PyObject *args)
{
    unsigned long long call_addr, trap_addr;
    int abi;
    PyObject *entries, *slow, *stype, *depth_descr;
    if (!PyArg_ParseTuple(args, "iKKO!OO!O", &abi, &call_addr, &trap_addr, &PyDict_Type,
                          &entries, &slow, &PyType_Type, &stype, &depth_descr))
        return NULL;
    if (abi != ACCEL_ABI) {
        PyErr_Format(PyExc_ImportError, "accelerator ABI %d, expected %d", ACCEL_ABI, abi);
        return NULL;
    }
    if (!call_addr || !trap_addr) {
        PyErr_SetString(PyExc_ValueError, "missing libwasmtime entry points");
        return NULL;
    }
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "pack_slow must be callable");
        return NULL;
    }
    call_unchecked = (call_unchecked_t)(uintptr_t)call_addr;
    trap_new = (trap_new_t)(uintptr_t)trap_addr;
    Py_INCREF(entries);
    Py_XSETREF(host_entries, entries);
    Py_INCREF(slow);
    Py_XSETREF(pack_slow, slow);
    Py_INCREF(stype);
    Py_XSETREF(state_type, (PyTypeObject *)stype);
    host_depth_offset = -1;
    if (Py_IS_TYPE(depth_descr, &PyMemberDescr_Type)) {
        PyMemberDef *def = ((PyMemberDescrObject *)depth_descr)->d_member;
        if (def->type == T_OBJECT_EX && !(def->flags & READONLY)
            && ((PyMemberDescrObject *)depth_descr)->d_common.d_type == (PyTypeObject *)stype)
            host_depth_offset = def->offset;
    }
    Py_RETURN_NONE;
}

/* register_signature(params, results) -> index (1..): formats in I/Q/f/d */
static PyObject *
accel_register_signature(PyObject *mod, PyObject *args)
{
    const char *p, *r;
    Py_ssize_t pn, rn;
    if (!PyArg_ParseTuple(args, "s#s#", &p, &pn, &r, &rn))
        return NULL;
    if (pn >= MAX_SLOTS || rn >= MAX_SLOTS || !valid_formats(p, pn, "IQfd")
        || !valid_formats(r, rn, "IQfd")) {
        PyErr_SetString(PyExc_ValueError, "the signature does not fit the compiled trampoline");
        return NULL;
    }
    if (nsigs >= MAX_SIGS) {
        PyErr_SetString(PyExc_OverflowError, "too many host signatures");
        return NULL;
    }
    Sig *s = &sigs[nsigs];
    s->n = pn;
    s->m = rn;
    memcpy(s->fmt, p, (size_t)pn);
    memcpy(s->rfmt, r, (size_t)rn);
    return PyLong_FromSsize_t(nsigs++);
}

static PyObject *
accel_trampoline_address(PyObject *mod, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)&trampoline);
}

static PyMethodDef accel_methods[] = {
    {"init", accel_init, METH_VARARGS,
     "init(abi, call_unchecked, trap_new, host_entries, pack_slow, state_type, host_depth)"},
    {"register_signature", accel_register_signature, METH_VARARGS,
     "register_signature(params, results) -> index carried in a host function's env"},
    {"trampoline_address", accel_trampoline_address, METH_NOARGS,
     "the address of the shared host-function callback"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "polyengine.engine._accel",
    .m_doc = "The compiled call path (see _accelerator.py).",
    .m_size = -1,
    .m_methods = accel_methods,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    if (PyType_Ready(&CallerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&accel_module);
    if (m == NULL)
        return NULL;
    str_record_host_error = PyUnicode_InternFromString("record_host_error");
    str_host_depth = PyUnicode_InternFromString("host_depth");
    if (str_record_host_error == NULL || str_host_depth == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&CallerType);
    if (PyModule_AddObject(m, "Caller", (PyObject *)&CallerType) < 0
        || PyModule_AddIntConstant(m, "ABI", ACCEL_ABI) < 0
        || PyModule_AddIntConstant(m, "SIG_BITS", SIG_BITS) < 0
        || PyModule_AddIntConstant(m, "MAX_SLOTS", MAX_SLOTS) < 0
        || accel_export_register(m) < 0
        || accel_link_register(m) < 0
        || accel_values_register(m) < 0
        || accel_streams_register(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
