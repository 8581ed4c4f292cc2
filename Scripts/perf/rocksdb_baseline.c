/*
 * rocksdb_baseline.c — measure RocksDB on the fixed Strata comparison workload.
 *
 * Usage: rocksdb_baseline DB_DIR [N=10000000] [G=1000000] [VERSION_STRING]
 *   DB_DIR must not already hold a database (the run creates it; the caller
 *   removes it). VERSION_STRING is only echoed into the JSON (the C API of
 *   RocksDB 7.x has no rocksdb_get_version; rocksdb-baseline.sh passes the
 *   dpkg-query version of librocksdb-dev).
 *
 * Build: cc -O2 -o rocksdb_baseline rocksdb_baseline.c -lrocksdb
 *
 * ---------------------------------------------------------------------------
 * Workload (must stay identical to the Strata side):
 *   key(i),   i in 0 ..< N, 16 bytes:
 *       bytes 0-7  = big-endian((uint64)i * 0x9E3779B97F4A7C15, wrapping)
 *       bytes 8-15 = big-endian((uint64)i)
 *   value(i), 24 bytes: the ASCII text of snprintf("value-%018llu", i)
 *       (no NUL stored).
 *   Phase 1 "fill": records i = 0, 1, ..., N-1 in that order, in WriteBatches
 *       of 1,000 records (last batch may be shorter), one rocksdb_write per
 *       batch; timed from the first batch build to the return of the last
 *       write (background flushes/compactions may still be running then).
 *   Then rocksdb_flush (wait=1) + rocksdb_compact_range(db, NULL,0, NULL,0),
 *       timed together ("flush+compact seconds").
 *   On-disk size: sum of st_size of every regular file directly in DB_DIR
 *       (SSTs, MANIFEST, WAL, LOG, OPTIONS, ...), measured right after the
 *       compaction; sst_bytes (only *.sst) is reported as well.
 *   Phase 2 "get": RNG = xorshift64*:
 *           x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
 *           return x * 0x2545F4914F6CDD1D;     (state x starts at the seed)
 *       index = next() % N. Warm-up pass of G gets with seed 42 (untimed),
 *       then a timed pass of G gets with seed 4242. Single thread. Each get
 *       uses rocksdb_get (value copied into a malloc'd buffer, then freed) and
 *       is checked: value present, 24 bytes, equal to value(index). Any miss
 *       or mismatch is counted and makes the program exit non-zero.
 *   Phase 3 "scan": one iterator, seek_to_first, next until invalid, counting
 *       records and summing value lengths; count must be N and the sum 24*N.
 *   Timing: clock_gettime(CLOCK_MONOTONIC).
 *
 * RocksDB settings used (everything else is the library default):
 *   rocksdb_options_create()
 *   rocksdb_options_increase_parallelism(opts, 2)
 *       (-> max_background_jobs = 2, env background thread pool = 2)
 *   rocksdb_options_set_create_if_missing(opts, 1)
 *   rocksdb_options_set_compression(opts, rocksdb_lz4_compression)
 *       (all levels; bottommost compression left at its default "disabled",
 *        which means the same `compression` is used for the bottommost level)
 *   block-based table options:
 *       rocksdb_block_based_options_set_block_cache(
 *           bbto, rocksdb_cache_create_lru(1 GiB = 1073741824 bytes))
 *       rocksdb_block_based_options_set_filter_policy(
 *           bbto, rocksdb_filterpolicy_create_bloom_full(10))
 *           (full-key bloom filter, 10 bits/key)
 *       everything else default (4 KiB blocks, format_version default, ...)
 *   rocksdb_options_set_block_based_table_factory(opts, bbto)
 *   write options: rocksdb_writeoptions_create(),
 *       rocksdb_writeoptions_set_sync(wo, 0)  (WAL on — disableWAL left 0)
 *   read options: rocksdb_readoptions_create() defaults (checksums verified,
 *       fill_cache = 1) for both gets and the scan
 *   flush options: rocksdb_flushoptions_create(), set_wait(fo, 1)
 * ---------------------------------------------------------------------------
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <inttypes.h>
#include <rocksdb/c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define KEY_LEN 16
#define VALUE_LEN 24
#define BATCH_RECORDS 1000
#define BLOCK_CACHE_BYTES ((size_t)1 << 30)

static void check_err(char *err, const char *what) {
    if (err != NULL) {
        fprintf(stderr, "rocksdb error during %s: %s\n", what, err);
        rocksdb_free(err);
        exit(1);
    }
}

static double now_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("clock_gettime");
        exit(1);
    }
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void put_be64(unsigned char *p, uint64_t v) {
    for (int b = 7; b >= 0; b--) {
        p[b] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

/* STRATA_PERF_ORDER=seq swaps the halves, so records arrive in key order (kv-fill-seq). */
static int sequential_keys = 0;
static void make_key(unsigned char key[KEY_LEN], uint64_t i) {
    if (sequential_keys) {
        put_be64(key, i);
        put_be64(key + 8, i * UINT64_C(0x9E3779B97F4A7C15));
        return;
    }
    put_be64(key, i * UINT64_C(0x9E3779B97F4A7C15));
    put_be64(key + 8, i);
}

static void make_value(char value[VALUE_LEN + 1], uint64_t i) {
    int n = snprintf(value, VALUE_LEN + 1, "value-%018llu", (unsigned long long)i);
    if (n != VALUE_LEN) {
        fprintf(stderr, "value for %" PRIu64 " is %d chars, expected %d\n", i, n, VALUE_LEN);
        exit(1);
    }
}

static uint64_t rng_state;
static uint64_t rng_next(void) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

static void dir_size(const char *path, uint64_t *total, uint64_t *sst, uint64_t *files) {
    DIR *d = opendir(path);
    if (d == NULL) {
        perror(path);
        exit(1);
    }
    *total = *sst = *files = 0;
    struct dirent *e;
    char buf[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(buf, sizeof buf, "%s/%s", path, e->d_name);
        struct stat st;
        if (stat(buf, &st) != 0) continue; /* file may vanish (obsolete WAL) */
        if (!S_ISREG(st.st_mode)) continue;
        *total += (uint64_t)st.st_size;
        *files += 1;
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".sst") == 0) *sst += (uint64_t)st.st_size;
    }
    closedir(d);
}

/* Returns number of misses/mismatches. */
static uint64_t get_pass(rocksdb_t *db, const rocksdb_readoptions_t *ro, uint64_t n,
                         uint64_t g, uint64_t seed) {
    unsigned char key[KEY_LEN];
    char expect[VALUE_LEN + 1];
    uint64_t bad = 0;
    rng_state = seed;
    for (uint64_t k = 0; k < g; k++) {
        uint64_t i = rng_next() % n;
        make_key(key, i);
        char *err = NULL;
        size_t vlen = 0;
        char *v = rocksdb_get(db, ro, (const char *)key, KEY_LEN, &vlen, &err);
        check_err(err, "get");
        if (v == NULL) {
            bad++;
            continue;
        }
        make_value(expect, i);
        if (vlen != VALUE_LEN || memcmp(v, expect, VALUE_LEN) != 0) bad++;
        rocksdb_free(v);
    }
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DB_DIR [records=10000000] [gets=1000000] [version]\n", argv[0]);
        return 2;
    }
    const char *order = getenv("STRATA_PERF_ORDER");
    sequential_keys = order != NULL && strcmp(order, "seq") == 0;
    const char *path = argv[1];
    uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000ULL;
    uint64_t g = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000000ULL;
    const char *version = argc > 4 ? argv[4] : "unknown";
    if (n == 0 || g == 0) {
        fprintf(stderr, "records and gets must be > 0\n");
        return 2;
    }

    /* ---- options ---- */
    rocksdb_options_t *opts = rocksdb_options_create();
    rocksdb_options_increase_parallelism(opts, 2);
    rocksdb_options_set_create_if_missing(opts, 1);
    rocksdb_options_set_compression(opts, rocksdb_lz4_compression);
    rocksdb_block_based_table_options_t *bbto = rocksdb_block_based_options_create();
    rocksdb_cache_t *cache = rocksdb_cache_create_lru(BLOCK_CACHE_BYTES);
    rocksdb_block_based_options_set_block_cache(bbto, cache);
    rocksdb_filterpolicy_t *bloom = rocksdb_filterpolicy_create_bloom_full(10);
    rocksdb_block_based_options_set_filter_policy(bbto, bloom); /* bbto owns bloom */
    rocksdb_options_set_block_based_table_factory(opts, bbto);

    char *err = NULL;
    rocksdb_t *db = rocksdb_open(opts, path, &err);
    check_err(err, "open");

    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(wo, 0);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();

    /* ---- phase 1: fill ---- */
    unsigned char key[KEY_LEN];
    char value[VALUE_LEN + 1];
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    double t0 = now_s();
    for (uint64_t i = 0; i < n;) {
        uint64_t end = i + BATCH_RECORDS < n ? i + BATCH_RECORDS : n;
        for (; i < end; i++) {
            make_key(key, i);
            make_value(value, i);
            rocksdb_writebatch_put(wb, (const char *)key, KEY_LEN, value, VALUE_LEN);
        }
        rocksdb_write(db, wo, wb, &err);
        check_err(err, "write");
        rocksdb_writebatch_clear(wb);
    }
    double fill_s = now_s() - t0;
    rocksdb_writebatch_destroy(wb);
    double fill_rps = (double)n / fill_s;
    printf("rocksdb fill_seconds=%.3f\n", fill_s);
    printf("rocksdb fill_records_per_s=%.0f\n", fill_rps);
    fflush(stdout);

    /* ---- flush + compact ---- */
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    t0 = now_s();
    rocksdb_flush(db, fo, &err);
    check_err(err, "flush");
    rocksdb_compact_range(db, NULL, 0, NULL, 0);
    double compact_s = now_s() - t0;
    rocksdb_flushoptions_destroy(fo);
    printf("rocksdb flush_compact_seconds=%.3f\n", compact_s);

    uint64_t disk_bytes, sst_bytes, disk_files;
    dir_size(path, &disk_bytes, &sst_bytes, &disk_files);
    double bytes_per_record = (double)disk_bytes / (double)n;
    printf("rocksdb disk_bytes=%" PRIu64 "\n", disk_bytes);
    printf("rocksdb disk_bytes_per_record=%.2f\n", bytes_per_record);
    printf("rocksdb sst_bytes=%" PRIu64 "\n", sst_bytes);
    printf("rocksdb disk_files=%" PRIu64 "\n", disk_files);
    fflush(stdout);

    /* ---- phase 2: gets ---- */
    t0 = now_s();
    uint64_t warm_bad = get_pass(db, ro, n, g, 42);
    double warm_s = now_s() - t0;
    t0 = now_s();
    uint64_t get_bad = get_pass(db, ro, n, g, 4242);
    double get_s = now_s() - t0;
    double get_ps = (double)g / get_s;
    printf("rocksdb warmup_gets_per_s=%.0f\n", (double)g / warm_s);
    printf("rocksdb gets_per_s=%.0f\n", get_ps);
    printf("rocksdb get_misses=%" PRIu64 "\n", warm_bad + get_bad);
    fflush(stdout);

    /* ---- phase 3: scan ---- */
    uint64_t scanned = 0, value_bytes = 0;
    t0 = now_s();
    rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t vlen = 0;
        (void)rocksdb_iter_value(it, &vlen);
        value_bytes += vlen;
        scanned++;
    }
    rocksdb_iter_get_error(it, &err);
    check_err(err, "iterator");
    double scan_s = now_s() - t0;
    rocksdb_iter_destroy(it);
    double scan_rps = (double)scanned / scan_s;
    printf("rocksdb scan_records=%" PRIu64 "\n", scanned);
    printf("rocksdb scan_value_bytes=%" PRIu64 "\n", value_bytes);
    printf("rocksdb scan_records_per_s=%.0f\n", scan_rps);

    printf("{\"engine\":\"rocksdb\",\"rocksdb_version\":\"%s\",\"records\":%" PRIu64
           ",\"gets\":%" PRIu64 ",\"fill_seconds\":%.3f,\"fill_records_per_s\":%.0f"
           ",\"flush_compact_seconds\":%.3f,\"disk_bytes\":%" PRIu64
           ",\"disk_bytes_per_record\":%.2f,\"sst_bytes\":%" PRIu64
           ",\"warmup_gets_per_s\":%.0f,\"gets_per_s\":%.0f,\"get_misses\":%" PRIu64
           ",\"scan_records\":%" PRIu64 ",\"scan_value_bytes\":%" PRIu64
           ",\"scan_records_per_s\":%.0f}\n",
           version, n, g, fill_s, fill_rps, compact_s, disk_bytes, bytes_per_record, sst_bytes,
           (double)g / warm_s, get_ps, warm_bad + get_bad, scanned, value_bytes, scan_rps);
    fflush(stdout);

    rocksdb_readoptions_destroy(ro);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_close(db);
    rocksdb_options_destroy(opts);
    rocksdb_block_based_options_destroy(bbto);
    rocksdb_cache_destroy(cache);

    int ok = 1;
    if (warm_bad + get_bad != 0) {
        fprintf(stderr, "FAIL: %" PRIu64 " gets missed or returned a wrong value\n",
                warm_bad + get_bad);
        ok = 0;
    }
    if (scanned != n || value_bytes != n * VALUE_LEN) {
        fprintf(stderr, "FAIL: scan saw %" PRIu64 " records / %" PRIu64 " value bytes, expected %"
                PRIu64 " / %" PRIu64 "\n", scanned, value_bytes, n, n * VALUE_LEN);
        ok = 0;
    }
    return ok ? 0 : 1;
}
