/* pycdr's coverage shim: the edge counters of a target built with clang's
 * -fsanitize-coverage=trace-pc-guard, written where `pycdr fuzz --coverage
 * sancov` reads them.
 *
 * Build a C/C++ target with
 *     clang -fsanitize-coverage=trace-pc-guard [-fsanitize=address] target.c \
 *           "$(pycdr fuzz coverage-shim)" -o target
 * (or compile this file once, without -fsanitize-coverage, and link the
 * object: `pycdr fuzz coverage-shim --build DIR`).
 *
 * The map: the fuzzer creates a file of PYCDR_MAP_SIZE bytes (in /dev/shm
 * when there is one, so it stays in memory) and puts its path in the
 * environment variable PYCDR_COVERAGE of the processes it spawns.  The shim
 * maps that file shared and, each time a guard is passed, adds one to the
 * byte of the guard's edge (a counter that wraps, as AFL's).  Guards are
 * numbered from 1 in the order the modules register them, so one build
 * numbers its edges alike in every process the fuzzer starts; past
 * PYCDR_MAP_SIZE they share bytes.  Without PYCDR_COVERAGE (or when the file
 * cannot be mapped) the counts go to a private map: the target runs as
 * usual.  This file must not itself be built with -fsanitize-coverage. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PYCDR_MAP_SIZE (1u << 16)

static uint8_t private_map[PYCDR_MAP_SIZE];
static uint8_t *edge_map = private_map;
static uint32_t next_guard = 1;
static int map_opened;

static void open_map(void) {
    map_opened = 1;
    const char *path = getenv("PYCDR_COVERAGE");
    if (path == NULL || *path == '\0')
        return;
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return;
    void *shared = mmap(NULL, PYCDR_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (shared != MAP_FAILED)
        edge_map = shared;
}

void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
    if (!map_opened)
        open_map();
    if (start == stop || *start != 0)
        return;                       /* this module's guards are numbered already */
    for (uint32_t *guard = start; guard < stop; guard++) {
        *guard = next_guard;
        next_guard = next_guard % (PYCDR_MAP_SIZE - 1) + 1;   /* 0 stays "not counted" */
    }
}

void __sanitizer_cov_trace_pc_guard(uint32_t *guard) {
    edge_map[*guard]++;
}
