/* A host import's result stored through the guest's out-pointer at once
 * (CanonicalABI.md §``canon lower``, async: the callee returned before the
 * built-in did; §"Storing" for the integer types).
 *
 * Part of ``polyengine.engine._accel``.  ``store_int_result`` is the fast
 * case of ``HostLower.lower_result``: an integer result (u8..u64, s8..s64)
 * of an exact ``int`` in range, at an aligned address inside a 32-bit
 * engine memory.  It answers whether it stored the value; on any doubt (the
 * value's type or range, the pointer, a closed store) it stores nothing and
 * raises nothing, and the Python codec runs instead, which stores or raises
 * its own error.  The memory's bytes come from ``accel_bytes_of``
 * (``_accel_guest.c``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_accel.h"

#define CODE_SIGNED 16 /* the code is the size in bytes, plus this when signed */

/* The value as the integer's bytes (little-endian in ``out``); 0 on any doubt. */
static int
int_bits(PyObject *value, int size, int is_signed, unsigned long long *out)
{
    if (!PyLong_CheckExact(value)) /* (a bool is a subclass: the codec refuses it) */
        return 0;
    if (is_signed) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (size < 8) {
            long long lo = -(1LL << (8 * size - 1));
            long long hi = (1LL << (8 * size - 1)) - 1;
            if (v < lo || v > hi)
                return 0;
        }
        *out = (unsigned long long)v;
        return 1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (size < 8 && v >> (8 * size))
        return 0;
    *out = v;
    return 1;
}

/* store_int_result(parts, code, flat, at, value) -> bool: the value stored at
 * the out-pointer flat[at] of the memory ``parts`` ((store state, address)). */
static PyObject *
store_int_result(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "store_int_result(parts, code, flat, at, value) takes 5 arguments");
        return NULL;
    }
    long code = PyLong_AsLong(args[1]);
    Py_ssize_t at = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred())
        return NULL;
    int size = (int)(code & (CODE_SIGNED - 1));
    if (size != 1 && size != 2 && size != 4 && size != 8) {
        PyErr_SetString(PyExc_ValueError, "store_int_result: the size is 1, 2, 4 or 8 bytes");
        return NULL;
    }
    unsigned long long bits;
    if (!int_bits(args[4], size, (code & CODE_SIGNED) != 0, &bits))
        Py_RETURN_FALSE;
    PyObject *item = PySequence_GetItem(args[2], at);
    if (item == NULL) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    unsigned long long ptr = PyLong_Check(item) ? PyLong_AsUnsignedLongLongMask(item)
                                                : (unsigned long long)-1;
    Py_DECREF(item);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    ptr &= 0xFFFFFFFFULL;
    if (ptr & (unsigned long long)(size - 1))
        Py_RETURN_FALSE;
    /* no options: a closed store (no context) fails here, and Python raises */
    AccelValueCx v;
    accel_vcx_from_parts(&v, Py_None, Py_None, NULL, Py_None, args[0]);
    AccelBytes b;
    if (v.state == NULL || accel_bytes_of(&v, &b, 1) < 0) {
        PyErr_Clear();
        accel_vcx_done(&v);
        Py_RETURN_FALSE;
    }
    int stored = 0;
    if (b.base != NULL && ptr + (unsigned long long)size <= b.len) {
        for (int k = 0; k < size; k++)
            b.base[ptr + (unsigned long long)k] = (unsigned char)(bits >> (8 * k));
        stored = 1;
    }
    accel_bytes_release(&b);
    accel_vcx_done(&v);
    return PyBool_FromLong(stored);
}

static PyMethodDef hostlower_methods[] = {
    {"store_int_result", (PyCFunction)(void (*)(void))store_int_result, METH_FASTCALL,
     "store_int_result(parts, code, flat, at, value) -> bool: an integer result stored "
     "at the out-pointer flat[at] (code: size in bytes, +16 when signed)"},
    {NULL, NULL, 0, NULL},
};

int
accel_hostlower_register(PyObject *module)
{
    return PyModule_AddFunctions(module, hostlower_methods);
}
