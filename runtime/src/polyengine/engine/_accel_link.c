/* Linking and async host functions of the compiled call path (architecture.md §5).
 *
 * - ``define_imports`` and ``fill_exports``: the two per-import loops of a
 *   core instantiation in an async store (wasmtime has no ``instance_new``
 *   there), one ``wasmtime_linker_define`` or ``wasmtime_instance_export_get``
 *   per import, in place of two ctypes calls and one ctypes object each.
 * - ``new_host_funcs``: a core instance's plain host functions, one
 *   ``wasmtime_func_new_unchecked`` each, their bodies made on first call;
 *   ``copy_hosts``: its host functions' externs into its import array.
 * - ``async_entry``, ``continuation_poll``, ``continuation_drop``: the three
 *   callbacks of async host functions (``_hostasync.py``) as plain C shims in
 *   place of ctypes callbacks.  The entry copies the continuation template
 *   into wasmtime's continuation before anything else (a continuation left
 *   unset aborts the process), then calls the function's Python entry with
 *   the same integers the ctypes callback would pass and stores the key it
 *   answers as the continuation's env (the pure entry stores it itself);
 *   the poll and the drop call the same Python functions as the pure path.
 *
 * Like the rest of the extension it reaches libwasmtime only through
 * addresses the caller hands it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "_accel.h"

/* -- async host functions ------------------------------------------------- */

static const void *cont_template = NULL;  /* the continuation to copy first */
static size_t cont_size = 0;
static PyObject *poll_py = NULL;          /* _continuation_poll_py(env) -> bool */
static PyObject *drop_py = NULL;          /* _continuation_drop_py(env) */

static PyObject *
addr_or_zero(const void *p)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)p);
}

/* env: the Python entry of the function (a borrowed reference its store keeps) */
void
accel_async_entry(void *env, void *caller, void *params, size_t nparams, void *results,
            size_t nresults, void *trap_ret, void *cont)
{
    if (cont != NULL && cont_template != NULL)
        memcpy(cont, cont_template, cont_size);
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *args[8] = {NULL};
    PyObject *r = NULL;
    args[0] = Py_None;
    Py_INCREF(Py_None);
    args[1] = addr_or_zero(caller);
    args[2] = addr_or_zero(params);
    args[3] = PyLong_FromSize_t(nparams);
    args[4] = addr_or_zero(results);
    args[5] = PyLong_FromSize_t(nresults);
    args[6] = addr_or_zero(trap_ret);
    args[7] = addr_or_zero(cont);
    int ok = 1;
    for (int k = 0; k < 8; k++)
        ok = ok && args[k] != NULL;
    if (ok && env != NULL)
        r = PyObject_Vectorcall((PyObject *)env, args, 8, NULL);
    /* The Python entry answers its activation's key: the continuation's env
     * (left 0, a continuation that completes at once, on anything else). */
    if (r != NULL && cont != NULL && PyLong_CheckExact(r)) {
        void *key = PyLong_AsVoidPtr(r);
        if (key != NULL || !PyErr_Occurred())
            memcpy((char *)cont + sizeof(void *), &key, sizeof key); /* its env */
    }
    Py_XDECREF(r);
    PyErr_Clear(); /* the Python entry catches everything itself */
    for (int k = 0; k < 8; k++)
        Py_XDECREF(args[k]);
    PyGILState_Release(gil);
}

static bool
continuation_poll(void *env)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    bool done = true;
    PyObject *key = addr_or_zero(env);
    PyObject *r = key == NULL ? NULL : PyObject_CallOneArg(poll_py, key);
    Py_XDECREF(key);
    if (r != NULL) {
        int t = PyObject_IsTrue(r);
        done = t != 0; /* an error (-1) completes the call, as the pure callback does */
        Py_DECREF(r);
    }
    PyErr_Clear();
    PyGILState_Release(gil);
    return done;
}

static void
continuation_drop(void *env)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *key = addr_or_zero(env);
    PyObject *r = key == NULL ? NULL : PyObject_CallOneArg(drop_py, key);
    Py_XDECREF(key);
    Py_XDECREF(r);
    PyErr_Clear();
    PyGILState_Release(gil);
}

/* init_async(template_addr, template_size, poll_py, drop_py) */
static PyObject *
accel_init_async(PyObject *mod, PyObject *args)
{
    unsigned long long addr;
    Py_ssize_t size;
    PyObject *poll, *drop;
    if (!PyArg_ParseTuple(args, "KnOO", &addr, &size, &poll, &drop))
        return NULL;
    if (!addr || size != 3 * (Py_ssize_t)sizeof(void *)) {
        PyErr_SetString(PyExc_ValueError, "unexpected continuation layout");
        return NULL;
    }
    if (!PyCallable_Check(poll) || !PyCallable_Check(drop)) {
        PyErr_SetString(PyExc_TypeError, "poll and drop must be callable");
        return NULL;
    }
    Py_INCREF(poll);
    Py_XSETREF(poll_py, poll);
    Py_INCREF(drop);
    Py_XSETREF(drop_py, drop);
    cont_size = (size_t)size;
    cont_template = (const void *)(uintptr_t)addr;
    Py_RETURN_NONE;
}

static PyObject *
accel_async_addresses(PyObject *mod, PyObject *unused)
{
    return Py_BuildValue("KKK", (unsigned long long)(uintptr_t)&accel_async_entry,
                         (unsigned long long)(uintptr_t)&continuation_poll,
                         (unsigned long long)(uintptr_t)&continuation_drop);
}

/* define_imports(define, linker, ctx, names, base, stride) -> None | (index, error)
 *
 * One wasmtime_linker_define per import of a core module, in order: names
 * is the module's link_names (a tuple of (module, module length, field,
 * field length) with bytes names), the externs are stride bytes apart from
 * base. Stops at the first definition wasmtime refuses and returns its
 * index and the wasmtime_error_t* (the caller takes the message). */
typedef void *(*linker_define_fn)(void *, void *, const char *, size_t, const char *, size_t,
                                  const void *);

static PyObject *
accel_define_imports(PyObject *mod, PyObject *args)
{
    unsigned long long define_addr, linker, ctx, base, stride;
    PyObject *names;
    if (!PyArg_ParseTuple(args, "KKKO!KK", &define_addr, &linker, &ctx, &PyTuple_Type, &names,
                          &base, &stride))
        return NULL;
    if (define_addr == 0 || linker == 0) {
        PyErr_SetString(PyExc_ValueError, "define_imports: a null function or linker");
        return NULL;
    }
    linker_define_fn define = (linker_define_fn)(uintptr_t)define_addr;
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *entry = PyTuple_GET_ITEM(names, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4) {
            PyErr_SetString(PyExc_TypeError, "define_imports: each name is a 4-tuple");
            return NULL;
        }
        PyObject *m = PyTuple_GET_ITEM(entry, 0);
        PyObject *n = PyTuple_GET_ITEM(entry, 2);
        if (!PyBytes_Check(m) || !PyBytes_Check(n)) {
            PyErr_SetString(PyExc_TypeError, "define_imports: names are bytes");
            return NULL;
        }
        void *err = define((void *)(uintptr_t)linker, (void *)(uintptr_t)ctx,
                           PyBytes_AS_STRING(m), (size_t)PyBytes_GET_SIZE(m),
                           PyBytes_AS_STRING(n), (size_t)PyBytes_GET_SIZE(n),
                           (const void *)(uintptr_t)(base + (unsigned long long)i * stride));
        if (err != NULL)
            return Py_BuildValue("nK", i, (unsigned long long)(uintptr_t)err);
    }
    Py_RETURN_NONE;
}

/* fill_exports(get, ctx, exports, instances, base) -> -1 | index
 *
 * One wasmtime_instance_export_get per export import of a core module:
 * exports is a tuple of (slot offset, exporting instance, bytes name), the
 * exporting instance's wasmtime_instance_t is at instances[instance] (a
 * list of addresses), the extern goes to base + offset. Returns -1, or the
 * index of the first export wasmtime does not find. */
typedef bool (*export_get_fn)(void *, const void *, const char *, size_t, void *);

static PyObject *
accel_fill_exports(PyObject *mod, PyObject *args)
{
    unsigned long long get_addr, ctx, base;
    PyObject *exports, *instances;
    if (!PyArg_ParseTuple(args, "KKO!O!K", &get_addr, &ctx, &PyTuple_Type, &exports,
                          &PyList_Type, &instances, &base))
        return NULL;
    if (get_addr == 0) {
        PyErr_SetString(PyExc_ValueError, "fill_exports: a null function");
        return NULL;
    }
    export_get_fn get = (export_get_fn)(uintptr_t)get_addr;
    Py_ssize_t count = PyTuple_GET_SIZE(exports);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *entry = PyTuple_GET_ITEM(exports, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) {
            PyErr_SetString(PyExc_TypeError, "fill_exports: each export is a 3-tuple");
            return NULL;
        }
        Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
        Py_ssize_t source = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
        PyObject *name = PyTuple_GET_ITEM(entry, 2);
        if ((off == -1 || source == -1) && PyErr_Occurred())
            return NULL;
        if (off < 0 || source < 0 || source >= PyList_GET_SIZE(instances) || !PyBytes_Check(name)) {
            PyErr_SetString(PyExc_ValueError, "fill_exports: a bad export entry");
            return NULL;
        }
        unsigned long long inst = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(instances, source));
        if (inst == (unsigned long long)-1 && PyErr_Occurred())
            return NULL;
        if (!get((void *)(uintptr_t)ctx, (const void *)(uintptr_t)inst, PyBytes_AS_STRING(name),
                 (size_t)PyBytes_GET_SIZE(name), (void *)(uintptr_t)(base + (unsigned long long)off)))
            return PyLong_FromSsize_t(i);
    }
    return PyLong_FromLong(-1);
}

/* new_host_funcs(func_new, ctx, items, base, ready, exts, stride, of_offset) -> None
 *
 * The plain host functions of one core instance's imports (_pre.py
 * PlainHosts), one wasmtime_func_new_unchecked each: items is a tuple of
 * (host index, functype address, callback address, signature tag); the
 * function's env is base | index << 16 | tag, its extern goes to
 * exts + index * stride (kind set to a function, the function at of_offset),
 * and ready[index] is set. Every item is checked before anything is made. */
typedef void (*func_new_fn)(void *, const void *, const void *, void *, void *, void *);

static PyObject *
accel_new_host_funcs(PyObject *mod, PyObject *args)
{
    unsigned long long new_addr, ctx, base, exts, stride, of_offset;
    PyObject *items, *ready;
    if (!PyArg_ParseTuple(args, "KKO!KO!KKK", &new_addr, &ctx, &PyTuple_Type, &items, &base,
                          &PyByteArray_Type, &ready, &exts, &stride, &of_offset))
        return NULL;
    if (new_addr == 0 || ctx == 0 || exts == 0) {
        PyErr_SetString(PyExc_ValueError, "new_host_funcs: a null function, store or array");
        return NULL;
    }
    if ((base & 0xFFFFFFFFULL) != 0 || of_offset + 16 > stride) {
        PyErr_SetString(PyExc_ValueError, "new_host_funcs: a bad key base or extern layout");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    Py_ssize_t nready = PyByteArray_GET_SIZE(ready);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        unsigned long long v[4];
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4) {
            PyErr_SetString(PyExc_TypeError, "new_host_funcs: each item is a 4-tuple");
            return NULL;
        }
        for (int k = 0; k < 4; k++) {
            v[k] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, k));
            if (v[k] == (unsigned long long)-1 && PyErr_Occurred())
                return NULL;
        }
        if (v[0] >= (unsigned long long)nready || v[0] >= 0xFFFF || v[1] == 0 || v[2] == 0
            || v[3] > 0xFFFF) {
            PyErr_SetString(PyExc_ValueError, "new_host_funcs: a bad item");
            return NULL;
        }
    }
    func_new_fn func_new = (func_new_fn)(uintptr_t)new_addr;
    char *flags = PyByteArray_AS_STRING(ready);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        unsigned long long index = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 0));
        unsigned long long ty = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 1));
        unsigned long long cb = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 2));
        unsigned long long tag = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 3));
        unsigned char *slot = (unsigned char *)(uintptr_t)(exts + index * stride);
        slot[0] = 0; /* WASMTIME_EXTERN_FUNC */
        func_new((void *)(uintptr_t)ctx, (const void *)(uintptr_t)ty, (const void *)(uintptr_t)cb,
                 (void *)(uintptr_t)(base | index << 16 | tag), NULL, slot + of_offset);
        flags[index] = 1;
    }
    Py_RETURN_NONE;
}

/* copy_hosts(hosts, src, dst, size) -> None
 *
 * A core instance's host imports into its import array: hosts is a tuple of
 * (slot offset, host index); size bytes go from src + index * size to
 * dst + offset. Every entry is checked before anything is copied. */
static PyObject *
accel_copy_hosts(PyObject *mod, PyObject *args)
{
    unsigned long long src, dst, size;
    PyObject *hosts;
    if (!PyArg_ParseTuple(args, "O!KKK", &PyTuple_Type, &hosts, &src, &dst, &size))
        return NULL;
    if (src == 0 || dst == 0 || size == 0) {
        PyErr_SetString(PyExc_ValueError, "copy_hosts: a null array or size");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(hosts);
    for (int pass = 0; pass < 2; pass++) {
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *entry = PyTuple_GET_ITEM(hosts, i);
            if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
                PyErr_SetString(PyExc_TypeError, "copy_hosts: each host is a 2-tuple");
                return NULL;
            }
            Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
            Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
            if ((off == -1 || index == -1) && PyErr_Occurred())
                return NULL;
            if (off < 0 || index < 0) {
                PyErr_SetString(PyExc_ValueError, "copy_hosts: a bad host entry");
                return NULL;
            }
            if (pass == 1)
                memcpy((void *)(uintptr_t)(dst + (unsigned long long)off),
                       (const void *)(uintptr_t)(src + (unsigned long long)index * size),
                       (size_t)size);
        }
    }
    Py_RETURN_NONE;
}

PyObject *accel_plain_entry = NULL;

/* init_plain(plain_entry): what the trampoline asks on a plain host function's first call */
static PyObject *
accel_init_plain(PyObject *mod, PyObject *fn)
{
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "init_plain: plain_entry must be callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(accel_plain_entry, fn);
    Py_RETURN_NONE;
}

/* -- the store reaper's queue ---------------------------------------------
 *
 * ``_reaper.py`` deletes closed stores on a thread of its own. Its loop runs
 * here, with the GIL released for its whole life: the ctypes loop it replaces
 * took the GIL back after every deletion, and each of the serving thread's
 * ctypes calls (dozens per instantiation, every one releasing the GIL) could
 * then hand the GIL to it and wait for its return. ``reaper_push`` queues a
 * (store, linker) pair without releasing the GIL; ``reaper_loop`` deletes
 * them in order until ``reaper_close``, draining the queue first. */

#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <time.h>

#define REAPER_SLOTS 64

typedef void (*delete_fn)(void *);

static pthread_mutex_t reaper_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reaper_cv = PTHREAD_COND_INITIALIZER;
static unsigned long long reaper_queue[REAPER_SLOTS][2];
static size_t reaper_head = 0, reaper_count = 0;
static int reaper_open = 1;
static unsigned long long reaper_deleted = 0;
/* the loop is parked on ``reaper_cv`` (a push must wake it): it waits without a
 * timeout whenever the queue is empty, so an idle reaper costs no CPU at all;
 * a push signals only a parked loop (one that is deleting takes the next pair
 * when it looks again, without a wake-up) */
static int reaper_parked = 0;

/* reaper_push(store, linker, limit) -> bool: queued (False: full, past limit, or closed) */
static PyObject *
accel_reaper_push(PyObject *mod, PyObject *args)
{
    unsigned long long store, linker;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "KKn", &store, &linker, &limit))
        return NULL;
    int queued = 0;
    pthread_mutex_lock(&reaper_mu);
    if (reaper_open && limit > 0 && reaper_count < (size_t)limit
        && reaper_count < REAPER_SLOTS) {
        size_t slot = (reaper_head + reaper_count) % REAPER_SLOTS;
        reaper_queue[slot][0] = store;
        reaper_queue[slot][1] = linker;
        reaper_count++;
        queued = 1;
        if (reaper_parked)
            pthread_cond_signal(&reaper_cv);
    }
    pthread_mutex_unlock(&reaper_mu);
    return PyBool_FromLong(queued);
}

/* reaper_loop(store_delete, linker_delete) -> None: the reaper thread's whole life */
static PyObject *
accel_reaper_loop(PyObject *mod, PyObject *args)
{
    unsigned long long store_addr, linker_addr;
    if (!PyArg_ParseTuple(args, "KK", &store_addr, &linker_addr))
        return NULL;
    if (store_addr == 0 || linker_addr == 0) {
        PyErr_SetString(PyExc_ValueError, "reaper_loop: a null function address");
        return NULL;
    }
    delete_fn store_delete = (delete_fn)(uintptr_t)store_addr;
    delete_fn linker_delete = (delete_fn)(uintptr_t)linker_addr;
    Py_BEGIN_ALLOW_THREADS
#ifdef SCHED_BATCH
    /* a batch thread does not preempt the thread whose push woke it: the
     * deletion waits for a free core instead of taking the serving thread's */
    struct sched_param batch = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
#endif
    pthread_mutex_lock(&reaper_mu);
    for (;;) {
        while (reaper_count == 0 && reaper_open) {
            reaper_parked = 1;
            pthread_cond_wait(&reaper_cv, &reaper_mu);
            reaper_parked = 0;
        }
        if (reaper_count == 0)
            break;
        unsigned long long store = reaper_queue[reaper_head][0];
        unsigned long long linker = reaper_queue[reaper_head][1];
        reaper_head = (reaper_head + 1) % REAPER_SLOTS;
        reaper_count--;
        pthread_mutex_unlock(&reaper_mu);
        if (store)
            store_delete((void *)(uintptr_t)store);
        if (linker)
            linker_delete((void *)(uintptr_t)linker);
        pthread_mutex_lock(&reaper_mu);
        reaper_deleted++;
    }
    pthread_mutex_unlock(&reaper_mu);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* -- the epoch ticker ------------------------------------------------------
 *
 * ``_interrupt.py`` advances each engine's epoch every tick on a thread of its
 * own. A Python loop took the GIL for every tick (a hand-over from the serving
 * thread and back); this one holds no GIL at all: it waits on a condition for
 * the tick, then calls ``wasmtime_engine_increment_epoch``, until
 * ``epoch_ticker_stop`` (at exit, before the engines go). */

typedef void (*increment_fn)(void *);

static pthread_mutex_t ticker_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ticker_cv = PTHREAD_COND_INITIALIZER;
static int ticker_stopped = 0;

/* epoch_ticker(increment_epoch, engine, tick_ns) -> None: a ticker thread's whole life */
static PyObject *
accel_epoch_ticker(PyObject *mod, PyObject *args)
{
    unsigned long long increment_addr, engine;
    long long tick_ns;
    if (!PyArg_ParseTuple(args, "KKL", &increment_addr, &engine, &tick_ns))
        return NULL;
    if (increment_addr == 0 || engine == 0 || tick_ns <= 0) {
        PyErr_SetString(PyExc_ValueError, "epoch_ticker: a null function or engine, or no tick");
        return NULL;
    }
    increment_fn increment = (increment_fn)(uintptr_t)increment_addr;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&ticker_mu);
    while (!ticker_stopped) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)(tick_ns / 1000000000LL);
        until.tv_nsec += (long)(tick_ns % 1000000000LL);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000L;
        }
        int r = 0;
        while (!ticker_stopped && r != ETIMEDOUT)
            r = pthread_cond_timedwait(&ticker_cv, &ticker_mu, &until);
        if (ticker_stopped)
            break;
        pthread_mutex_unlock(&ticker_mu);
        increment((void *)(uintptr_t)engine);
        pthread_mutex_lock(&ticker_mu);
    }
    pthread_mutex_unlock(&ticker_mu);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* fork: the ticker lock is held across it, so a child's copy is never taken
 * mid-tick by a parent's thread the child does not have; the child starts with a
 * fresh lock and condition (no waiters) and no stop, for tickers of its own */
static void
ticker_before_fork(void)
{
    pthread_mutex_lock(&ticker_mu);
}

static void
ticker_after_fork_parent(void)
{
    pthread_mutex_unlock(&ticker_mu);
}

static void
ticker_after_fork_child(void)
{
    pthread_mutex_t fresh_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    ticker_mu = fresh_mu;
    ticker_cv = fresh_cv;
    ticker_stopped = 0;
}

/* epoch_ticker_stop() -> None: every ticker returns (at once, between ticks) */
static PyObject *
accel_epoch_ticker_stop(PyObject *mod, PyObject *unused)
{
    pthread_mutex_lock(&ticker_mu);
    ticker_stopped = 1;
    pthread_cond_broadcast(&ticker_cv);
    pthread_mutex_unlock(&ticker_mu);
    Py_RETURN_NONE;
}

/* reaper_close() -> [(store, linker), ...]: stop taking pairs, wake the loop; the
 * pairs still queued are handed back when no loop will take them (``loop_gone``) */
static PyObject *
accel_reaper_close(PyObject *mod, PyObject *loop_gone)
{
    int take = PyObject_IsTrue(loop_gone);
    if (take < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    pthread_mutex_lock(&reaper_mu);
    reaper_open = 0;
    pthread_cond_broadcast(&reaper_cv);
    while (take && reaper_count > 0) {
        PyObject *pair = Py_BuildValue("(KK)", reaper_queue[reaper_head][0],
                                       reaper_queue[reaper_head][1]);
        if (pair == NULL || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(out);
            pthread_mutex_unlock(&reaper_mu);
            return NULL;
        }
        Py_DECREF(pair);
        reaper_head = (reaper_head + 1) % REAPER_SLOTS;
        reaper_count--;
    }
    pthread_mutex_unlock(&reaper_mu);
    return out;
}

/* reaper_state() -> (queued, deleted, open) */
static PyObject *
accel_reaper_state(PyObject *mod, PyObject *unused)
{
    pthread_mutex_lock(&reaper_mu);
    size_t queued = reaper_count;
    unsigned long long deleted = reaper_deleted;
    int open = reaper_open;
    pthread_mutex_unlock(&reaper_mu);
    return Py_BuildValue("(nKO)", (Py_ssize_t)queued, deleted, open ? Py_True : Py_False);
}

static PyMethodDef link_methods[] = {
    {"epoch_ticker", accel_epoch_ticker, METH_VARARGS,
     "epoch_ticker(increment_epoch, engine, tick_ns): advance the epoch every tick until stopped"},
    {"epoch_ticker_stop", accel_epoch_ticker_stop, METH_NOARGS,
     "epoch_ticker_stop(): every epoch ticker returns"},
    {"reaper_push", accel_reaper_push, METH_VARARGS,
     "reaper_push(store, linker, limit) -> bool: queued for the reaper loop"},
    {"reaper_loop", accel_reaper_loop, METH_VARARGS,
     "reaper_loop(store_delete, linker_delete): delete queued stores until closed"},
    {"reaper_close", accel_reaper_close, METH_O,
     "reaper_close(loop_gone) -> pairs left: stop taking stores"},
    {"reaper_state", accel_reaper_state, METH_NOARGS,
     "reaper_state() -> (queued, deleted, open)"},
    {"init_async", accel_init_async, METH_VARARGS,
     "init_async(template, size, poll, drop): the continuation callbacks' Python side"},
    {"async_addresses", accel_async_addresses, METH_NOARGS,
     "(entry, continuation poll, continuation drop): the async host-function callbacks"},
    {"fill_exports", accel_fill_exports, METH_VARARGS,
     "fill_exports(get, ctx, exports, instances, base) -> -1 | index of a missing export"},
    {"init_plain", accel_init_plain, METH_O,
     "init_plain(plain_entry): the entry of a plain host function on its first call"},
    {"copy_hosts", accel_copy_hosts, METH_VARARGS,
     "copy_hosts(hosts, src, dst, size) -> None: host externs into an import array"},
    {"new_host_funcs", accel_new_host_funcs, METH_VARARGS,
     "new_host_funcs(func_new, ctx, items, base, ready, exts, stride, of_offset) -> None"},
    {"define_imports", accel_define_imports, METH_VARARGS,
     "define_imports(define, linker, ctx, names, base, stride) -> None | (index, error)"},
    {NULL, NULL, 0, NULL},
};

int
accel_link_register(PyObject *module)
{
    if (PyModule_AddFunctions(module, link_methods) < 0)
        return -1;
    if (pthread_atfork(ticker_before_fork, ticker_after_fork_parent, ticker_after_fork_child) != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_atfork failed for the epoch ticker");
        return -1;
    }
    return accel_hostlower_register(module);
}
