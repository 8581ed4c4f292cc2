#include "CStrataSupport.h"
#include <string.h>

/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the one implementation of the library
   (Format/CRC32C.swift calls only this file). Three paths give the same values:
     - x86-64 with SSE4.2: the crc32 instruction, chosen at run time (__builtin_cpu_supports);
     - AArch64 built with the CRC extension (__ARM_FEATURE_CRC32, e.g. every Apple silicon
       target, or -march=armv8.1-a and later): the crc32c{d,b} instructions;
     - anything else: slicing-by-8 tables (byte at a time on a big-endian CPU). */

#if defined(__x86_64__)
#define STRATA_CRC_X86 1
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32) && \
      defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define STRATA_CRC_ARM 1
#include <arm_acle.h>
#endif

static uint32_t table[8][256];
static int table_ready = 0;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0);
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_software(uint32_t crc, const uint8_t *p, size_t n) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) build_table();
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Eight bytes at a time: the word's low byte is the first byte in memory. */
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xFF] ^ table[6][(w >> 8) & 0xFF] ^ table[5][(w >> 16) & 0xFF] ^
              table[4][(w >> 24) & 0xFF] ^ table[3][(w >> 32) & 0xFF] ^ table[2][(w >> 40) & 0xFF] ^
              table[1][(w >> 48) & 0xFF] ^ table[0][w >> 56];
        p += 8;
        n -= 8;
    }
#endif
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#if defined(STRATA_CRC_X86)
__attribute__((target("sse4.2")))
static uint32_t crc_hardware(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#elif defined(STRATA_CRC_ARM)
static uint32_t crc_hardware(uint32_t crc, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        crc = __crc32cd(crc, w);
        p += 8;
        n -= 8;
    }
    while (n--) crc = __crc32cb(crc, *p++);
    return crc;
}
#endif

int strata_crc32c_hardware_kind(void) {
#if defined(STRATA_CRC_X86)
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
#elif defined(STRATA_CRC_ARM)
    return 2;
#else
    return 0;
#endif
}

int strata_crc32c_is_hardware(void) {
    return strata_crc32c_hardware_kind() != 0;
}

uint32_t strata_crc32c_extend(uint32_t crc, const void *data, size_t length) {
    const uint8_t *p = (const uint8_t *)data;
    uint32_t c = ~crc;
#if defined(STRATA_CRC_X86)
    if (__builtin_cpu_supports("sse4.2")) return ~crc_hardware(c, p, length);
#elif defined(STRATA_CRC_ARM)
    return ~crc_hardware(c, p, length);
#endif
    return ~crc_software(c, p, length);
}

uint32_t strata_crc32c_extend_software(uint32_t crc, const void *data, size_t length) {
    return ~crc_software(~crc, (const uint8_t *)data, length);
}

int strata_crc32c_extend_hardware(uint32_t crc, const void *data, size_t length, uint32_t *result) {
#if defined(STRATA_CRC_X86) || defined(STRATA_CRC_ARM)
    if (strata_crc32c_hardware_kind() == 0) return 0;
    *result = ~crc_hardware(~crc, (const uint8_t *)data, length);
    return 1;
#else
    (void)crc;
    (void)data;
    (void)length;
    (void)result;
    return 0;
#endif
}
