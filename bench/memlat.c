/* Dependent-load latency of this machine, for `make bench-targets` (bench/targets.py): the
 * nanoseconds one load takes when each address comes from the load before it (a pointer
 * chase), over a buffer of KIB kibibytes. Over 256 MiB that is the memory's latency (plus the
 * TLB's), what a memory-bound run such as the k = 16 fat-tree waits on; over 256 KiB, a core's
 * cache. A busy or slower machine moves both; the simulator's own figures are read next to them.
 *
 *   memlat KIB HOPS   ->   prints "<ns per load>" on one line
 *
 * The buffer is one 64-byte line per element, linked in one random cycle (Sattolo's shuffle, so
 * that every line is visited before the chase repeats and no prefetcher can guess the next). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct line {
    size_t next;
    char pad[64 - sizeof(size_t)];
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: memlat KIB HOPS\n");
        return 2;
    }
    char *end;
    unsigned long long kib = strtoull(argv[1], &end, 10);
    if (*end || kib < 1 || kib > (4ull << 20)) {
        fprintf(stderr, "memlat: KIB %s: give 1 to 4194304 (4 GiB)\n", argv[1]);
        return 2;
    }
    unsigned long long hops = strtoull(argv[2], &end, 10);
    if (*end || hops < 1 || hops > 10000000000ull) {
        fprintf(stderr, "memlat: HOPS %s: give 1 to 1e10\n", argv[2]);
        return 2;
    }
    size_t n = (size_t)(kib << 10) / sizeof(struct line);
    struct line *a = malloc(n * sizeof(struct line));
    if (!a) {
        fprintf(stderr, "memlat: cannot allocate %llu KiB\n", kib);
        return 1;
    }
    for (size_t i = 0; i < n; i++) a[i].next = i;
    for (size_t i = n - 1; i > 0; i--) { /* Sattolo: one cycle through every line */
        size_t j = (size_t)(next_random() % i);
        size_t t = a[i].next;
        a[i].next = a[j].next;
        a[j].next = t;
    }
    size_t p = 0;
    for (size_t i = 0; i < n; i++) p = a[p].next; /* one lap to warm the caches and the TLB */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long long h = 0; h < hops; h++) p = a[p].next;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    /* p printed to stderr only if impossible, so that the chase cannot be optimised away. */
    if (p >= n) fprintf(stderr, "memlat: %zu\n", p);
    printf("%.3f\n", ns / (double)hops);
    free(a);
    return 0;
}
