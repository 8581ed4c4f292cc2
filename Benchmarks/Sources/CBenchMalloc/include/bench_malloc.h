#ifndef BENCH_MALLOC_H
#define BENCH_MALLOC_H
#include <stddef.h>

/// The bytes the C heap has handed out and not taken back (glibc: mallinfo2's uordblks + hblkhd);
/// 0 where the C library does not say.
size_t bench_heap_in_use(void);

#endif
