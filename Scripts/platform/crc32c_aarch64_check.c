/* Runs the ARMv8 CRC32C path of Sources/CStrataSupport/crc32c.c under emulation (Scripts/platform/
   crc32c-aarch64): hardware vs software table vs a bitwise reference, on pseudo-random inputs of
   every length 0...100 and then every 37th up to 3000, at every alignment 0...7, with random
   running values. Exit code 0: all agree; 1-3: a path disagrees; 10-12: no ARMv8 path, or a wrong
   check value. */
#include <stddef.h>
#include <stdint.h>
void *memcpy(void *d, const void *s, size_t n) { unsigned char *a = d; const unsigned char *b = s; while (n--) *a++ = *b++; return d; }
#include "crc32c.c"

static uint32_t reference(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n--) { crc ^= *p++; for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78u : 0); }
    return ~crc;
}

static uint64_t state = 0x1234567;
static uint64_t next(void) { state += 0x9E3779B97F4A7C15ull; uint64_t z = state; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31); }

static uint8_t buffer[3100];

static int run(void) {
    if (strata_crc32c_hardware_kind() != 2) return 10;
    uint32_t check;
    if (!strata_crc32c_extend_hardware(0, "123456789", 9, &check) || check != 0xE3069283u) return 11;
    if (strata_crc32c_extend(0, "123456789", 9) != 0xE3069283u) return 12;
    for (size_t i = 0; i < sizeof buffer; i++) buffer[i] = (uint8_t)next();
    for (size_t length = 0; length <= 3000; length += (length < 100 ? 1 : 37)) {
        for (size_t shift = 0; shift < 8; shift++) {
            uint32_t start = (uint32_t)next();
            const uint8_t *p = buffer + shift;
            uint32_t want = reference(start, p, length), hw = 0;
            if (!strata_crc32c_extend_hardware(start, p, length, &hw) || hw != want) return 1;
            if (strata_crc32c_extend_software(start, p, length) != want) return 2;
            if (strata_crc32c_extend(start, p, length) != want) return 3;
        }
    }
    return 0;
}

static void sys_exit(long code) {
    register long x0 __asm__("x0") = code;
    register long x8 __asm__("x8") = 93;
    __asm__ volatile("svc 0" : : "r"(x0), "r"(x8) : "memory");
    __builtin_unreachable();
}

void _start(void) { sys_exit(run()); }
