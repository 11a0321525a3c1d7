/* What the source files of ``polyengine.engine._accel`` share. */
#ifndef POLYENGINE_ACCEL_H
#define POLYENGINE_ACCEL_H

#include <Python.h>

/* the most slots (arguments or results) a compiled call takes */
#define ACCEL_MAX_SLOTS 64

/* _accel_export.c: add the types Export and Drive to the module; -1 on error */
int accel_export_register(PyObject *module);

#endif
