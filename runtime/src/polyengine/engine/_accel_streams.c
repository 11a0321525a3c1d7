/* A guest's ``stream.read``/``stream.write`` of ``stream<u8>`` against a host end
 * that is ready, done at once in C (CanonicalABI.md §"stream.read",
 * §"stream.write"; Concurrency.md §Streams).
 *
 * Part of ``polyengine.engine._accel``.  ``StreamCopy`` is the env of the
 * async host function of one ``stream.read`` or ``stream.write`` built-in
 * (``_hostasync.define_async_host_func`` with ``stream_copy``), armed by the
 * built-in once its options are resolved (``copy_builtins.arm_stream_copy``;
 * until then every call goes to the Python entry); its callback,
 * ``stream_entry``, completes the copy itself when the host's operation is
 * the one pending on the stream and the guest's completes at once:
 *
 * - ``stream.write`` against a host read (``ReadAheadBuffer``, opened ahead
 *   as ``SharedStreamImpl.write`` does, or ``HostWritableBuffer``) with room:
 *   the bytes are appended to the read's ``bytearray`` with one memmove;
 * - ``stream.read`` against a host offer (``QueuedBytes`` of ``bytes`` and
 *   ``bytearray`` chunks, or a ``HostReadableBuffer`` of one) holding bytes: one memmove from the queue's first
 *   chunk when it holds them all (``QueuedBytes.read_bytes`` step by step),
 *   else ``read_bytes`` gives them and one memmove puts them in guest memory.
 *
 * Then, as the Python built-in does, the host's ``on_copy`` is told (with the
 * stream's ``reset_pending``), the store is woken and the status word is
 * ``COMPLETED | count << 4``; the guest end stays idle.  Anything else (no
 * current thread, an instance that may not leave, a synchronous task that may
 * not block, a bad handle, another element type, an end not idle or in a
 * waitable set, a shared stream of another class or a host pipe's whose
 * producer failed, a dropped stream, nothing pending or pending from a guest, no
 * room or nothing offered, a zero count, a range out of bounds) goes to the
 * Python entry unchanged, before anything was changed: its traps and waits are
 * the pure path's.  An error raised by the host's callbacks becomes a trap
 * carrying it, as the Python entry would report it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "_accel.h"

#define MAX_LENGTH ((1u << 28) - 1u)
#define VAL_SIZE 32    /* sizeof(wasmtime_val_t) */
#define VAL_PAYLOAD 8  /* offset of its payload */

static PyObject *s_current, *s_task, *s_inst, *s_ci, *s_may_leave, *s_record, *s_poisoned,
    *s_ft, *s_is_async, *s_handles, *s_array, *s_shared, *s_t, *s_state, *s_wset,
    *s_pending_event, *s_waiter, *s_has_sync_waiter, *s_dropped, *s_pending_buffer,
    *s_pending_inst, *s_values, *s_capacity, *s_progress, *s_ahead, *s_queued,
    *s_read_bytes, *s_failure, *s_chunks, *s_offset, *s_popleft, *s_pending_on_copy, *s_reset_pending, *s_on_wake, *s_record_host_error;

static unsigned long long fast_copies = 0; /* copies completed here (tests read it) */

typedef struct {
    PyObject_HEAD
    PyObject *entry;       /* the Python entry: every call this does not complete */
    PyObject *state;       /* the engine store's state (record_host_error) */
    PyObject *store;       /* the task model's store (current, wake) */
    PyObject *end_type;    /* ReadableStreamEnd or WritableStreamEnd */
    PyObject *elem;        /* the stream's element type (u8) */
    PyObject *opts;        /* the built-in's CanonicalOptions */
    PyObject *memory;      /* (state, address) of its engine memory */
    PyObject *make_cx;     /* called when the memory's bytes are not reachable: raises */
    PyObject *idle;        /* CopyState.IDLE */
    PyObject *ahead_type;  /* ReadAheadBuffer */
    PyObject *sink_type;   /* HostWritableBuffer */
    PyObject *queued_type; /* QueuedBytes */
    PyObject *source_type; /* HostReadableBuffer */
    PyObject *shared_type; /* SharedStreamImpl */
    PyObject *fed_type;    /* HostFedStream */
    int reading;
    int async_;
} StreamCopy;

/* One attribute access site of this file: its member slot once found
 * (``AccelSlot``, ``_accel.h``), so that reading or writing a ``__slots__``
 * attribute costs a type check instead of an attribute lookup. */
enum {
    SITE_CURRENT, SITE_TASK, SITE_INST, SITE_CI, SITE_MAY_LEAVE, SITE_RECORD, SITE_POISONED,
    SITE_FT, SITE_IS_ASYNC, SITE_HANDLES, SITE_ARRAY, SITE_SHARED, SITE_T, SITE_STATE,
    SITE_WSET, SITE_PENDING_EVENT, SITE_WAITER, SITE_SYNC_WAITER, SITE_DROPPED,
    SITE_PENDING_INST, SITE_PENDING_BUFFER, SITE_SINK_VALUES, SITE_SINK_CAPACITY,
    SITE_SINK_PROGRESS, SITE_SINK_AHEAD, SITE_QUEUED, SITE_SOURCE_VALUES, SITE_SOURCE_PROGRESS,
    SITE_HEAD_OFFSET, SITE_HEAD_QUEUED, SITE_HEAD_PROGRESS, SITE_ON_COPY, SITE_ON_WAKE,
    SITE_COUNT
};
static AccelSlot sites[SITE_COUNT];

/* ``o.name`` (a new reference), through the site's slot when it has one */
static PyObject *
site_get(int site, PyObject *o, PyObject *name)
{
    PyObject *v;
    if (accel_slot_get(&sites[site], o, name, &v))
        return v;
    return PyObject_GetAttr(o, name);
}

/* The attribute ``name`` of ``o`` is ``want`` (identity); -1 on error. */
static int
attr_is(int site, PyObject *o, PyObject *name, PyObject *want)
{
    PyObject *v = site_get(site, o, name);
    if (v == NULL)
        return -1;
    int r = v == want;
    Py_DECREF(v);
    return r;
}

/* An int attribute as a Py_ssize_t; -1 with an exception, -2 when not an int. */
static Py_ssize_t
attr_size(int site, PyObject *o, PyObject *name)
{
    PyObject *v = site_get(site, o, name);
    if (v == NULL)
        return -1;
    Py_ssize_t r = PyLong_CheckExact(v) ? PyLong_AsSsize_t(v) : -2;
    Py_DECREF(v);
    if (r == -1 && PyErr_Occurred())
        PyErr_Clear(), r = -2;
    return r;
}

/* ``o.name = v``; -1 on error. */
static int
set_size(int site, PyObject *o, PyObject *name, Py_ssize_t v)
{
    PyObject *x = PyLong_FromSsize_t(v);
    if (x == NULL)
        return -1;
    int r = accel_slot_set(&sites[site], o, name, x) ? 0 : PyObject_SetAttr(o, name, x);
    Py_DECREF(x);
    return r;
}

/* The checks before anything changes: whatever fails or raises sends the
 * call to the Python entry (rc stays 0). */
#define CHECK(expr)          \
    do {                     \
        if ((expr) <= 0)     \
            goto out;        \
    } while (0)
#define GET(var, o, name, site)                         \
    do {                                                \
        Py_XSETREF(var, site_get(site, o, name));       \
        if ((var) == NULL)                              \
            goto out;                                   \
    } while (0)

/* The guest memory's bytes [ptr, ptr + n): 1 with *base set, 0 out of reach or
 * out of bounds (Python traps then), -1 error. */
static int
guest_range(StreamCopy *sc, PyObject *inst, uint32_t ptr, uint32_t n, unsigned char **base)
{
    AccelValueCx v;
    AccelBytes b;
    accel_vcx_from_parts(&v, sc->opts, inst, sc->make_cx, NULL, sc->memory);
    int r = accel_bytes_of(&v, &b, 1);
    accel_vcx_done(&v);
    if (r < 0) {
        PyErr_Clear(); /* no bytes at hand: the Python built-in reads them */
        return 0;
    }
    int ok = (unsigned long long)ptr + n <= b.len;
    *base = ok ? b.base + ptr : NULL;
    accel_bytes_release(&b); /* an engine memory's bytes: only the address is kept */
    return ok;
}

/* The host's ``on_copy(reset_pending)``, then what ``store.wake()`` does; -1 on error. */
static int
notify_host(StreamCopy *sc, PyObject *shared)
{
    PyObject *on_copy = site_get(SITE_ON_COPY, shared, s_pending_on_copy);
    if (on_copy == NULL)
        return -1;
    PyObject *reset = PyObject_GetAttr(shared, s_reset_pending);
    PyObject *r = reset == NULL ? NULL : PyObject_CallOneArg(on_copy, reset);
    Py_DECREF(on_copy);
    Py_XDECREF(reset);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    /* Store.wake(): its ``on_wake``, when one is installed */
    PyObject *on_wake = site_get(SITE_ON_WAKE, sc->store, s_on_wake);
    if (on_wake == NULL)
        return -1;
    r = on_wake == Py_None ? Py_NewRef(Py_None) : PyObject_CallNoArgs(on_wake);
    Py_DECREF(on_wake);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* ``shared`` is of a class whose read and write are the ones done here: the
 * shared stream itself, or a host pipe's (``HostFedStream``) whose producer
 * has not failed (its read traps then); 1 yes, 0 no. */
static int
shared_known(StreamCopy *sc, PyObject *shared)
{
    PyObject *type = (PyObject *)Py_TYPE(shared);
    if (type == sc->shared_type)
        return 1;
    if (type != sc->fed_type)
        return 0;
    PyObject *failure = PyObject_GetAttr(shared, s_failure);
    if (failure == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = failure == Py_None;
    Py_DECREF(failure);
    return ok;
}

/* Every chunk of the queue is a ``bytes`` or ``bytearray`` (what ``read_bytes``
 * then returns is one byte per element); 1 yes, 0 no. */
static int
plain_chunks(PyObject *queue)
{
    PyObject *chunks = PyObject_GetAttr(queue, s_chunks);
    PyObject *it = chunks == NULL ? NULL : PyObject_GetIter(chunks);
    Py_XDECREF(chunks);
    if (it == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = 1;
    PyObject *c;
    while (ok && (c = PyIter_Next(it)) != NULL) {
        ok = PyBytes_CheckExact(c) || PyByteArray_CheckExact(c);
        Py_DECREF(c);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        ok = 0;
    }
    return ok;
}

/* ``QueuedBytes.read_bytes(k)`` into ``at`` when the first chunk holds the
 * ``k`` bytes (a ``bytes`` or ``bytearray``): 1 done, 0 not (nothing changed:
 * the method runs), -1 error. */
static int
take_head(PyObject *queue, uint32_t k, unsigned char *at)
{
    PyObject *chunks = PyObject_GetAttr(queue, s_chunks);
    if (chunks == NULL)
        return -1;
    PyObject *head = PySequence_Size(chunks) > 0 ? PySequence_GetItem(chunks, 0) : NULL;
    Py_ssize_t offset = attr_size(SITE_HEAD_OFFSET, queue, s_offset);
    Py_ssize_t queued = attr_size(SITE_HEAD_QUEUED, queue, s_queued);
    Py_ssize_t progress = attr_size(SITE_HEAD_PROGRESS, queue, s_progress);
    int r = 0;
    const char *data = NULL;
    Py_ssize_t len = 0;
    if (head != NULL && PyBytes_CheckExact(head))
        data = PyBytes_AS_STRING(head), len = PyBytes_GET_SIZE(head);
    else if (head != NULL && PyByteArray_CheckExact(head))
        data = PyByteArray_AS_STRING(head), len = PyByteArray_GET_SIZE(head);
    if (data == NULL || offset < 0 || queued < (Py_ssize_t)k || progress < 0
        || len - offset < (Py_ssize_t)k) {
        PyErr_Clear();
        goto done;
    }
    memmove(at, data + offset, k);
    r = -1;
    Py_ssize_t next = offset + k;
    if (next == len) {
        PyObject *gone = PyObject_CallMethodNoArgs(chunks, s_popleft);
        if (gone == NULL)
            goto done;
        Py_DECREF(gone);
        next = 0;
    }
    if (set_size(SITE_HEAD_OFFSET, queue, s_offset, next) < 0
        || set_size(SITE_HEAD_QUEUED, queue, s_queued, queued - k) < 0
        || set_size(SITE_HEAD_PROGRESS, queue, s_progress, progress + k) < 0)
        goto done;
    r = 1;
done:
    Py_XDECREF(head);
    Py_DECREF(chunks);
    return r;
}

/* ``values`` (a ``bytearray``) resized to ``size`` bytes, with room for
 * ``bound`` bytes reserved at once when it has to grow: the writes that fill
 * one host read then need one allocation, where ``PyByteArray_Resize``
 * reallocates (and copies) to the exact size on every large growth.  Only a
 * bytearray with no buffer exported and no bytes deleted from its front is
 * resized here; any other goes through ``PyByteArray_Resize``.  -1 on error. */
static int
grow_bytes(PyObject *values, Py_ssize_t size, Py_ssize_t bound)
{
    PyByteArrayObject *b = (PyByteArrayObject *)values;
    if (b->ob_exports != 0 || b->ob_start != b->ob_bytes || size < Py_SIZE(b))
        return PyByteArray_Resize(values, size);
    if (size >= b->ob_alloc) {
        if (bound <= size)
            return PyByteArray_Resize(values, size);
        if (PyByteArray_Resize(values, bound) < 0)
            return -1;
    }
    Py_SET_SIZE(b, size);
    b->ob_start[size] = '\0'; /* the trailing NUL a bytearray keeps */
    return 0;
}

/* The copy ``(i, ptr, n)`` done here: 1 with *payload set, 0 for the Python
 * entry (nothing changed), -1 with an exception after the copy changed state. */
static int
stream_try(StreamCopy *sc, uint32_t i, uint32_t ptr, uint32_t n, uint32_t *payload)
{
    int rc = 0;
    PyObject *thread = NULL, *task = NULL, *inst = NULL, *ci = NULL, *tmp = NULL,
             *array = NULL, *e = NULL, *shared = NULL, *pending = NULL, *values = NULL,
             *data = NULL;
    if (n == 0 || n > MAX_LENGTH)
        return 0;
    /* _copy_prologue: the current thread, may_leave, may_block, the handle */
    GET(thread, sc->store, s_current, SITE_CURRENT);
    CHECK(thread != Py_None);
    GET(task, thread, s_task, SITE_TASK);
    GET(inst, task, s_inst, SITE_INST);
    GET(ci, inst, s_ci, SITE_CI);
    CHECK(attr_is(SITE_MAY_LEAVE, ci, s_may_leave, Py_True));
    GET(tmp, inst, s_record, SITE_RECORD);
    CHECK(attr_is(SITE_POISONED, tmp, s_poisoned, Py_None));
    if (!sc->async_) {
        GET(tmp, task, s_ft, SITE_FT);
        CHECK(attr_is(SITE_IS_ASYNC, tmp, s_is_async, Py_True));
    }
    GET(tmp, ci, s_handles, SITE_HANDLES);
    GET(array, tmp, s_array, SITE_ARRAY);
    CHECK(PyList_CheckExact(array) && i < (uint64_t)PyList_GET_SIZE(array));
    e = Py_NewRef(PyList_GET_ITEM(array, (Py_ssize_t)i));
    CHECK((PyObject *)Py_TYPE(e) == sc->end_type);
    GET(shared, e, s_shared, SITE_SHARED);
    CHECK(attr_is(SITE_T, shared, s_t, sc->elem));
    CHECK(attr_is(SITE_STATE, e, s_state, sc->idle));
    CHECK(attr_is(SITE_WSET, e, s_wset, Py_None));
    CHECK(attr_is(SITE_PENDING_EVENT, e, s_pending_event, Py_None));
    CHECK(attr_is(SITE_WAITER, e, s_waiter, Py_None));
    CHECK(attr_is(SITE_SYNC_WAITER, e, s_has_sync_waiter, Py_False));
    /* SharedStreamImpl.read/write: a host operation pending, the stream open */
    CHECK(shared_known(sc, shared));
    CHECK(attr_is(SITE_DROPPED, shared, s_dropped, Py_False));
    CHECK(attr_is(SITE_PENDING_INST, shared, s_pending_inst, Py_None));
    GET(pending, shared, s_pending_buffer, SITE_PENDING_BUFFER);
    PyObject *ptype = (PyObject *)Py_TYPE(pending);
    unsigned char *at = NULL;
    uint32_t k;
    if (!sc->reading) {
        /* a guest write meets a host read: append to its bytearray */
        int ahead = ptype == sc->ahead_type;
        CHECK(ahead || ptype == sc->sink_type);
        GET(values, pending, s_values, SITE_SINK_VALUES);
        CHECK(PyByteArray_CheckExact(values));
        Py_ssize_t capacity = attr_size(SITE_SINK_CAPACITY, pending, s_capacity);
        Py_ssize_t progress = attr_size(SITE_SINK_PROGRESS, pending, s_progress);
        CHECK(capacity >= 0 && progress >= 0);
        Py_ssize_t opened = capacity;
        if (ahead) {
            Py_ssize_t bound = attr_size(SITE_SINK_AHEAD, pending, s_ahead);
            CHECK(bound >= 0);
            opened = bound > capacity ? bound : capacity;
        }
        Py_ssize_t room = opened - progress;
        CHECK(room > 0);
        CHECK(guest_range(sc, inst, ptr, n, &at));
        k = room < (Py_ssize_t)n ? (uint32_t)room : n;
        /* from here on the copy happens: errors become traps */
        rc = -1;
        if (opened != capacity && set_size(SITE_SINK_CAPACITY, pending, s_capacity, opened) < 0)
            goto out;
        Py_ssize_t have = PyByteArray_GET_SIZE(values);
        if (grow_bytes(values, have + k, opened) < 0)
            goto out;
        memmove(PyByteArray_AS_STRING(values) + have, at, k);
        if (set_size(SITE_SINK_PROGRESS, pending, s_progress, progress + k) < 0)
            goto out;
    }
    else {
        /* a guest read meets a host offer: take its next bytes */
        Py_ssize_t offered;
        if (ptype == sc->queued_type) {
            offered = attr_size(SITE_QUEUED, pending, s_queued);
            CHECK(plain_chunks(pending));
        }
        else {
            CHECK(ptype == sc->source_type);
            GET(values, pending, s_values, SITE_SOURCE_VALUES);
            CHECK(PyBytes_CheckExact(values) || PyByteArray_CheckExact(values));
            Py_ssize_t len = PyObject_Length(values);
            Py_ssize_t progress = attr_size(SITE_SOURCE_PROGRESS, pending, s_progress);
            if (len < 0)
                PyErr_Clear();
            offered = len < 0 || progress < 0 ? -1 : len - progress;
        }
        CHECK(offered > 0);
        CHECK(guest_range(sc, inst, ptr, n, &at) > 0);
        k = offered < (Py_ssize_t)n ? (uint32_t)offered : n;
        rc = -1;
        if (ptype == sc->queued_type) {
            int took = take_head(pending, k, at);
            if (took < 0)
                goto out;
            if (took)
                goto taken;
        }
        PyObject *count = PyLong_FromUnsignedLong(k);
        if (count == NULL)
            goto out;
        PyObject *args[2] = {pending, count};
        data = PyObject_VectorcallMethod(s_read_bytes, args,
                                         2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(count);
        if (data == NULL)
            goto out;
        Py_buffer view;
        if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
            goto out;
        /* the memory's address again: Python ran since it was read */
        if (view.len != (Py_ssize_t)k || guest_range(sc, inst, ptr, k, &at) <= 0) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_RuntimeError, "stream.read: the host offer changed");
            goto out;
        }
        memmove(at, view.buf, k);
        PyBuffer_Release(&view);
    }
taken:
    if (notify_host(sc, shared) < 0)
        goto out;
    *payload = k << 4; /* CopyResult.COMPLETED | progress << 4 */
    fast_copies++;
    rc = 1;
out:
    Py_XDECREF(thread);
    Py_XDECREF(task);
    Py_XDECREF(inst);
    Py_XDECREF(ci);
    Py_XDECREF(tmp);
    Py_XDECREF(array);
    Py_XDECREF(e);
    Py_XDECREF(shared);
    Py_XDECREF(pending);
    Py_XDECREF(values);
    Py_XDECREF(data);
    if (rc == 0)
        PyErr_Clear(); /* a failed look-up only sends the call to Python */
    return rc;
}

/* -- the async host function's callbacks ---------------------------------- */

static bool
done_poll(void *env)
{
    (void)env;
    return true;
}

static void
done_drop(void *env)
{
    (void)env;
}

typedef struct {
    bool (*callback)(void *);
    void *env;
    void (*finalizer)(void *);
} Continuation; /* wasmtime_async_continuation_t */

static void
stream_entry(void *env, void *caller, void *params, size_t nparams, void *results,
             size_t nresults, void *trap_ret, void *cont)
{
    StreamCopy *sc = (StreamCopy *)env;
    if (sc == NULL || sc->opts == NULL || cont == NULL || params == NULL || results == NULL || nparams != 3
        || nresults != 1) {
        accel_async_entry(sc == NULL ? NULL : sc->entry, caller, params, nparams, results,
                          nresults, trap_ret, cont);
        return;
    }
    const unsigned char *p = (const unsigned char *)params;
    uint32_t i, ptr, n, payload = 0;
    memcpy(&i, p + VAL_PAYLOAD, 4);
    memcpy(&ptr, p + VAL_SIZE + VAL_PAYLOAD, 4);
    memcpy(&n, p + 2 * VAL_SIZE + VAL_PAYLOAD, 4);
    PyGILState_STATE gil = PyGILState_Ensure();
    int r = stream_try(sc, i, ptr, n, &payload);
    if (r != 0) {
        Continuation done = {done_poll, NULL, done_drop};
        memcpy(cont, &done, sizeof done);
        if (r > 0) {
            unsigned char *out = (unsigned char *)results;
            memset(out, 0, VAL_SIZE);
            out[0] = 0; /* WASMTIME_I32 */
            memcpy(out + VAL_PAYLOAD, &payload, 4);
        }
        else {
            /* the copy happened but a host callback raised: a trap carrying it */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            PyObject *trap = value == NULL ? NULL
                                           : PyObject_CallMethodOneArg(
                                                 sc->state, s_record_host_error, value);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            void *t = trap == NULL ? NULL : PyLong_AsVoidPtr(trap);
            Py_XDECREF(trap);
            PyErr_Clear();
            if (trap_ret != NULL)
                memcpy(trap_ret, &t, sizeof t);
        }
        PyGILState_Release(gil);
        return;
    }
    PyGILState_Release(gil);
    accel_async_entry(sc->entry, caller, params, nparams, results, nresults, trap_ret, cont);
}

/* -- the type -------------------------------------------------------------- */

static PyObject *
sc_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *entry, *state;
    if (kw != NULL && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "StreamCopy takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO:StreamCopy", &entry, &state))
        return NULL;
    if (!PyCallable_Check(entry)) {
        PyErr_SetString(PyExc_TypeError, "StreamCopy: the entry must be callable");
        return NULL;
    }
    StreamCopy *sc = (StreamCopy *)type->tp_alloc(type, 0);
    if (sc == NULL)
        return NULL;
    sc->entry = Py_NewRef(entry);
    sc->state = Py_NewRef(state);
    return (PyObject *)sc;
}

/* arm(store, reading, async, end_type, elem, opts, (state, address), make_cx,
 *     (idle, ReadAheadBuffer, HostWritableBuffer, QueuedBytes, HostReadableBuffer,
 *      SharedStreamImpl, HostFedStream)):
 * what the copies done here need; until then every call goes to the entry */
static PyObject *
sc_arm(StreamCopy *sc, PyObject *args)
{
    PyObject *store, *end_type, *elem, *opts, *memory, *make_cx, *consts;
    int reading, async_;
    if (!PyArg_ParseTuple(args, "OppOOOO!OO!:arm", &store, &reading, &async_, &end_type, &elem,
                          &opts, &PyTuple_Type, &memory, &make_cx, &PyTuple_Type, &consts))
        return NULL;
    int ok = PyType_Check(end_type) && PyTuple_GET_SIZE(memory) == 2
             && PyCallable_Check(make_cx) && PyTuple_GET_SIZE(consts) == 7;
    for (Py_ssize_t k = 1; ok && k < 7; k++)
        ok = PyType_Check(PyTuple_GET_ITEM(consts, k));
    if (!ok) {
        PyErr_SetString(PyExc_TypeError,
                        "arm(store, reading, async, end_type, elem, opts, (state, address), "
                        "make_cx, (idle, ReadAheadBuffer, HostWritableBuffer, QueuedBytes, "
                        "HostReadableBuffer, SharedStreamImpl, HostFedStream))");
        return NULL;
    }
    Py_XSETREF(sc->store, Py_NewRef(store));
    Py_XSETREF(sc->end_type, Py_NewRef(end_type));
    Py_XSETREF(sc->elem, Py_NewRef(elem));
    Py_XSETREF(sc->opts, Py_NewRef(opts));
    Py_XSETREF(sc->memory, Py_NewRef(memory));
    Py_XSETREF(sc->make_cx, Py_NewRef(make_cx));
    Py_XSETREF(sc->idle, Py_NewRef(PyTuple_GET_ITEM(consts, 0)));
    Py_XSETREF(sc->ahead_type, Py_NewRef(PyTuple_GET_ITEM(consts, 1)));
    Py_XSETREF(sc->sink_type, Py_NewRef(PyTuple_GET_ITEM(consts, 2)));
    Py_XSETREF(sc->queued_type, Py_NewRef(PyTuple_GET_ITEM(consts, 3)));
    Py_XSETREF(sc->source_type, Py_NewRef(PyTuple_GET_ITEM(consts, 4)));
    Py_XSETREF(sc->shared_type, Py_NewRef(PyTuple_GET_ITEM(consts, 5)));
    Py_XSETREF(sc->fed_type, Py_NewRef(PyTuple_GET_ITEM(consts, 6)));
    sc->reading = reading;
    sc->async_ = async_;
    Py_RETURN_NONE;
}

static PyMethodDef sc_methods[] = {
    {"arm", (PyCFunction)sc_arm, METH_VARARGS, "what the copies done in C need (see the source)"},
    {NULL, NULL, 0, NULL},
};

static int
sc_traverse(StreamCopy *sc, visitproc visit, void *arg)
{
    Py_VISIT(sc->entry);
    Py_VISIT(sc->state);
    Py_VISIT(sc->store);
    Py_VISIT(sc->end_type);
    Py_VISIT(sc->elem);
    Py_VISIT(sc->opts);
    Py_VISIT(sc->memory);
    Py_VISIT(sc->make_cx);
    Py_VISIT(sc->idle);
    Py_VISIT(sc->ahead_type);
    Py_VISIT(sc->sink_type);
    Py_VISIT(sc->queued_type);
    Py_VISIT(sc->source_type);
    Py_VISIT(sc->shared_type);
    Py_VISIT(sc->fed_type);
    return 0;
}

static int
sc_clear(StreamCopy *sc)
{
    Py_CLEAR(sc->entry);
    Py_CLEAR(sc->state);
    Py_CLEAR(sc->store);
    Py_CLEAR(sc->end_type);
    Py_CLEAR(sc->elem);
    Py_CLEAR(sc->opts);
    Py_CLEAR(sc->memory);
    Py_CLEAR(sc->make_cx);
    Py_CLEAR(sc->idle);
    Py_CLEAR(sc->ahead_type);
    Py_CLEAR(sc->sink_type);
    Py_CLEAR(sc->queued_type);
    Py_CLEAR(sc->source_type);
    Py_CLEAR(sc->shared_type);
    Py_CLEAR(sc->fed_type);
    return 0;
}

static void
sc_dealloc(StreamCopy *sc)
{
    PyObject_GC_UnTrack(sc);
    sc_clear(sc);
    Py_TYPE(sc)->tp_free((PyObject *)sc);
}

static PyTypeObject StreamCopyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polyengine.engine._accel.StreamCopy",
    .tp_doc = "The env of a stream.read/stream.write async host function (_accel_streams.c).",
    .tp_basicsize = sizeof(StreamCopy),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = sc_new,
    .tp_methods = sc_methods,
    .tp_traverse = (traverseproc)sc_traverse,
    .tp_clear = (inquiry)sc_clear,
    .tp_dealloc = (destructor)sc_dealloc,
};

static PyObject *
accel_stream_entry_address(PyObject *mod, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)&stream_entry);
}

static PyObject *
accel_stream_fast_copies(PyObject *mod, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(fast_copies);
}

static PyMethodDef stream_methods[] = {
    {"stream_entry_address", accel_stream_entry_address, METH_NOARGS,
     "the async host-function callback whose env is a StreamCopy"},
    {"stream_fast_copies", accel_stream_fast_copies, METH_NOARGS,
     "how many guest stream copies completed in C so far"},
    {NULL, NULL, 0, NULL},
};

int
accel_streams_register(PyObject *module)
{
    struct {
        PyObject **slot;
        const char *name;
    } names[] = {
        {&s_current, "current"}, {&s_task, "task"}, {&s_inst, "inst"}, {&s_ci, "ci"},
        {&s_may_leave, "may_leave"}, {&s_record, "record"}, {&s_poisoned, "poisoned"},
        {&s_ft, "ft"}, {&s_is_async, "is_async"}, {&s_handles, "handles"},
        {&s_array, "array"}, {&s_shared, "shared"}, {&s_t, "t"}, {&s_state, "state"},
        {&s_wset, "wset"}, {&s_pending_event, "pending_event"}, {&s_waiter, "waiter"},
        {&s_has_sync_waiter, "has_sync_waiter"}, {&s_dropped, "dropped"},
        {&s_pending_buffer, "pending_buffer"}, {&s_pending_inst, "pending_inst"},
        {&s_values, "values"}, {&s_capacity, "capacity"}, {&s_progress, "progress"},
        {&s_ahead, "ahead"}, {&s_queued, "queued"}, {&s_read_bytes, "read_bytes"}, {&s_failure, "failure"},
        {&s_chunks, "chunks"}, {&s_offset, "offset"}, {&s_popleft, "popleft"},
        {&s_pending_on_copy, "pending_on_copy"}, {&s_reset_pending, "reset_pending"},
        {&s_on_wake, "on_wake"}, {&s_record_host_error, "record_host_error"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if ((*names[k].slot = PyUnicode_InternFromString(names[k].name)) == NULL)
            return -1;
    if (PyType_Ready(&StreamCopyType) < 0)
        return -1;
    Py_INCREF(&StreamCopyType);
    if (PyModule_AddObject(module, "StreamCopy", (PyObject *)&StreamCopyType) < 0) {
        Py_DECREF(&StreamCopyType);
        return -1;
    }
    return PyModule_AddFunctions(module, stream_methods);
}
