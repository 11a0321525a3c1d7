/* The callable types of the compiled value codecs (architecture.md §5).
 *
 * Part of ``polyengine.engine._accel``; the interpreter they run is
 * ``_accel_values.c`` (see there), the memory access ``_accel_guest.c``.
 *
 * - ``Lower(programs, fallback, block_trap)``: ``lower(cx, values)``, the
 *   core values of parameters passed flat (``lower_flat_values``), handing
 *   the whole call to ``fallback(cx, values)`` for any value the programs do
 *   not take exactly;
 * - ``LiftSpilled(program, fallback, size, align)``: ``lift(cx, results)``
 *   of a result returned through memory, rerunning ``fallback(cx, results)``
 *   from the start on any doubt.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include "_accel.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *programs; /* tuple: one program per value */
    PyObject *fallback; /* the Python codec: fallback(cx, values) */
    PyObject *block_trap;
} LowerObject;

static PyObject *
lower_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LowerObject *self = (LowerObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "lower(cx, values) takes two positional arguments");
        return NULL;
    }
    if (self->programs == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a cleared compiled lower");
        return NULL;
    }
    PyObject *cx = args[0], *vs = args[1];
    PyObject *const *items;
    Py_ssize_t n;
    if (PyTuple_CheckExact(vs)) {
        items = &PyTuple_GET_ITEM(vs, 0);
        n = PyTuple_GET_SIZE(vs);
    }
    else if (PyList_CheckExact(vs)) {
        items = &PyList_GET_ITEM(vs, 0);
        n = PyList_GET_SIZE(vs);
    }
    else
        return PyObject_Vectorcall(self->fallback, args, 2, NULL);
    int ok = accel_check_seq(self->programs, items, n, 0);
    if (ok < 0)
        return NULL;
    if (!ok)
        return PyObject_Vectorcall(self->fallback, args, 2, NULL);
    AccelValueCx v;
    if (accel_vcx_from_cx(&v, cx) < 0)
        return NULL;
    PyObject *out = accel_lower_all(&v, self->programs, vs, self->block_trap);
    accel_vcx_done(&v);
    return out;
}

static int
lower_traverse(PyObject *op, visitproc visit, void *arg)
{
    LowerObject *self = (LowerObject *)op;
    Py_VISIT(self->programs);
    Py_VISIT(self->fallback);
    Py_VISIT(self->block_trap);
    return 0;
}

static int
lower_clear(PyObject *op)
{
    LowerObject *self = (LowerObject *)op;
    Py_CLEAR(self->programs);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->block_trap);
    return 0;
}

static void
lower_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    lower_clear(op);
    Py_TYPE(op)->tp_free(op);
}

static PyObject *
lower_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *programs, *fallback, *block_trap;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Lower takes no keywords");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OO:Lower", &PyTuple_Type, &programs, &fallback, &block_trap))
        return NULL;
    LowerObject *self = (LowerObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = lower_vectorcall;
    self->programs = Py_NewRef(programs);
    self->fallback = Py_NewRef(fallback);
    self->block_trap = Py_NewRef(block_trap);
    return (PyObject *)self;
}

static PyTypeObject LowerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polyengine.engine._accel.Lower",
    .tp_basicsize = sizeof(LowerObject),
    .tp_dealloc = lower_dealloc,
    .tp_traverse = lower_traverse,
    .tp_clear = lower_clear,
    .tp_vectorcall_offset = offsetof(LowerObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The compiled lower of values passed flat (see _accel_values.c).",
    .tp_new = lower_new,
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *program;
    PyObject *fallback; /* fallback(cx, results) */
    unsigned long long size;
    unsigned long long align;
} LiftObject;

/* 1: *out is the value; 0: fall back; -1: an exception */
static int
lift_run(LiftObject *self, PyObject *cx, PyObject *results, PyObject **out)
{
    AccelValueCx v;
    if (accel_vcx_from_cx(&v, cx) < 0)
        return -1;
    long long budget = 0;
    int charged = 0, r = -1;
    PyObject *b = PyObject_GetAttr(cx, accel_str_budget);
    if (b != NULL) {
        budget = accel_as_s64(b);
        Py_DECREF(b);
        if (!(budget == -1 && PyErr_Occurred()))
            r = accel_lift_spilled(&v, self->program, self->size, self->align, results, &budget,
                             &charged, out);
    }
    accel_vcx_done(&v);
    if (r == 1 && charged) {
        PyObject *left = PyLong_FromLongLong(budget);
        if (left == NULL || PyObject_SetAttr(cx, accel_str_budget, left) < 0) {
            Py_XDECREF(left);
            Py_CLEAR(*out);
            return -1;
        }
        Py_DECREF(left);
    }
    return r;
}

static PyObject *
lift_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LiftObject *self = (LiftObject *)op;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "lift(cx, results) takes two positional arguments");
        return NULL;
    }
    if (self->program == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a cleared compiled lift");
        return NULL;
    }
    PyObject *value = NULL;
    int r = lift_run(self, args[0], args[1], &value);
    if (r == 0) /* anything in doubt: the Python codec, from the start */
        return PyObject_Vectorcall(self->fallback, args, 2, NULL);
    return r < 0 ? NULL : value;
}

static int
lift_traverse(PyObject *op, visitproc visit, void *arg)
{
    LiftObject *self = (LiftObject *)op;
    Py_VISIT(self->program);
    Py_VISIT(self->fallback);
    return 0;
}

static int
lift_clear(PyObject *op)
{
    LiftObject *self = (LiftObject *)op;
    Py_CLEAR(self->program);
    Py_CLEAR(self->fallback);
    return 0;
}

static void
lift_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    lift_clear(op);
    Py_TYPE(op)->tp_free(op);
}

static PyObject *
lift_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *program, *fallback;
    unsigned long long size, align;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "LiftSpilled takes no keywords");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OKK:LiftSpilled", &PyTuple_Type, &program, &fallback,
                          &size, &align))
        return NULL;
    if (align == 0 || (align & (align - 1))) {
        PyErr_SetString(PyExc_ValueError, "the alignment must be a power of two");
        return NULL;
    }
    LiftObject *self = (LiftObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = lift_vectorcall;
    self->program = Py_NewRef(program);
    self->fallback = Py_NewRef(fallback);
    self->size = size;
    self->align = align;
    return (PyObject *)self;
}

static PyTypeObject LiftType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polyengine.engine._accel.LiftSpilled",
    .tp_basicsize = sizeof(LiftObject),
    .tp_dealloc = lift_dealloc,
    .tp_traverse = lift_traverse,
    .tp_clear = lift_clear,
    .tp_vectorcall_offset = offsetof(LiftObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The compiled lift of a result returned through memory (see _accel_values.c).",
    .tp_new = lift_new,
};

int
accel_value_types_register(PyObject *module)
{
    if (PyType_Ready(&LowerType) < 0 || PyType_Ready(&LiftType) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "Lower", (PyObject *)&LowerType) < 0
        || PyModule_AddObjectRef(module, "LiftSpilled", (PyObject *)&LiftType) < 0)
        return -1;
    return 0;
}
