#ifndef C_STRATA_SUPPORT_H
#define C_STRATA_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/// Extends a CRC32C (Castagnoli) over `length` bytes. `crc` is the running value as returned by a
/// previous call (0 to start); the usual pre/post inversion happens inside. Uses the SSE4.2 `crc32`
/// instruction when the x86-64 CPU has it, the ARMv8 `crc32c` instructions on an AArch64 build
/// with the CRC extension, a slicing-by-8 table otherwise.
uint32_t strata_crc32c_extend(uint32_t crc, const void *data, size_t length);

/// 1 when `strata_crc32c_extend` uses a hardware instruction on this CPU.
int strata_crc32c_is_hardware(void);

/// Which path `strata_crc32c_extend` takes here: 0 the software table, 1 SSE4.2, 2 ARMv8 CRC32.
int strata_crc32c_hardware_kind(void);

/// `strata_crc32c_extend` through the software table, whatever the CPU (for tests that compare
/// the paths).
uint32_t strata_crc32c_extend_software(uint32_t crc, const void *data, size_t length);

/// `strata_crc32c_extend` through the hardware instruction: returns 1 and stores the value in
/// `*result`, or returns 0 when this build or CPU has none.
int strata_crc32c_extend_hardware(uint32_t crc, const void *data, size_t length, uint32_t *result);

/// Acquire load / release store of a pointer-sized word, for the memtable's lock-free readers.
static inline uintptr_t strata_atomic_load_acquire(const uintptr_t *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void strata_atomic_store_release(uintptr_t *p, uintptr_t v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline uint64_t strata_atomic_load_u64(const uint64_t *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void strata_atomic_store_u64(uint64_t *p, uint64_t v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/// `memcmp` without the C library's header, for the byte layer (which imports no OS module):
/// negative, zero or positive as `a` sorts before, equal to or after `b`.
/// REQUIRES: `a` and `b` each point to at least `count` readable bytes.
static inline int strata_compare_memory(const void *a, const void *b, size_t count) {
    return __builtin_memcmp(a, b, count);
}

/// The system's message for error number `code` (`strerror_r`, which is thread-safe), written
/// NUL-terminated into `buffer` of `size` bytes; returns 0, or an error number if `code` is
/// unknown or the buffer too small.
int strata_error_message(int code, char *buffer, size_t size);

/// A hint to bring the cache line at `p` in ahead of a read (recovery's bulk load gathers keys
/// and values scattered over the logs); never faults, whatever `p` is.
static inline void strata_prefetch(const void *p) {
    __builtin_prefetch(p, 0, 3);
}

#endif
