/* SPDX-License-Identifier: BSD-3-Clause */
/* Runs a libFuzzer target without libFuzzer (any compiler): every file of
 * the seed corpus given on the command line, then a fixed number of
 * deterministic mutations of them. CTest runs this on every build; real
 * fuzzing is tools/fuzz.sh (clang, -fsanitize=fuzzer). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MUTATIONS 20000
#define FUZZ_MAX_INPUT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static size_t load(const char *path, uint8_t *buf)
{
    FILE *f = fopen(path, "rb");
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, FUZZ_MAX_INPUT, f);
    fclose(f);
    return n;
}

static void mutate_and_run(const uint8_t *seed, size_t size)
{
    uint8_t buf[FUZZ_MAX_INPUT];
    size_t n = size, k, edits = 1 + next_random() % 8;

    memcpy(buf, seed, size);
    for (k = 0; k < edits; k++) {
        size_t pos = n > 0 ? next_random() % n : 0;

        switch (next_random() % 4) {
        case 0: /* flip a byte */
            if (n > 0)
                buf[pos] = (uint8_t)next_random();
            break;
        case 1: /* insert an interesting byte */
            if (n < FUZZ_MAX_INPUT) {
                static const char interesting[] = ":/@[]%?=\n0 9";
                memmove(buf + pos + 1, buf + pos, n - pos);
                buf[pos] = (uint8_t)interesting[next_random() %
                                                (sizeof(interesting) - 1)];
                n++;
            }
            break;
        case 2: /* delete */
            if (n > 0) {
                memmove(buf + pos, buf + pos + 1, n - pos - 1);
                n--;
            }
            break;
        default: /* truncate */
            n = pos;
            break;
        }
    }
    LLVMFuzzerTestOneInput(buf, n);
}

int main(int argc, char **argv)
{
    static uint8_t seeds[64][FUZZ_MAX_INPUT];
    size_t sizes[64];
    size_t count = 0, i;
    struct dirent *e;
    char path[4096];
    DIR *d;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    d = opendir(argv[1]);
    if (d == NULL) {
        perror(argv[1]);
        return 2;
    }
    while ((e = readdir(d)) != NULL && count < 64) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
        sizes[count] = load(path, seeds[count]);
        LLVMFuzzerTestOneInput(seeds[count], sizes[count]);
        count++;
    }
    closedir(d);
    if (count == 0) {
        fprintf(stderr, "%s: empty corpus\n", argv[1]);
        return 2;
    }
    for (i = 0; i < MUTATIONS; i++)
        mutate_and_run(seeds[i % count], sizes[i % count]);
    printf("%zu seeds, %d mutations: no crash\n", count, MUTATIONS);
    return 0;
}
