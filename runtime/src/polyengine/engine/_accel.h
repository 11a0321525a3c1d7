/* What the source files of ``polyengine.engine._accel`` share. */
#ifndef POLYENGINE_ACCEL_H
#define POLYENGINE_ACCEL_H

#include <Python.h>

/* the most slots (arguments or results) a compiled call takes */
#define ACCEL_MAX_SLOTS 64

/* _accel_export.c: add the types Export and Drive to the module; -1 on error */
int accel_export_register(PyObject *module);

/* _accel_link.c: add define_imports, fill_exports, init_async, async_addresses,
 * new_host_funcs, copy_hosts and init_plain; -1 on error */
int accel_link_register(PyObject *module);
/* _accel_link.c: _store.plain_entry(env) -> entry | None, set by init_plain: what
 * the trampoline asks on a plain host function's first call (NULL: not set) */
extern PyObject *accel_plain_entry;
/* _accel_link.c: the async host-function callback whose env is the Python entry */
void accel_async_entry(void *env, void *caller, void *params, size_t nparams, void *results,
                       size_t nresults, void *trap_ret, void *cont);
/* _accel_streams.c: add StreamCopy, stream_entry_address and stream_fast_copies; -1 on error */
int accel_streams_register(PyObject *module);

/* _accel_hostlower.c: add store_int_result (a host import's result stored at
 * once through the out-pointer); -1 on error */
int accel_hostlower_register(PyObject *module);

/* _accel_values.c: add the types Lower and LiftSpilled to the module; -1 on error */
int accel_values_register(PyObject *module);

/* _accel_values.c: an export call's compiled values (``Export`` with a plan):
 * the type test (1: taken, 0: not, -1: error), then lower, core(flat), lift.
 * The test keeps the record fields it looked up in ``memo`` (references, in
 * the order the lower takes them; ``full`` when they did not fit), so the
 * lower does not look them up again; accel_memo_clear releases them. */
#define ACCEL_MEMO_SIZE 16
typedef struct {
    PyObject *items[ACCEL_MEMO_SIZE];
    int n;
    int full;
} AccelMemo;
int accel_values_check(PyObject *plan, PyObject *const *items, Py_ssize_t n, AccelMemo *memo);
PyObject *accel_values_call(PyObject *plan, PyObject *core, PyObject *const *items,
                            Py_ssize_t n, AccelMemo *memo);
void accel_memo_clear(AccelMemo *memo);

/* _accel_values.c: the interpreter's entry points for the callable types of
 * _accel_valuetypes.c (see there) */
typedef struct AccelValueCx AccelValueCx;
int accel_check_seq(PyObject *programs, PyObject *const *items, Py_ssize_t n, int depth);
PyObject *accel_lower_all(AccelValueCx *v, PyObject *programs, PyObject *vs,
                          PyObject *block_trap);
int accel_lift_spilled(AccelValueCx *v, PyObject *program, unsigned long long size,
                       unsigned long long align, PyObject *results, long long *budget,
                       int *charged, PyObject **out);
extern PyObject *accel_str_budget;
int accel_value_types_register(PyObject *module); /* _accel_valuetypes.c */

/* 1 with *x the value when v is an exact int of at most one digit (its
 * value inline: CPython's small ints and every |v| < 2**30), else 0. */
static inline int
accel_compact(PyObject *v, long long *x)
{
    if (!PyLong_CheckExact(v))
        return 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Long_IsCompact((PyLongObject *)v))
        return 0;
    *x = (long long)PyUnstable_Long_CompactValue((PyLongObject *)v);
#else
    Py_ssize_t size = Py_SIZE(v);
    if (size < -1 || size > 1)
        return 0;
    *x = size == 0 ? 0 : size * (long long)((PyLongObject *)v)->ob_digit[0];
#endif
    return 1;
}

/* PyLong_AsLongLong and PyLong_AsUnsignedLongLong, the same values and errors;
 * an int of one digit is read inline (accel_compact), and where ``long`` has 64
 * bits a wider exact int in range by the digit loop of PyLong_AsLongAndOverflow,
 * as those two convert any int of more than one 30-bit digit (2**30 and beyond,
 * e.g. a negative s32 as a u32) through a byte array, an order of magnitude
 * more work. */
static inline long long
accel_as_s64(PyObject *v)
{
    long long c;
    if (accel_compact(v, &c))
        return c;
#if SIZEOF_LONG >= 8
    if (PyLong_CheckExact(v)) {
        int overflow;
        long x = PyLong_AsLongAndOverflow(v, &overflow);
        if (!overflow)
            return x;
    }
#endif
    return PyLong_AsLongLong(v);
}
static inline unsigned long long
accel_as_u64(PyObject *v)
{
    long long c;
    if (accel_compact(v, &c) && c >= 0)
        return (unsigned long long)c;
#if SIZEOF_LONG >= 8
    if (PyLong_CheckExact(v)) {
        int overflow;
        long x = PyLong_AsLongAndOverflow(v, &overflow);
        if (!overflow && x >= 0)
            return (unsigned long long)x;
    }
#endif
    return PyLong_AsUnsignedLongLong(v);
}

/* _accel_guest.c: an attribute held in an object slot (a ``__slots__`` entry such
 * as ComponentInstance's ``may_enter`` and ``may_leave``, abi/resources.py), read
 * and written at its member's offset.  The offset is found once per type from
 * the member descriptor that attribute lookup finds first, and is used only
 * while the object's type is that type at the same version tag (any change to
 * the class or its bases changes the tag); any other object, or a type whose
 * attribute access is customised or whose lookup finds no writable object
 * member, takes the attribute protocol (accel_slot_get/set return 0 then). */
typedef struct {
    PyTypeObject *tp;  /* borrowed: version tags are never reused, so a freed type never matches */
    unsigned int tag;  /* tp's version tag when the offset was found */
    Py_ssize_t offset; /* of the member in tp's objects, or -1 */
} AccelSlot;
/* the member's offset in objects of obj's type, found and kept in s; -1 if none */
Py_ssize_t accel_slot_find(AccelSlot *s, PyObject *obj, PyObject *name);
static inline Py_ssize_t
accel_slot_offset(AccelSlot *s, PyObject *obj, PyObject *name)
{
    PyTypeObject *tp = Py_TYPE(obj);
    if (tp == s->tp && tp->tp_version_tag == s->tag
        && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG))
        return s->offset;
    return accel_slot_find(s, obj, name);
}
/* 1 with *out a new reference; 0: use the attribute protocol (no error set) */
static inline int
accel_slot_get(AccelSlot *s, PyObject *obj, PyObject *name, PyObject **out)
{
    Py_ssize_t offset = accel_slot_offset(s, obj, name);
    PyObject *x = offset < 0 ? NULL : *(PyObject **)((char *)obj + offset);
    if (x == NULL) /* no slot, or unset: the attribute protocol (which raises) */
        return 0;
    *out = Py_NewRef(x);
    return 1;
}
/* 1 when written; 0: use the attribute protocol */
static inline int
accel_slot_set(AccelSlot *s, PyObject *obj, PyObject *name, PyObject *value)
{
    Py_ssize_t offset = accel_slot_offset(s, obj, name);
    if (offset < 0)
        return 0;
    PyObject **at = (PyObject **)((char *)obj + offset);
    PyObject *old = *at;
    *at = Py_NewRef(value);
    Py_XDECREF(old);
    return 1;
}

/* _accel_guest.c: a guest memory's current bytes for the value codecs, and
 * their realloc (LiftLowerContext.allocate, step by step) */
typedef struct {
    unsigned char *base;
    unsigned long long len;
    Py_buffer buf; /* held when the bytes came through the buffer protocol */
    int has_buf;
} AccelBytes;
/* what a lift or lower uses of its LiftLowerContext; an export call makes the
 * context itself (make_cx()) only when Python code needs one */
struct AccelValueCx {
    PyObject *cx;      /* owned; NULL until needed when make_cx is set */
    PyObject *opts;    /* owned */
    PyObject *inst;    /* owned */
    PyObject *make_cx; /* borrowed; NULL when the context was given */
    PyObject *realloc; /* borrowed: opts.realloc's core function specialised, or NULL */
    PyObject *state;   /* borrowed: the engine memory's store state (ctx), or NULL */
    void *addr;        /* the engine memory's address, with state */
    const unsigned long long *cell; /* the store's cell (ctx while direct, else 0), or NULL */
    PyObject *inst_dict; /* borrowed: inst's __dict__ holding may_leave plainly, or NULL */
};
int accel_vcx_from_cx(AccelValueCx *v, PyObject *cx); /* -1 on error */
void accel_vcx_from_parts(AccelValueCx *v, PyObject *opts, PyObject *inst, PyObject *make_cx,
                          PyObject *realloc, PyObject *memory);
PyObject *accel_vcx_cx(AccelValueCx *v); /* borrowed, made on first use; NULL on error */
void accel_vcx_done(AccelValueCx *v);
int accel_bytes_of(AccelValueCx *v, AccelBytes *b, int writable); /* -1 on error */
void accel_bytes_release(AccelBytes *b);
PyObject *accel_allocate(AccelValueCx *v, Py_ssize_t n); /* the pointer, or NULL */
PyObject *accel_lift_budget(AccelValueCx *v); /* inst.lift_budget, or NULL */
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
