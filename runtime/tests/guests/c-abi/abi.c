/* Component exports written against the canonical ABI by hand: no libc, a
 * bump allocator behind cabi_realloc, and a post-return that resets it.
 *
 *   clang-19 --target=wasm32-unknown-unknown -nostdlib -O2 -Wl,--no-entry
 *   wasm-tools component embed wit --world c-abi core.wasm -o embedded.wasm
 *   wasm-tools component new embedded.wasm -o c-abi.wasm
 */
#include <stddef.h>
#include <stdint.h>

#define EXPORT(name) __attribute__((export_name(name)))

extern unsigned char __heap_base;

static uintptr_t heap_top;
static uint32_t calls;

static uintptr_t align_up(uintptr_t value, uintptr_t align) {
    return (value + align - 1) & ~(align - 1);
}

/* Grows memory as needed; never frees (post-return resets the arena). */
EXPORT("cabi_realloc")
void *cabi_realloc(void *old, size_t old_size, size_t align, size_t new_size) {
    if (heap_top == 0) {
        heap_top = (uintptr_t)&__heap_base;
    }
    if (old != NULL && new_size <= old_size) {
        return old;
    }
    uintptr_t start = align_up(heap_top, align ? align : 1);
    uintptr_t end = start + new_size;
    uintptr_t limit = __builtin_wasm_memory_size(0) * 65536u;
    if (end > limit) {
        uintptr_t pages = (end - limit + 65535u) / 65536u;
        if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) {
            __builtin_trap();
        }
    }
    heap_top = end;
    unsigned char *dst = (unsigned char *)start;
    if (old != NULL) {
        const unsigned char *src = old;
        for (size_t i = 0; i < old_size; i++) {
            dst[i] = src[i];
        }
    }
    return dst;
}

static void reset_heap(void) {
    heap_top = (uintptr_t)&__heap_base;
}

EXPORT("add")
uint32_t add(uint32_t a, uint32_t b) {
    calls++;
    return a + b;
}

/* string results are returned through a static (pointer, length) pair. */
static uint32_t ret_area[2];

/* Reverses the string by Unicode scalar values (UTF-8 sequences kept whole). */
EXPORT("reverse")
uint32_t *reverse(const unsigned char *ptr, uint32_t len) {
    calls++;
    unsigned char *out = cabi_realloc(NULL, 0, 1, len);
    uint32_t i = 0;
    while (i < len) {
        uint32_t n = 1;
        unsigned char c = ptr[i];
        if (c >= 0xF0) {
            n = 4;
        } else if (c >= 0xE0) {
            n = 3;
        } else if (c >= 0xC0) {
            n = 2;
        }
        for (uint32_t k = 0; k < n; k++) {
            out[len - i - n + k] = ptr[i + k];
        }
        i += n;
    }
    ret_area[0] = (uint32_t)(uintptr_t)out;
    ret_area[1] = len;
    return ret_area;
}

EXPORT("cabi_post_reverse")
void post_reverse(uint32_t *ret) {
    (void)ret;
    reset_heap();
}

EXPORT("sum")
uint64_t sum(const uint32_t *xs, uint32_t len) {
    calls++;
    uint64_t total = 0;
    for (uint32_t i = 0; i < len; i++) {
        total += xs[i];
    }
    reset_heap();
    return total;
}

EXPORT("count-calls")
uint32_t count_calls(void) {
    return calls;
}
