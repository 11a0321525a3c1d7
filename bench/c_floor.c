/* The C-extension floor of a core call (bench/README.md): add(a, b) through
 * wasmtime_func_call_unchecked of the libwasmtime the wasmtime package loaded,
 * from the least a Python extension can do per call.  The GIL is released for
 * the call, as on every measured path.  Built by bench/_cfloor.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef union { int32_t i32; int64_t i64; uint8_t raw[16]; } slot_t;
typedef void *(*call_t)(void *, const void *, slot_t *, size_t, void **);
static call_t call;
static void *ctx;
static const void *func;

static PyObject *setup(PyObject *m, PyObject *args) {
    unsigned long long c, x, f;
    if (!PyArg_ParseTuple(args, "KKK", &c, &x, &f)) return NULL;
    call = (call_t)(uintptr_t)c; ctx = (void *)(uintptr_t)x; func = (const void *)(uintptr_t)f;
    Py_RETURN_NONE;
}

static PyObject *add(PyObject *m, PyObject *const *args, Py_ssize_t n) {
    slot_t s[2] = {{0}};
    void *trap = NULL, *err;
    if (n != 2) return NULL;
    s[0].i32 = (int32_t)PyLong_AsUnsignedLong(args[0]);
    s[1].i32 = (int32_t)PyLong_AsUnsignedLong(args[1]);
    Py_BEGIN_ALLOW_THREADS
    err = call(ctx, func, s, 2, &trap);
    Py_END_ALLOW_THREADS
    if (err || trap) return PyErr_Format(PyExc_RuntimeError, "trap");
    return PyLong_FromUnsignedLong((uint32_t)s[0].i32);
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, NULL},
    {"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "c_floor", NULL, -1, methods};
PyMODINIT_FUNC PyInit_c_floor(void) { return PyModule_Create(&def); }
