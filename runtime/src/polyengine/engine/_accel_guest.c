/* Guest memory and realloc for the compiled value codecs (``_accel_values.c``).
 *
 * Part of ``polyengine.engine._accel``.  The bytes of an engine memory
 * (``GuestMemory``) are found through the addresses of
 * ``wasmtime_memory_data``/``wasmtime_memory_data_size`` that the ``wasmtime``
 * package loaded (``init_values``), only while its store's context is set (a
 * closed store goes through ``cx.mv``, which raises); an export plan gives the
 * address of the store's cell, which holds the context while the store is
 * open and direct, so that case reads no attribute.  Any other memory goes
 * through ``cx.mv`` and the buffer protocol.  ``may_leave`` is read and
 * written at its slot's offset (``AccelSlot``, see ``_accel.h``), else through
 * the instance's ``__dict__`` when the plan found it there plainly
 * (``abi/kernels.py``), else as an attribute.  ``accel_allocate`` is
 * ``LiftLowerContext.allocate`` step by step (CanonicalABI.md §"Lifting and
 * Lowering Context").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>

#include "_accel.h"

static PyObject *str_mv = NULL;
static PyObject *str_allocate = NULL;
static PyObject *one = NULL;
static PyObject *str_opts = NULL;
static PyObject *str_realloc = NULL;
static PyObject *str_inst = NULL;
static PyObject *str_may_leave = NULL;
static PyObject *str_lift_budget = NULL;
static PyObject *zero = NULL;
static PyObject *mask32 = NULL;
static PyObject *str_memory = NULL;
static PyObject *str_state = NULL;
static PyObject *str_ctx = NULL;
static PyObject *str_addr = NULL;

/* -- guest memory --------------------------------------------------------- */

typedef size_t (*memory_fn)(void *ctx, const void *memory);
static memory_fn memory_data = NULL;
static memory_fn memory_data_size = NULL;
static PyObject *guest_memory_type = NULL; /* engine.GuestMemory */


static int
pointer_attr(PyObject *o, PyObject *name, void **out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsVoidPtr(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

/* -- the context of one lift or lower ------------------------------------ */

int
accel_vcx_from_cx(AccelValueCx *v, PyObject *cx)
{
    v->make_cx = NULL;
    v->realloc = NULL;
    v->state = NULL;
    v->addr = NULL;
    v->cell = NULL;
    v->inst_dict = NULL;
    v->inst = NULL;
    v->cx = Py_NewRef(cx);
    v->opts = PyObject_GetAttr(cx, str_opts);
    if (v->opts == NULL || (v->inst = PyObject_GetAttr(cx, str_inst)) == NULL) {
        accel_vcx_done(v);
        return -1;
    }
    return 0;
}

void
accel_vcx_from_parts(AccelValueCx *v, PyObject *opts, PyObject *inst, PyObject *make_cx,
                     PyObject *realloc, PyObject *memory)
{
    v->realloc = realloc == Py_None ? NULL : realloc;
    v->state = NULL;
    v->addr = NULL;
    v->cell = NULL;
    v->inst_dict = NULL;
    if (memory != Py_None) { /* (state, address[, address of the state's cell]) */
        v->addr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(memory, 1));
        if (v->addr == NULL)
            PyErr_Clear();
        else
            v->state = PyTuple_GET_ITEM(memory, 0);
        if (v->state != NULL && PyTuple_GET_SIZE(memory) > 2) {
            v->cell = (const unsigned long long *)PyLong_AsVoidPtr(PyTuple_GET_ITEM(memory, 2));
            if (v->cell == NULL)
                PyErr_Clear();
        }
    }
    v->cx = NULL;
    v->opts = Py_NewRef(opts);
    v->inst = Py_NewRef(inst);
    v->make_cx = make_cx;
}

PyObject *
accel_vcx_cx(AccelValueCx *v)
{
    if (v->cx == NULL)
        v->cx = PyObject_CallNoArgs(v->make_cx);
    return v->cx;
}

void
accel_vcx_done(AccelValueCx *v)
{
    Py_CLEAR(v->cx);
    Py_CLEAR(v->opts);
    Py_CLEAR(v->inst);
}

/* -- memory and realloc -------------------------------------------------- */

/* The current bytes of the memory (release with accel_bytes_release); -1 on error. */
int
accel_bytes_of(AccelValueCx *v, AccelBytes *b, int writable)
{
    b->has_buf = 0;
    if (v->cell != NULL && memory_data != NULL) {
        /* the store's cell holds its context while the store is open and direct
         * (engine/_store.py); 0 says nothing, and the context is read below */
        void *ctx = (void *)(uintptr_t)*v->cell;
        if (ctx != NULL) {
            b->len = (unsigned long long)memory_data_size(ctx, v->addr);
            b->base = b->len ? (unsigned char *)memory_data(ctx, v->addr) : NULL;
            return 0;
        }
    }
    if (v->state != NULL && memory_data != NULL) {
        void *ctx = NULL;
        if (pointer_attr(v->state, str_ctx, &ctx) < 0)
            return -1;
        if (ctx != NULL) {
            b->len = (unsigned long long)memory_data_size(ctx, v->addr);
            b->base = b->len ? (unsigned char *)memory_data(ctx, v->addr) : NULL;
            return 0;
        }
    }
    PyObject *memory = PyObject_GetAttr(v->opts, str_memory);
    if (memory == NULL)
        return -1;
    if (memory_data != NULL && (PyObject *)Py_TYPE(memory) == guest_memory_type) {
        PyObject *state = PyObject_GetAttr(memory, str_state);
        void *ctx = NULL, *addr = NULL;
        int r = state == NULL ? -1 : pointer_attr(state, str_ctx, &ctx);
        Py_XDECREF(state);
        if (r == 0 && ctx != NULL)
            r = pointer_attr(memory, str_addr, &addr);
        if (r < 0) {
            Py_DECREF(memory);
            return -1;
        }
        if (ctx != NULL && addr != NULL) {
            Py_DECREF(memory);
            b->len = (unsigned long long)memory_data_size(ctx, addr);
            b->base = b->len ? (unsigned char *)memory_data(ctx, addr) : NULL;
            return 0;
        }
    }
    Py_DECREF(memory);
    PyObject *cx = accel_vcx_cx(v);
    PyObject *mv = cx == NULL ? NULL : PyObject_GetAttr(cx, str_mv);
    if (mv == NULL)
        return -1;
    int r = PyObject_GetBuffer(mv, &b->buf, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE);
    Py_DECREF(mv);
    if (r < 0)
        return -1;
    b->has_buf = 1;
    b->base = b->buf.buf;
    b->len = (unsigned long long)b->buf.len;
    return 0;
}

void
accel_bytes_release(AccelBytes *b)
{
    if (b->has_buf)
        PyBuffer_Release(&b->buf);
    b->has_buf = 0;
}

/* -- attributes in object slots (AccelSlot, _accel.h) --------------------- */

/* The offset of ``name`` in objects of ``tp`` when the generic attribute
 * access reads and writes it as a writable object member, else -1. */
static Py_ssize_t
member_offset(PyTypeObject *tp, PyObject *name)
{
    if (tp->tp_getattro != PyObject_GenericGetAttr || tp->tp_setattro != PyObject_GenericSetAttr)
        return -1;
    PyObject *d = _PyType_Lookup(tp, name); /* borrowed; gives tp a version tag */
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type))
        return -1;
    PyMemberDescrObject *m = (PyMemberDescrObject *)d;
    PyMemberDef *def = m->d_member;
    if (def->type != T_OBJECT_EX || (def->flags & READONLY)
        || !PyType_IsSubtype(tp, m->d_common.d_type))
        return -1;
    return def->offset;
}

Py_ssize_t
accel_slot_find(AccelSlot *s, PyObject *obj, PyObject *name)
{
    PyTypeObject *tp = Py_TYPE(obj);
    Py_ssize_t offset = member_offset(tp, name);
    if (PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)) { /* keep it for this tag */
        s->tp = tp;
        s->tag = tp->tp_version_tag;
        s->offset = offset;
    }
    return offset;
}

/* the slot of ``may_leave`` in the instances the value codecs meet */
static AccelSlot may_leave_slot = {NULL, 0, -1};

/* inst.may_leave (a new reference): its slot, else its plain __dict__ when given */
static PyObject *
may_leave_of(AccelValueCx *v)
{
    PyObject *x;
    if (accel_slot_get(&may_leave_slot, v->inst, str_may_leave, &x))
        return x;
    if (v->inst_dict != NULL) {
        PyObject *x = PyDict_GetItemWithError(v->inst_dict, str_may_leave);
        if (x != NULL)
            return Py_NewRef(x);
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(v->inst, str_may_leave);
}

/* inst.may_leave = value */
static int
set_may_leave(AccelValueCx *v, PyObject *value)
{
    if (accel_slot_set(&may_leave_slot, v->inst, str_may_leave, value))
        return 0;
    if (v->inst_dict != NULL)
        return PyDict_SetItem(v->inst_dict, str_may_leave, value);
    return PyObject_SetAttr(v->inst, str_may_leave, value);
}

/* inst.lift_budget: with the generic attribute access and no descriptor before
 * the instance's __dict__ (the class holds an int or nothing), the dict's entry,
 * else the class's int; else the attribute. */
PyObject *
accel_lift_budget(AccelValueCx *v)
{
    PyObject *inst_dict = v->inst_dict;
    if (inst_dict == NULL && Py_TYPE(v->inst)->tp_getattro == PyObject_GenericGetAttr) {
        PyObject **at = _PyObject_GetDictPtr(v->inst); /* may make the dict */
        if (at == NULL && PyErr_Occurred())
            return NULL;
        if (at != NULL && *at != NULL && PyDict_CheckExact(*at))
            inst_dict = *at;
    }
    if (inst_dict != NULL) {
        PyObject *t = _PyType_Lookup(Py_TYPE(v->inst), str_lift_budget); /* borrowed */
        if (t == NULL || PyLong_CheckExact(t)) {
            PyObject *x = PyDict_GetItemWithError(inst_dict, str_lift_budget);
            if (x != NULL)
                return Py_NewRef(x);
            if (PyErr_Occurred())
                return NULL;
            if (t != NULL)
                return Py_NewRef(t);
        }
    }
    return PyObject_GetAttr(v->inst, str_lift_budget);
}

/* cx.allocate(1, n) (LiftLowerContext.reallocate, step by step): the guest's
 * realloc with ``may_leave`` cleared, the view forgotten, the pointer masked;
 * a missing realloc or an instance that may not leave goes through the Python
 * method, which raises. A new reference, or NULL with an exception. */
PyObject *
accel_allocate(AccelValueCx *v, Py_ssize_t n)
{
    /* the specialised call of opts.realloc's function (which a plan has only
     * when the option is set), or opts.realloc itself */
    PyObject *realloc = v->realloc != NULL ? Py_NewRef(v->realloc)
                                           : PyObject_GetAttr(v->opts, str_realloc);
    if (realloc == NULL)
        return NULL;
    PyObject *may_leave = may_leave_of(v);
    PyObject *size = PyLong_FromSsize_t(n);
    PyObject *ptr = NULL;
    if (may_leave == NULL || size == NULL)
        goto done;
    if (realloc == Py_None || may_leave != Py_True) {
        PyObject *cx = accel_vcx_cx(v);
        if (cx == NULL)
            goto done;
        PyObject *margs[3] = {cx, one, size};
        ptr = PyObject_VectorcallMethod(
            str_allocate, margs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        goto done;
    }
    if (set_may_leave(v, Py_False) < 0)
        goto done;
    PyObject *rargs[4] = {zero, zero, one, size};
    PyObject *r = PyObject_Vectorcall(realloc, rargs, 4, NULL);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int restored = set_may_leave(v, Py_True);
    if (type != NULL) {
        if (restored < 0) { /* the finally clause's error wins, as in Python */
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        else
            PyErr_Restore(type, value, tb);
        Py_XDECREF(r);
        goto done;
    }
    if (restored < 0) {
        Py_XDECREF(r);
        goto done;
    }
    if (v->cx != NULL && PyObject_DelAttr(v->cx, str_mv) < 0) { /* refresh: forget the view */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            Py_DECREF(r);
            goto done;
        }
        PyErr_Clear();
    }
    if (!PyLong_Check(r)) { /* the Python method's int() and mask */
        PyObject *as_int = PyNumber_Long(r);
        Py_DECREF(r);
        if (as_int == NULL)
            goto done;
        r = as_int;
    }
    if (PyLong_CheckExact(r)) { /* a pointer already in range is its own mask */
        unsigned long long u = accel_as_u64(r);
        if (u <= 0xFFFFFFFFULL && !(u == (unsigned long long)-1 && PyErr_Occurred())) {
            ptr = r;
            goto done;
        }
        PyErr_Clear(); /* negative or wide: the mask below */
    }
    ptr = PyNumber_And(r, mask32);
    Py_DECREF(r);
done:
    Py_XDECREF(size);
    Py_XDECREF(may_leave);
    Py_DECREF(realloc);
    return ptr;
}

static PyObject *
init_values(PyObject *module, PyObject *args)
{
    PyObject *type;
    unsigned long long data, size;
    if (!PyArg_ParseTuple(args, "O!KK:init_values", &PyType_Type, &type, &data, &size))
        return NULL;
    if (data == 0 || size == 0) {
        PyErr_SetString(PyExc_ValueError, "init_values needs both function addresses");
        return NULL;
    }
    Py_XSETREF(guest_memory_type, Py_NewRef(type));
    memory_data = (memory_fn)(uintptr_t)data;
    memory_data_size = (memory_fn)(uintptr_t)size;
    Py_RETURN_NONE;
}

/* memory_size(ctx, memory) -> int: ``wasmtime_memory_data_size`` of an open
 * store's memory (``GuestMemory.view``'s check of its cached view), without a
 * ctypes call */
static PyObject *
memory_size(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "memory_size(ctx, memory) takes two addresses");
        return NULL;
    }
    void *ctx = PyLong_AsVoidPtr(args[0]);
    if (ctx == NULL && PyErr_Occurred())
        return NULL;
    void *addr = PyLong_AsVoidPtr(args[1]);
    if (addr == NULL && PyErr_Occurred())
        return NULL;
    if (memory_data_size == NULL || ctx == NULL || addr == NULL) {
        PyErr_SetString(PyExc_ValueError, "memory_size: no store context, memory or init_values");
        return NULL;
    }
    return PyLong_FromSize_t(memory_data_size(ctx, addr));
}

static PyMethodDef values_methods[] = {
    {"init_values", init_values, METH_VARARGS,
     "init_values(GuestMemory, memory_data, memory_data_size): the direct memory access"},
    {"memory_size", (PyCFunction)(void (*)(void))memory_size, METH_FASTCALL,
     "memory_size(ctx, memory) -> the memory's size in bytes"},
    {NULL, NULL, 0, NULL},
};

int
accel_guest_register(PyObject *module)
{
    if (PyModule_AddFunctions(module, values_methods) < 0)
        return -1;
    if ((str_mv = PyUnicode_InternFromString("mv")) == NULL
        || (str_allocate = PyUnicode_InternFromString("allocate")) == NULL
        || (str_opts = PyUnicode_InternFromString("opts")) == NULL
        || (str_memory = PyUnicode_InternFromString("memory")) == NULL
        || (str_state = PyUnicode_InternFromString("_state")) == NULL
        || (str_ctx = PyUnicode_InternFromString("ctx")) == NULL
        || (str_addr = PyUnicode_InternFromString("_addr")) == NULL
        || (str_realloc = PyUnicode_InternFromString("realloc")) == NULL
        || (str_inst = PyUnicode_InternFromString("inst")) == NULL
        || (str_may_leave = PyUnicode_InternFromString("may_leave")) == NULL
        || (str_lift_budget = PyUnicode_InternFromString("lift_budget")) == NULL
        || (one = PyLong_FromLong(1)) == NULL
        || (zero = PyLong_FromLong(0)) == NULL
        || (mask32 = PyLong_FromUnsignedLong(0xFFFFFFFFUL)) == NULL)
        return -1;
    return 0;
}
