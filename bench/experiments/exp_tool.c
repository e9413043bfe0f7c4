/* exp_tool: the input generator and the arrival stamper of `make experiments`
 * (bench/experiments/run.sh).  Links nothing of Ares.
 *
 *   exp_tool gen --seconds S [--rate R] [--keys K] [--seed N]
 *       prints CSV rows  ts,k,v  for S seconds of wall-clock time; ts is the
 *       wall-clock time (ms since the epoch, CLOCK_REALTIME) at which the row
 *       was written, so event time = ingest time and a result row carrying
 *       MAX(ts) says when its newest input entered the pipeline.  R rows/s
 *       paced in 1 ms steps (flushed every step); R = 0 (default) as fast as
 *       the reader takes them (a blocked write holds the clock back, so ts
 *       stays the time the row really left).  k uniform in [0, K), v in
 *       [0, 1000).  On stderr at the end: rows written and the wall time.
 *   exp_tool gen --rows N --event-rate E [--keys K] [--seed N] [--base MS] [--pace] [--start-file F]
 *       N rows as fast as the reader takes them, with a synthetic event
 *       time: ts = base + i * 1000 / E (base: the wall-clock ms at the start,
 *       or MS), so every second of event time holds E rows whatever the
 *       processing speed.  With --base the rows depend only on the options
 *       and the seed: the same data in every run.  --pace writes them at E
 *       rows per second of wall time (1 ms steps, flushed each step), row i
 *       at start + i / E s, so a row's event time is its write time minus
 *       (start - base); --start-file writes that start (wall-clock ms) to F
 *       before the first row.
 *   Both take --part I/P: of the rows above, write only those whose index
 *   is I modulo P (the rows, their values and their times are the same as
 *   without it), so P generators with the same options write a round-robin
 *   split of one input into P partitions, each in time order.
 *   exp_tool stamp
 *       copies stdin to stdout, each line led by the wall-clock time in ms
 *       (CLOCK_REALTIME) at which the read() that delivered it returned:
 *       "arrival_ms,line".
 *   exp_tool killat MS PID...
 *       sleeps until wall-clock ms MS, sends SIGKILL to every PID at once
 *       (a whole failure domain), prints the wall-clock ms of the kill.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t xrand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int gen(int argc, char **argv)
{
    double seconds = 10, rate = 0, erate = 0;
    long long nrows = -1, base = -1;
    long keys = 1000;
    int pace = 0;
    long part = 0, nparts = 1;
    const char *start_file = NULL;
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--pace")) {
            pace = 1;
            continue;
        }
        if (!v) goto usage;
        if (!strcmp(argv[i], "--seconds")) seconds = atof(v);
        else if (!strcmp(argv[i], "--rate")) rate = atof(v);
        else if (!strcmp(argv[i], "--keys")) keys = atol(v);
        else if (!strcmp(argv[i], "--rows")) nrows = atoll(v);
        else if (!strcmp(argv[i], "--event-rate")) erate = atof(v);
        else if (!strcmp(argv[i], "--seed")) rng ^= (uint64_t)atoll(v) * 0x9E3779B97F4A7C15ULL;
        else if (!strcmp(argv[i], "--base")) base = atoll(v);
        else if (!strcmp(argv[i], "--start-file")) start_file = v;
        else if (!strcmp(argv[i], "--part")) {
            if (sscanf(v, "%ld/%ld", &part, &nparts) != 2 || nparts < 1 || part < 0 || part >= nparts) goto usage;
        } else goto usage;
        i++;
    }
    if (keys < 1 || seconds <= 0 || rate < 0) goto usage;
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    int64_t t0 = now_ns(CLOCK_MONOTONIC), end = t0 + (int64_t)(seconds * 1e9);
    long long rows = 0;
    if (nrows >= 0) {
        if (erate <= 0) goto usage;
        long long start = now_ns(CLOCK_REALTIME) / 1000000;
        if (base < 0) base = start;
        if (start_file) {
            FILE *f = fopen(start_file, "w");
            if (!f || fprintf(f, "%lld\n", start) < 0 || fclose(f) != 0) {
                fprintf(stderr, "exp_tool gen: cannot write %s\n", start_file);
                return 1;
            }
        }
        while (rows < nrows) {
            long long due = nrows;
            if (pace) {
                due = (long long)((double)(now_ns(CLOCK_MONOTONIC) - t0) * erate / 1e9) + 1;
                if (due > nrows) due = nrows;
            }
            for (; rows < due; rows++) {
                long k = (long)(xrand() % (uint64_t)keys), val = (long)(xrand() % 1000);
                if (rows % nparts == part &&
                    printf("%lld,%ld,%ld\n", base + (long long)((double)rows * 1000.0 / erate), k, val) < 0)
                    goto out;
            }
            if (pace) {
                if (fflush(stdout) != 0) goto out;
                struct timespec d = {0, 1000000};
                nanosleep(&d, NULL);
            }
        }
        goto out;
    }
    for (;;) {
        int64_t t = now_ns(CLOCK_MONOTONIC);
        if (t >= end) break;
        long long due = rate > 0 ? (long long)((double)(t - t0) * rate / 1e9) + 1 : rows + 256;
        long long ts = now_ns(CLOCK_REALTIME) / 1000000;
        while (rows < due) {
            long k = (long)(xrand() % (uint64_t)keys), val = (long)(xrand() % 1000);
            if (rows % nparts == part && printf("%lld,%ld,%ld\n", ts, k, val) < 0) goto out;
            rows++;
        }
        if (rate > 0) {
            if (fflush(stdout) != 0) goto out;
            struct timespec d = {0, 1000000};
            nanosleep(&d, NULL);
        }
    }
out:
    fflush(stdout);
    fprintf(stderr, "exp_tool gen: %lld rows in %.3f s\n", rows / nparts + (rows % nparts > part),
            (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
    return 0;
usage:
    fprintf(stderr, "usage: exp_tool gen --seconds S [--rate R] [--keys K] [--seed N] [--part I/P]\n"
                    "       exp_tool gen --rows N --event-rate E [--keys K] [--seed N] [--base MS] [--pace] [--start-file F] "
                    "[--part I/P]\n");
    return 2;
}

static int killat(int argc, char **argv)
{
    long long at = atoll(argv[2]);
    pid_t pids[64];
    int n = 0;
    for (int i = 3; i < argc && n < 64; i++) pids[n++] = (pid_t)atol(argv[i]);
    for (;;) {
        long long d = at - now_ns(CLOCK_REALTIME) / 1000000;
        if (d <= 0) break;
        struct timespec t = {d / 1000, (d % 1000) * 1000000};
        nanosleep(&t, NULL);
    }
    long long ms = now_ns(CLOCK_REALTIME) / 1000000;
    for (int i = 0; i < n; i++)
        if (kill(pids[i], SIGKILL) != 0) fprintf(stderr, "exp_tool killat: %ld: %s\n", (long)pids[i], strerror(errno));
    printf("%lld\n", ms);
    return 0;
}

static int stamp(void)
{
    static char in[1 << 16];
    static char line[1 << 16];
    size_t ll = 0;
    for (;;) {
        ssize_t n = read(0, in, sizeof in);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        long long ms = now_ns(CLOCK_REALTIME) / 1000000;
        for (ssize_t i = 0; i < n; i++) {
            if (in[i] == '\n') {
                printf("%lld,%.*s\n", ms, (int)ll, line);
                ll = 0;
            } else if (ll < sizeof line - 1) {
                line[ll++] = in[i];
            }
        }
        fflush(stdout);
    }
    if (ll) printf("%lld,%.*s\n", (long long)(now_ns(CLOCK_REALTIME) / 1000000), (int)ll, line);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "gen")) return gen(argc, argv);
    if (argc == 2 && !strcmp(argv[1], "stamp")) return stamp();
    if (argc >= 4 && !strcmp(argv[1], "killat")) return killat(argc, argv);
    fprintf(stderr, "usage: exp_tool gen --seconds S [--rate R] [--keys K] [--seed N] | exp_tool stamp | "
                    "exp_tool killat MS PID...\n");
    return 2;
}
