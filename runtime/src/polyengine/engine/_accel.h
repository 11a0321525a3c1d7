/* What the source files of ``polyengine.engine._accel`` share. */
#ifndef POLYENGINE_ACCEL_H
#define POLYENGINE_ACCEL_H

#include <Python.h>

/* the most slots (arguments or results) a compiled call takes */
#define ACCEL_MAX_SLOTS 64

/* _accel_export.c: add the types Export and Drive to the module; -1 on error */
int accel_export_register(PyObject *module);

/* _accel_values.c: add the types Lower and LiftSpilled to the module; -1 on error */
int accel_values_register(PyObject *module);

/* _accel_guest.c: a guest memory's current bytes for the value codecs, and
 * their realloc (LiftLowerContext.allocate, step by step) */
typedef struct {
    unsigned char *base;
    unsigned long long len;
    Py_buffer buf; /* held when the bytes came through the buffer protocol */
    int has_buf;
} AccelBytes;
int accel_bytes_of(PyObject *cx, AccelBytes *b, int writable); /* -1 on error */
void accel_bytes_release(AccelBytes *b);
PyObject *accel_allocate(PyObject *cx, Py_ssize_t n); /* the pointer, or NULL */
int accel_guest_register(PyObject *module); /* init_values; -1 on error */

#if defined(_MSC_VER)
#define ACCEL_THREAD_LOCAL __declspec(thread)
#else
#define ACCEL_THREAD_LOCAL _Thread_local
#endif

/* _accel_export.c: the blocking facade's deferred step.  While a drive runs
 * a compiled export call on this thread, making its loop the running loop
 * and entering a copy of the context wait until Python code is about to run
 * (a host function, a fallback to Python); every such place calls
 * ACCEL_APPLY_DEFERRED() first (with the GIL; -1 with an exception set). */
extern ACCEL_THREAD_LOCAL PyObject *accel_deferred_loop;
int accel_apply_deferred(void);
#define ACCEL_APPLY_DEFERRED() (accel_deferred_loop == NULL ? 0 : accel_apply_deferred())

#endif
