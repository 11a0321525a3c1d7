/* The compiled export call and the blocking facade's drive (architecture.md §5).
 *
 * Part of ``polyengine.engine._accel`` (``_accel.c`` registers the two types
 * below); the Python each one replaces is named at its type, and every case
 * other than the fast one runs that Python.
 *
 * - ``Export``: the host's call of a lifted export whose parameters and
 *   result are 32- or 64-bit integers (``instance/_lift.py``'s generated
 *   scalar call, statement by statement): the type test, the entry test
 *   (``rec.poisoned``, ``ci.may_enter``), ``may_enter`` cleared around the
 *   specialised core call, an argument out of its slot's range handed to the
 *   general call, and a failure handed to the poisoning step (``failed``)
 *   before it propagates.  With a plan of value programs, the type test keeps
 *   the record fields it looked up for the lower (``AccelMemo``).
 *   ``may_enter`` is read and written at its slot's offset in ci
 *   (``AccelSlot``, ``_accel.h``; ComponentInstance's ``__slots__``), else in
 *   ci's ``__dict__`` when it lives plainly there, else as an attribute;
 *   ``rec.poisoned`` is read at its slot's offset the same way (the
 *   InstanceRecord's ``__slots__``), else as an attribute.
 * - ``Drive``: ``polyengine.sync``'s call of a synchronous-path export: the
 *   private loop made the running loop and the call run in a copy of the
 *   caller's context; a call with keywords, inside a running loop or on a
 *   closed loop is the Python call's.  When the call is an ``Export``, both
 *   steps are deferred (thread-local, see ``_accel.h``) until Python code is
 *   about to run during the call, and undone only if they were made:
 *   CPython 3.11's ``_set_running_loop`` calls getpid() each time, which
 *   was most of the facade's cost.  ``may_enter`` is never deferred (another
 *   thread must see it cleared while the guest runs).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#include "_accel.h"

static PyObject *str_poisoned = NULL;
static PyObject *str_may_enter = NULL;

/* -- the deferred step (see _accel.h) ------------------------------------- */

ACCEL_THREAD_LOCAL PyObject *accel_deferred_loop = NULL; /* borrowed from the drive */
static ACCEL_THREAD_LOCAL PyObject *deferred_set = NULL;     /* borrowed: set_running_loop */
static ACCEL_THREAD_LOCAL PyObject *deferred_context = NULL;  /* owned, once applied */

/* Make the pending loop the running loop and enter a copy of the current
 * context, as the drive's eager path does before its call. */
int
accel_apply_deferred(void)
{
    PyObject *loop = accel_deferred_loop;
    if (loop == NULL)
        return 0;
    accel_deferred_loop = NULL;
    PyObject *context = PyContext_CopyCurrent();
    if (context == NULL)
        return -1;
    PyObject *r = PyObject_CallOneArg(deferred_set, loop);
    if (r == NULL) {
        Py_DECREF(context);
        return -1;
    }
    Py_DECREF(r);
    if (PyContext_Enter(context) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        Py_XDECREF(PyObject_CallOneArg(deferred_set, Py_None));
        PyErr_Restore(type, value, tb);
        Py_DECREF(context);
        return -1;
    }
    deferred_context = context;
    return 0;
}

/* -- Export --------------------------------------------------------------- */

static PyObject *
tuple_of(PyObject *const *items, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_INCREF(items[k]);
        PyTuple_SET_ITEM(t, k, items[k]);
    }
    return t;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Py_ssize_t n;
    int seq;              /* 1: call(args) with one tuple; 0: call(a0, a1, ...) */
    PyObject *core;       /* the specialised core call, exact integer formats */
    vectorcallfunc core_call; /* core's vectorcall entry, or NULL */
    PyObject *rec;        /* the instance record (``poisoned``) */
    PyObject *ci;         /* the component instance (``may_enter``) */
    PyObject *name;
    PyObject *check_enter;/* check_enter(rec, name): raises for a refused entry */
    PyObject *general;    /* general(args): the call of any arguments */
    PyObject *failed;     /* failed(exc) -> the exception to raise instead, or None */
    PyObject *arity;      /* arity(args): raises for a wrong argument count, or None */
    PyObject *ci_dict;    /* ci's __dict__ when it holds may_enter plainly, else NULL */
    PyObject *values;     /* the compiled values' plan (_accel_values.c), or NULL */
    unsigned long owner;  /* the thread that may call (the thread rule) */
    AccelSlot poisoned;   /* rec's ``poisoned`` slot */
    AccelSlot may_enter;  /* ci's ``may_enter`` slot */
} Export;

/* rec.poisoned (a new reference) */
static inline PyObject *
export_poisoned(Export *self)
{
    PyObject *v;
    if (accel_slot_get(&self->poisoned, self->rec, str_poisoned, &v))
        return v;
    return ACCEL_APPLY_DEFERRED() < 0 ? NULL : PyObject_GetAttr(self->rec, str_poisoned);
}

/* ci.may_enter = value */
static inline int
export_set_may_enter(Export *self, PyObject *value)
{
    if (accel_slot_set(&self->may_enter, self->ci, str_may_enter, value))
        return 0;
    if (self->ci_dict != NULL)
        return PyDict_SetItem(self->ci_dict, str_may_enter, value);
    if (ACCEL_APPLY_DEFERRED() < 0)
        return -1;
    return PyObject_SetAttr(self->ci, str_may_enter, value);
}

/* ci.may_enter (a new reference) */
static inline PyObject *
export_may_enter(Export *self)
{
    PyObject *v;
    if (accel_slot_get(&self->may_enter, self->ci, str_may_enter, &v))
        return v;
    if (self->ci_dict != NULL) {
        v = PyDict_GetItemWithError(self->ci_dict, str_may_enter);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return ACCEL_APPLY_DEFERRED() < 0 ? NULL : PyObject_GetAttr(self->ci, str_may_enter);
}

static PyObject *
export_general(Export *self, PyObject *const *items, Py_ssize_t n, PyObject *whole)
{
    if (ACCEL_APPLY_DEFERRED() < 0)
        return NULL;
    if (whole != NULL)
        return PyObject_CallOneArg(self->general, whole);
    PyObject *args = tuple_of(items, n);
    if (args == NULL)
        return NULL;
    PyObject *r = PyObject_CallOneArg(self->general, args);
    Py_DECREF(args);
    return r;
}

/* ci.may_enter = True, keeping an exception that is already set */
static int
export_reenter(Export *self)
{
    if (!PyErr_Occurred()) { /* the call returned: nothing to keep */
        return export_set_may_enter(self, Py_True);
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int r = export_set_may_enter(self, Py_True);
    if (r < 0) { /* the finally clause's error replaces the call's, chained to it */
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL && value != NULL)
            PyException_SetTraceback(value, tb);
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        PyErr_NormalizeException(&t2, &v2, &tb2);
        if (value != NULL && v2 != NULL)
            PyException_SetContext(v2, value); /* steals value */
        else
            Py_XDECREF(value);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        PyErr_Restore(t2, v2, tb2);
        return -1;
    }
    PyErr_Restore(type, value, tb);
    return 0;
}

/* The core call failed with the current exception: the poisoning step, then
 * the exception to propagate (``except BaseException`` of the Python call). */
static void
export_failed(Export *self)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value == NULL) {
        PyErr_Restore(type, value, tb);
        return;
    }
    if (tb != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *instead = ACCEL_APPLY_DEFERRED() < 0 ? NULL
                                                   : PyObject_CallOneArg(self->failed, value);
    if (instead == NULL) { /* the step itself failed: its error, raised while handling the call's */
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        PyErr_NormalizeException(&t2, &v2, &tb2);
        if (v2 != NULL) {
            Py_INCREF(value);
            PyException_SetContext(v2, value);
        }
        PyErr_Restore(t2, v2, tb2);
    }
    else if (instead == Py_None || !PyExceptionInstance_Check(instead)) {
        Py_DECREF(instead);
        PyErr_Restore(type, value, tb);
        return;
    }
    else { /* raise instead from instead.__cause__, while handling the call's error */
        PyObject *cause = PyException_GetCause(instead);
        PyException_SetCause(instead, cause); /* steals; sets __suppress_context__ */
        Py_INCREF(value);
        PyException_SetContext(instead, value);
        PyObject *itb = PyException_GetTraceback(instead);
        PyObject *itype = (PyObject *)Py_TYPE(instead);
        Py_INCREF(itype);
        PyErr_Restore(itype, instead, itb);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* The entry test, then the call with may_enter cleared (export_vectorcall's
 * steps after the type test); memo: what the type test looked up. */
static PyObject *
export_enter_and_call(Export *self, PyObject *const *items, Py_ssize_t n, PyObject *whole,
                      AccelMemo *memo)
{
    /* the entry test: the calling thread (the thread rule), then the instance */
    int refused = PyThread_get_thread_ident() != self->owner;
    if (!refused) {
        PyObject *poisoned = export_poisoned(self);
        if (poisoned == NULL)
            return NULL;
        refused = poisoned != Py_None;
        Py_DECREF(poisoned);
    }
    if (!refused) {
        PyObject *may = export_may_enter(self);
        if (may == NULL)
            return NULL;
        int t = may == Py_True ? 1 : may == Py_False ? 0 : PyObject_IsTrue(may);
        Py_DECREF(may);
        if (t < 0)
            return NULL;
        refused = !t;
    }
    if (refused) {
        if (ACCEL_APPLY_DEFERRED() < 0)
            return NULL;
        PyObject *r = PyObject_CallFunctionObjArgs(self->check_enter, self->rec, self->name, NULL);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    if (export_set_may_enter(self, Py_False) < 0)
        return NULL;
    PyObject *result = self->values != NULL ? accel_values_call(self->values, self->core, items,
                                                                n, memo)
                       : self->core_call != NULL ? self->core_call(self->core, items, n, NULL)
                                                 : PyObject_Vectorcall(self->core, items, n, NULL);
    if (result == NULL) {
        if (self->values == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
            /* an argument out of its slot's range, refused before the guest ran */
            PyErr_Clear();
            if (export_reenter(self) < 0)
                return NULL;
            result = export_general(self, items, n, whole);
            if (export_reenter(self) < 0) {
                Py_XDECREF(result);
                return NULL;
            }
            return result;
        }
        export_failed(self);
        export_reenter(self);
        return NULL;
    }
    if (export_set_may_enter(self, Py_True) < 0) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}


static PyObject *
export_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Export *self = (Export *)obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "an export call takes no keyword arguments");
        return NULL;
    }
    PyObject *whole = NULL;
    PyObject *const *items = args;
    Py_ssize_t n = nargs;
    if (self->seq) {
        if (nargs != 1) {
            PyErr_Format(PyExc_TypeError, "an export call takes one sequence (%zd given)", nargs);
            return NULL;
        }
        whole = args[0];
        if (PyTuple_CheckExact(whole)) {
            items = &PyTuple_GET_ITEM(whole, 0);
            n = PyTuple_GET_SIZE(whole);
        }
        else {
            return export_general(self, NULL, 0, whole);
        }
        if (n != self->n)
            return export_general(self, NULL, 0, whole);
    }
    else if (nargs != self->n) {
        if (self->arity != Py_None) {
            if (ACCEL_APPLY_DEFERRED() < 0)
                return NULL;
            PyObject *given = tuple_of(args, nargs);
            if (given == NULL)
                return NULL;
            PyObject *r = PyObject_CallOneArg(self->arity, given);
            Py_DECREF(given);
            return r;
        }
        return export_general(self, args, nargs, NULL);
    }
    /* the inline type test: exact ints only (their slots check the range), or
     * the values the compiled lower takes exactly */
    AccelMemo memo; /* only the items below n are ever read */
    memo.n = 0;
    memo.full = 0;
    if (self->values != NULL) {
        int taken = accel_values_check(self->values, items, n, &memo);
        if (taken <= 0) {
            accel_memo_clear(&memo);
            return taken < 0 ? NULL : export_general(self, items, n, whole);
        }
    }
    else {
        for (Py_ssize_t k = 0; k < n; k++) {
            if (!PyLong_CheckExact(items[k]))
                return export_general(self, items, n, whole);
        }
    }
    PyObject *result = export_enter_and_call(self, items, n, whole, &memo);
    if (memo.n > 0)
        accel_memo_clear(&memo);
    return result;
}

/* ``Export.call``: the same call as a METH_FASTCALL builtin method, which the
 * interpreter calls through its path for builtins (the facade's coroutines). */
static PyObject *
export_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return export_vectorcall(self, args, (size_t)nargs, NULL);
}

static PyMethodDef export_fast_def = {"call", (PyCFunction)(void (*)(void))export_fast,
                                       METH_FASTCALL, "the compiled export call"};

static PyObject *
export_get_call(PyObject *self, void *closure)
{
    (void)closure;
    return PyCFunction_New(&export_fast_def, self);
}

static PyGetSetDef export_getset[] = {
    {"call", export_get_call, NULL, "the same call as a builtin method", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static int
export_traverse(Export *self, visitproc visit, void *arg)
{
    Py_VISIT(self->core);
    Py_VISIT(self->rec);
    Py_VISIT(self->ci);
    Py_VISIT(self->name);
    Py_VISIT(self->check_enter);
    Py_VISIT(self->general);
    Py_VISIT(self->failed);
    Py_VISIT(self->arity);
    Py_VISIT(self->ci_dict);
    Py_VISIT(self->values);
    return 0;
}

static int
export_clear(Export *self)
{
    Py_CLEAR(self->core);
    Py_CLEAR(self->rec);
    Py_CLEAR(self->ci);
    Py_CLEAR(self->name);
    Py_CLEAR(self->check_enter);
    Py_CLEAR(self->general);
    Py_CLEAR(self->failed);
    Py_CLEAR(self->arity);
    Py_CLEAR(self->ci_dict);
    Py_CLEAR(self->values);
    return 0;
}

static void
export_dealloc(Export *self)
{
    PyObject_GC_UnTrack(self);
    export_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Export(core, n, seq, rec, ci, name, check_enter, general, failed, arity, ci_dict,
 *        owner[, values]): ci_dict is None unless the caller checked that
 * ``ci.may_enter`` plainly lives in it; ``owner`` is the ident of the only thread
 * that may call (the thread rule).  ``rec.poisoned`` and ``ci.may_enter`` are read
 * at their slots' offsets while the objects' types are the ones the slots were
 * found in (AccelSlot, _accel.h), else through the attribute protocol.  With ``values`` (a plan of abi/kernels.py), ``core(flat)`` takes
 * the list of core values and the arguments are lowered and the result lifted in C. */
static PyObject *
export_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *core, *rec, *ci, *name, *check_enter, *general, *failed, *arity;
    PyObject *ci_dict, *values = Py_None;
    Py_ssize_t n;
    int seq;
    unsigned long owner;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Export takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OnpOOOOOOOOk|O", &core, &n, &seq, &rec, &ci, &name,
                          &check_enter, &general, &failed, &arity, &ci_dict, &owner, &values))
        return NULL;
    if (values != Py_None && (!PyTuple_CheckExact(values) || PyTuple_GET_SIZE(values) != 10
                              || !PyTuple_CheckExact(PyTuple_GET_ITEM(values, 0))
                              || PyTuple_GET_SIZE(PyTuple_GET_ITEM(values, 0)) != n)) {
        PyErr_SetString(PyExc_TypeError, "values must be a plan of n programs");
        return NULL;
    }
    if (values != Py_None) { /* the plan's memory and ci_dict, checked once here */
        PyObject *memory = PyTuple_GET_ITEM(values, 8), *d = PyTuple_GET_ITEM(values, 9);
        if ((memory != Py_None && (!PyTuple_CheckExact(memory) || PyTuple_GET_SIZE(memory) < 2))
            || (d != Py_None && !PyDict_CheckExact(d))) {
            PyErr_SetString(PyExc_TypeError,
                            "a plan's memory must be a tuple and its ci_dict a dict or None");
            return NULL;
        }
    }
    if (ci_dict != Py_None && !PyDict_CheckExact(ci_dict)) {
        PyErr_SetString(PyExc_TypeError, "ci_dict must be a dict or None");
        return NULL;
    }
    if (n < 0 || n >= ACCEL_MAX_SLOTS) {
        PyErr_SetString(PyExc_ValueError, "the signature does not fit the compiled export call");
        return NULL;
    }
    if (!PyCallable_Check(core) || !PyCallable_Check(check_enter) || !PyCallable_Check(general)
        || !PyCallable_Check(failed) || (arity != Py_None && !PyCallable_Check(arity))) {
        PyErr_SetString(PyExc_TypeError, "the steps of an export call must be callable");
        return NULL;
    }
    Export *self = (Export *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = export_vectorcall;
    self->n = n;
    self->seq = seq;
#define KEEP(field) (Py_INCREF(field), self->field = field)
    KEEP(core);
    self->core_call = PyVectorcall_Function(core);
    KEEP(rec);
    KEEP(ci);
    KEEP(name);
    KEEP(check_enter);
    KEEP(general);
    KEEP(failed);
    KEEP(arity);
#undef KEEP
    self->owner = owner;
    self->poisoned.tp = NULL;
    self->poisoned.offset = -1;
    self->may_enter.tp = NULL;
    self->may_enter.offset = -1;
    if (ci_dict != Py_None) {
        Py_INCREF(ci_dict);
        self->ci_dict = ci_dict;
    }
    if (values != Py_None)
        self->values = Py_NewRef(values);
    return (PyObject *)self;
}

static PyTypeObject ExportType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polyengine.engine._accel.Export",
    .tp_doc = "The compiled call of a scalar export (see instance/_lift.py).",
    .tp_basicsize = sizeof(Export),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = export_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Export, vectorcall),
    .tp_traverse = (traverseproc)export_traverse,
    .tp_clear = (inquiry)export_clear,
    .tp_dealloc = (destructor)export_dealloc,
    .tp_getset = export_getset,
};

/* an Export, or its ``call`` method: a compiled export call (no Python code of its own) */
static int
is_export_call(PyObject *t)
{
    if (Py_IS_TYPE(t, &ExportType))
        return 1;
    return PyCFunction_CheckExact(t)
           && PyCFunction_GET_FUNCTION(t) == (PyCFunction)(void (*)(void))export_fast
           && PyCFunction_GET_SELF(t) != NULL && Py_IS_TYPE(PyCFunction_GET_SELF(t), &ExportType);
}

/* -- Drive ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *loop;
    PyObject *target;      /* the call, once resolved (NULL before) */
    PyObject *resolve;     /* resolve() -> the call (run on the first call) */
    PyObject *fallback;    /* the Python call: every other case */
    PyObject *get_running; /* asyncio._get_running_loop */
    PyObject *set_running; /* asyncio._set_running_loop */
    PyObject *is_closed;   /* loop.is_closed, or NULL: read loop._closed */
} Drive;

static PyObject *str_closed = NULL;

static int
drive_set_running(Drive *self, PyObject *loop)
{
    PyObject *r = PyObject_CallOneArg(self->set_running, loop);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* The call of a compiled export (``Export`` or its ``call``): the loop and the context copy are
 * deferred until Python code is about to run during the call (_accel.h), and
 * undone after it only if they were applied.  An ``Export`` runs no Python
 * code of its own on its fast path, so what a call can observe is the same. */
static PyObject *
drive_deferred(Drive *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *saved_loop = accel_deferred_loop, *saved_set = deferred_set;
    PyObject *saved_context = deferred_context;
    accel_deferred_loop = self->loop;
    deferred_set = self->set_running;
    deferred_context = NULL;
    PyObject *target = self->target;
    Py_INCREF(target);
    PyObject *result = PyObject_Vectorcall(target, args, nargs, NULL);
    Py_DECREF(target);
    PyObject *context = deferred_context;
    accel_deferred_loop = saved_loop;
    deferred_set = saved_set;
    deferred_context = saved_context;
    if (context == NULL)
        return result;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int bad = PyContext_Exit(context) < 0;
    if (!bad)
        bad = drive_set_running(self, Py_None) < 0;
    else
        Py_XDECREF(PyObject_CallOneArg(self->set_running, Py_None));
    Py_DECREF(context);
    if (bad) {
        Py_CLEAR(result);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return NULL;
    }
    PyErr_Restore(type, value, tb);
    return result;
}

static PyObject *
drive_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Drive *self = (Drive *)obj;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames))
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    PyObject *running = PyObject_CallNoArgs(self->get_running);
    if (running == NULL)
        return NULL;
    int inside = running != Py_None;
    Py_DECREF(running);
    PyObject *closed = inside                    ? NULL
                       : self->is_closed != NULL ? PyObject_CallNoArgs(self->is_closed)
                                                 : PyObject_GetAttr(self->loop, str_closed);
    if (!inside && closed == NULL)
        return NULL;
    int c = closed == NULL ? 0 : closed == Py_False ? 0 : PyObject_IsTrue(closed);
    Py_XDECREF(closed);
    if (c < 0)
        return NULL;
    if (inside || c)
        return PyObject_Vectorcall(self->fallback, args, nargsf, NULL);
    if (self->target != NULL && is_export_call(self->target))
        return drive_deferred(self, args, PyVectorcall_NARGS(nargsf));
    PyObject *context = PyContext_CopyCurrent();
    if (context == NULL)
        return NULL;
    if (drive_set_running(self, self->loop) < 0) {
        Py_DECREF(context);
        return NULL;
    }
    PyObject *result = NULL;
    if (PyContext_Enter(context) == 0) {
        if (self->target == NULL) {
            PyObject *t = PyObject_CallNoArgs(self->resolve);
            if (t != NULL && !PyCallable_Check(t)) {
                Py_DECREF(t);
                t = NULL;
                PyErr_SetString(PyExc_TypeError, "the resolved call is not callable");
            }
            if (t != NULL && self->target == NULL)
                self->target = t;
            else
                Py_XDECREF(t);
        }
        if (self->target != NULL) {
            PyObject *target = self->target;
            Py_INCREF(target);
            result = PyObject_Vectorcall(target, args, PyVectorcall_NARGS(nargsf), NULL);
            Py_DECREF(target);
        }
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PyContext_Exit(context) < 0) {
            Py_CLEAR(result);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        else {
            PyErr_Restore(type, value, tb);
        }
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (drive_set_running(self, Py_None) < 0) {
        Py_CLEAR(result);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    else {
        PyErr_Restore(type, value, tb);
    }
    Py_DECREF(context);
    return result;
}

static int
drive_traverse(Drive *self, visitproc visit, void *arg)
{
    Py_VISIT(self->loop);
    Py_VISIT(self->target);
    Py_VISIT(self->resolve);
    Py_VISIT(self->fallback);
    Py_VISIT(self->get_running);
    Py_VISIT(self->set_running);
    Py_VISIT(self->is_closed);
    return 0;
}

static int
drive_clear(Drive *self)
{
    Py_CLEAR(self->loop);
    Py_CLEAR(self->target);
    Py_CLEAR(self->resolve);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->get_running);
    Py_CLEAR(self->set_running);
    Py_CLEAR(self->is_closed);
    return 0;
}

static void
drive_dealloc(Drive *self)
{
    PyObject_GC_UnTrack(self);
    drive_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Drive(loop, resolve, fallback, get_running_loop, set_running_loop, plain_closed):
 * ``plain_closed``: the caller checked that ``loop.is_closed()`` is ``loop._closed``. */
static PyObject *
drive_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *loop, *resolve, *fallback, *get_running, *set_running;
    int plain_closed;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Drive takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOp", &loop, &resolve, &fallback, &get_running, &set_running,
                          &plain_closed))
        return NULL;
    if (!PyCallable_Check(resolve) || !PyCallable_Check(fallback)
        || !PyCallable_Check(get_running) || !PyCallable_Check(set_running)) {
        PyErr_SetString(PyExc_TypeError, "the steps of a drive must be callable");
        return NULL;
    }
    PyObject *is_closed = plain_closed ? NULL : PyObject_GetAttrString(loop, "is_closed");
    if (!plain_closed && is_closed == NULL)
        return NULL;
    Drive *self = (Drive *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_XDECREF(is_closed);
        return NULL;
    }
    self->vectorcall = drive_vectorcall;
#define KEEP(field) (Py_INCREF(field), self->field = field)
    KEEP(loop);
    KEEP(resolve);
    KEEP(fallback);
    KEEP(get_running);
    KEEP(set_running);
#undef KEEP
    self->is_closed = is_closed;
    self->target = NULL;
    return (PyObject *)self;
}

static PyTypeObject DriveType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polyengine.engine._accel.Drive",
    .tp_doc = "The blocking facade's call of a synchronous-path export (see polyengine.sync).",
    .tp_basicsize = sizeof(Drive),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = drive_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Drive, vectorcall),
    .tp_traverse = (traverseproc)drive_traverse,
    .tp_clear = (inquiry)drive_clear,
    .tp_dealloc = (destructor)drive_dealloc,
};

static PyObject *
accel_apply_deferred_py(PyObject *mod, PyObject *unused)
{
    if (ACCEL_APPLY_DEFERRED() < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef export_methods[] = {
    {"apply_deferred", accel_apply_deferred_py, METH_NOARGS,
     "apply the blocking facade's deferred step, if one is pending on this thread"},
    {NULL, NULL, 0, NULL},
};

int
accel_export_register(PyObject *module)
{
    if (PyModule_AddFunctions(module, export_methods) < 0)
        return -1;
    str_poisoned = PyUnicode_InternFromString("poisoned");
    str_may_enter = PyUnicode_InternFromString("may_enter");
    str_closed = PyUnicode_InternFromString("_closed");
    if (str_poisoned == NULL || str_may_enter == NULL || str_closed == NULL)
        return -1;
    if (PyType_Ready(&ExportType) < 0 || PyType_Ready(&DriveType) < 0)
        return -1;
    Py_INCREF(&ExportType);
    if (PyModule_AddObject(module, "Export", (PyObject *)&ExportType) < 0) {
        Py_DECREF(&ExportType);
        return -1;
    }
    Py_INCREF(&DriveType);
    if (PyModule_AddObject(module, "Drive", (PyObject *)&DriveType) < 0) {
        Py_DECREF(&DriveType);
        return -1;
    }
    return 0;
}
