/*
 * engine_bench: the single-node engine's figures (issue 3, "Figures").
 *
 * One synthetic input, replayed four ways:
 *   1. the engine through engine_push_rows, on a real data directory (stream
 *      log and window state in LMDB, a standing query with a CSV file sink);
 *   2. the same through a push query whose exec_out only counts rows;
 *   3. a hand-written loop doing the same windowed aggregation in memory
 *      (one open-addressing hash table for the open window, emitted when the
 *      window closes): the ceiling the engine is measured against;
 *   4. the same tuples as CSV through `ares-sql --ingest`, end to end, timed
 *      from the outside, with the child's peak RSS; then twice the input
 *      piped in, to show that peak RSS follows the open windows, not the
 *      input size.
 * The query is
 *   SELECT k, COUNT(*), SUM(v), MAX(v) FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k
 * Input: ts increasing (--rate tuples per second of event time), k uniform
 * among --keys keys, v a double with two decimals.  Each run's output is
 * checked against the loop's: same rows, same total count, same sum of sums.
 * Results print as `figure: name = value` lines.
 *
 * Not a test: nothing fails on a slow machine.  A disagreement between the
 * engine and the loop, or an engine error, exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec.h"

#define T0 1700000000000LL /* event time of the first tuple, epoch ms */
#define CYCLE (1u << 20)   /* keys and values repeat after this many tuples */

typedef struct bopts {
    int64_t tuples;
    int keys;
    int64_t rate;          /* tuples per second of event time */
    const char *tmp;       /* parent of the temporary data directories */
    const char *ares_sql;  /* binary for the CSV figures, or NULL */
    int64_t csv_tuples;    /* 0: same as tuples */
    int engine, push, loop, csv;
} bopts;

/* What a run produced, to compare with the loop. */
typedef struct result {
    int64_t rows;    /* output rows (windows x groups) */
    int64_t count;   /* sum of COUNT(*) */
    double sum;      /* sum of SUM(v) */
    double max;      /* sum of MAX(v) */
    double secs;
} result;

static int32_t *g_keys;
static int32_t *g_cents;

static uint64_t rng = 0x853c49e6748fea9bull;
static uint64_t rng_next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int data_init(const bopts *o)
{
    g_keys = malloc(CYCLE * sizeof *g_keys);
    g_cents = malloc(CYCLE * sizeof *g_cents);
    if (!g_keys || !g_cents) return -1;
    for (uint32_t i = 0; i < CYCLE; i++) {
        g_keys[i] = (int32_t)(rng_next() % (uint64_t)o->keys);
        g_cents[i] = (int32_t)(rng_next() % 200001) - 100000;
    }
    return 0;
}

static inline int64_t tuple_ts(const bopts *o, int64_t i) { return T0 + i * 1000 / o->rate; }
static inline int64_t tuple_key(int64_t i) { return g_keys[i & (CYCLE - 1)]; }
static inline double tuple_val(int64_t i) { return g_cents[i & (CYCLE - 1)] / 100.0; }

static double now_s(void) { return (double)clock_mono_ns() / 1e9; }

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static void rm_rf(const char *dir) { nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

static int make_tmpdir(const bopts *o, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/ares-bench.XXXXXX", o->tmp);
    if (!mkdtemp(buf)) {
        fprintf(stderr, "engine_bench: mkdtemp %s: %s\n", buf, strerror(errno));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the loop */

typedef struct lslot {
    int64_t key;
    int64_t n;
    double sum, max;
} lslot;

/* The same aggregation by hand: tuples arrive in time order, so the open
 * window is the current second; when a tuple of a later second arrives, the
 * window closes and its groups are emitted (folded into r) and cleared. */
static void run_loop(const bopts *o, result *r)
{
    uint32_t cap = 16;
    while (cap < (uint32_t)o->keys * 2) cap <<= 1;
    lslot *t = malloc(cap * sizeof *t);
    uint32_t *used = malloc(cap * sizeof *used);
    if (!t || !used) {
        fprintf(stderr, "engine_bench: out of memory\n");
        exit(1);
    }
    for (uint32_t i = 0; i < cap; i++) t[i].n = 0;
    uint32_t nused = 0;
    memset(r, 0, sizeof *r);
    double t0 = now_s();
    int64_t win = INT64_MIN;
    for (int64_t i = 0; i <= o->tuples; i++) {
        int64_t ts = i < o->tuples ? tuple_ts(o, i) : INT64_MAX;
        int64_t w = ts == INT64_MAX ? INT64_MAX : ts - ((ts % 1000) + 1000) % 1000;
        if (w != win) {
            /* the open window closes: emit its groups */
            for (uint32_t u = 0; u < nused; u++) {
                lslot *s = &t[used[u]];
                r->rows++;
                r->count += s->n;
                r->sum += s->sum;
                r->max += s->max;
                s->n = 0;
            }
            nused = 0;
            win = w;
            if (i == o->tuples) break;
        }
        int64_t k = tuple_key(i);
        double v = tuple_val(i);
        uint32_t h = (uint32_t)((uint64_t)k * 0x9e3779b97f4a7c15ull >> 40) & (cap - 1);
        while (t[h].n && t[h].key != k) h = (h + 1) & (cap - 1);
        lslot *s = &t[h];
        if (!s->n) {
            s->key = k;
            s->sum = 0;
            s->max = v;
            used[nused++] = h;
        }
        s->n++;
        s->sum += v;
        if (v > s->max) s->max = v;
    }
    r->secs = now_s() - t0;
    free(t);
    free(used);
}

/* ------------------------------------------------------------------ the engine */

#define STREAM_SQL "CREATE STREAM s (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts', watermark = '1 second');"
#define QUERY_SQL "SELECT k, COUNT(*) AS n, SUM(v) AS sv, MAX(v) AS mv FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k EMIT FINAL"

typedef struct count_out {
    result *r;
    int ended;
} count_out;

static int co_rows(void *ctx, const batch *b)
{
    count_out *c = ctx;
    for (int i = 0; i < b->nrows; i++) {
        const val *row = batch_row(b, i);
        c->r->rows++;
        c->r->count += row[1].i;
        c->r->sum += row[2].d;
        c->r->max += row[3].d;
    }
    return 0;
}

static int co_end(void *ctx)
{
    ((count_out *)ctx)->ended = 1;
    return 0;
}

static void co_notice(void *ctx, const char *msg) { (void)ctx; (void)msg; }

/* Fold a CSV sink file "k,n,sv,mv" into r. */
static int read_sink(const char *path, result *r)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "engine_bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[256];
    int first = 1;
    while (fgets(line, sizeof line, f)) {
        if (first) {
            first = 0;
            if (strncmp(line, "k,n,sv,mv", 9)) {
                fprintf(stderr, "engine_bench: %s: unexpected header %s", path, line);
                fclose(f);
                return -1;
            }
            continue;
        }
        long long k, n;
        double sv, mv;
        if (sscanf(line, "%lld,%lld,%lf,%lf", &k, &n, &sv, &mv) != 4) {
            fprintf(stderr, "engine_bench: %s: bad line %s", path, line);
            fclose(f);
            return -1;
        }
        r->rows++;
        r->count += n;
        r->sum += sv;
        r->max += mv;
    }
    fclose(f);
    return 0;
}

/* push = 0: a standing query with a file sink; 1: a push query counted by
 * its exec_out.  Times engine_push_rows over all tuples plus the end of the
 * stream (every window closes, the last epoch commits). */
static int run_engine(const bopts *o, int push, result *r, int64_t *late)
{
    char dir[4096], sql[8192], sink[4200];
    memset(r, 0, sizeof *r);
    if (make_tmpdir(o, dir, sizeof dir)) return -1;
    snprintf(sink, sizeof sink, "%s/out.csv", dir);
    engine_opts eo = {0};
    char data[4200];
    snprintf(data, sizeof data, "%s/data", dir);
    eo.data_dir = data;
    engine *e = NULL;
    xerr err;
    xerr_clear(&err);
    int rc = engine_open(&eo, &e, &err);
    count_out co = {r, 0};
    exec_out out = {&co, NULL, co_rows, co_end, co_notice};
    batch b;
    memset(&b, 0, sizeof b);
    if (rc) goto fail;
    if ((rc = engine_exec_sql(e, STREAM_SQL, &out, &err))) goto fail;
    if (push) snprintf(sql, sizeof sql, "%s;", QUERY_SQL);
    else snprintf(sql, sizeof sql, "CREATE QUERY agg WITH (sink = 'file://%s', format = 'csv') AS %s;", sink, QUERY_SQL);
    if ((rc = engine_exec_sql(e, sql, &out, &err))) goto fail;
    if ((rc = batch_init(&b, 3, EXEC_SLICE_ROWS))) {
        xerr_set(&err, rc, "out of memory");
        goto fail;
    }
    double t0 = now_s();
    for (int64_t i = 0; i < o->tuples;) {
        /* the rows are written in place: batch_init made room for a slice */
        int n = o->tuples - i < EXEC_SLICE_ROWS ? (int)(o->tuples - i) : EXEC_SLICE_ROWS;
        batch_reset(&b);
        for (int j = 0; j < n; j++, i++) {
            val *row = batch_row(&b, j);
            row[0] = val_int(TY_TIMESTAMP, tuple_ts(o, i));
            row[1] = val_int(TY_BIGINT, tuple_key(i));
            row[2] = val_double(tuple_val(i));
        }
        b.nrows = n;
        if ((rc = engine_push_rows(e, "s", &b, &err))) goto fail;
    }
    if ((rc = engine_end_stream(e, "s", &err))) goto fail;
    r->secs = now_s() - t0;
    *late = 0;
    batch_fini(&b);
    engine_close(e);
    e = NULL;
    if (push && !co.ended) {
        fprintf(stderr, "engine_bench: the push query did not end with its stream\n");
        rm_rf(dir);
        return -1;
    }
    if (!push && read_sink(sink, r)) {
        rm_rf(dir);
        return -1;
    }
    rm_rf(dir);
    return 0;
fail:
    fprintf(stderr, "engine_bench: engine: %s\n", err.msg[0] ? err.msg : xerr_name(rc));
    batch_fini(&b);
    engine_close(e);
    rm_rf(dir);
    return -1;
}

/* ------------------------------------------------------------------ ares-sql --ingest */

static size_t put_i64(char *p, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t o = 0;
    if (v < 0) p[o++] = '-';
    while (n) p[o++] = tmp[--n];
    return o;
}

/* Tuples [from, to) as CSV lines "ts,k,v" into buf (cap >= 64 per tuple). */
static size_t csv_lines(const bopts *o, int64_t from, int64_t to, char *buf)
{
    size_t n = 0;
    for (int64_t i = from; i < to; i++) {
        n += put_i64(buf + n, tuple_ts(o, i));
        buf[n++] = ',';
        n += put_i64(buf + n, tuple_key(i));
        buf[n++] = ',';
        int32_t c = g_cents[i & (CYCLE - 1)];
        if (c < 0) {
            buf[n++] = '-';
            c = -c;
        }
        n += put_i64(buf + n, c / 100);
        buf[n++] = '.';
        buf[n++] = (char)('0' + c % 100 / 10);
        buf[n++] = (char)('0' + c % 10);
        buf[n++] = '\n';
    }
    return n;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

enum { CSV_CHUNK = 4096 };

/* Write tuples [0, n) as CSV with a header to fd. */
static int csv_write(const bopts *o, int fd, int64_t n)
{
    char *buf = malloc((size_t)CSV_CHUNK * 64);
    if (!buf) return -1;
    int rc = write_all(fd, "ts,k,v\n", 7);
    for (int64_t i = 0; i < n && !rc; i += CSV_CHUNK) {
        int64_t to = i + CSV_CHUNK < n ? i + CSV_CHUNK : n;
        rc = write_all(fd, buf, csv_lines(o, i, to, buf));
    }
    free(buf);
    return rc;
}

/* A row "k,n,sv,mv" of ares-sql's output folded into r; -1 if malformed. */
static int fold_line(const char *line, result *r)
{
    long long k, cnt;
    double sv, mv;
    if (sscanf(line, "%lld,%lld,%lf,%lf", &k, &cnt, &sv, &mv) != 4) return -1;
    r->rows++;
    r->count += cnt;
    r->sum += sv;
    r->max += mv;
    return 0;
}

/* Run ares-sql with stdin from in_fd (a file, or a pipe fed by a writer
 * process generating n tuples when in_fd < 0); read its stdout and fold the
 * rows into r.  r->secs is the child's wall time; *rss_kib its peak RSS
 * (VmHWM: heap plus the pages of the LMDB map it touched), *anon_kib the
 * largest anonymous RSS sampled. */
static int run_ares_sql(const bopts *o, int in_fd, int64_t n, result *r, long *rss_kib, long *anon_kib)
{
    char dir[4096], data[4200];
    memset(r, 0, sizeof *r);
    if (make_tmpdir(o, dir, sizeof dir)) return -1;
    snprintf(data, sizeof data, "%s/data", dir);
    int outp[2], inp[2] = {-1, -1};
    if (pipe(outp) < 0 || (in_fd < 0 && pipe(inp) < 0)) {
        perror("engine_bench: pipe");
        rm_rf(dir);
        return -1;
    }
    pid_t writer = -1;
    if (in_fd < 0) {
        writer = fork();
        if (writer == 0) {
            close(inp[0]);
            close(outp[0]);
            close(outp[1]);
            signal(SIGPIPE, SIG_DFL);
            _exit(csv_write(o, inp[1], n) ? 1 : 0);
        }
        close(inp[1]);
        in_fd = inp[0];
    }
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in_fd, 0);
        dup2(outp[1], 1);
        close(outp[0]);
        close(outp[1]);
        execl(o->ares_sql, o->ares_sql, "--data", data, "-q", "-e", STREAM_SQL " " QUERY_SQL ";", "--ingest", "s",
              "--format", "csv", (char *)NULL);
        fprintf(stderr, "engine_bench: exec %s: %s\n", o->ares_sql, strerror(errno));
        _exit(127);
    }
    close(outp[1]);
    if (inp[0] >= 0) close(inp[0]);
    /* Read its output while sampling its anonymous RSS (heap, not the
     * LMDB map's file pages) every 50 ms. */
    char buf[1 << 16];
    size_t have = 0;
    int first = 1, bad = 0;
    long anon = 0;
    struct pollfd pfd = {outp[0], POLLIN, 0};
    for (;;) {
        int pr = poll(&pfd, 1, 50);
        long a = base_proc_status_kb((int)pid, "RssAnon");
        if (a > anon) anon = a;
        if (pr < 0 && errno != EINTR) break;
        if (pr <= 0) continue;
        ssize_t got = read(outp[0], buf + have, sizeof buf - have);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        have += (size_t)got;
        char *p = buf, *nl;
        while ((nl = memchr(p, '\n', have - (size_t)(p - buf)))) {
            *nl = 0;
            if (first) first = 0;
            else if (fold_line(p, r) && !bad++) fprintf(stderr, "engine_bench: ares-sql printed: %s\n", p);
            p = nl + 1;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
    }
    close(outp[0]);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
    r->secs = now_s() - t0;
    *rss_kib = ru.ru_maxrss;
    *anon_kib = anon;
    if (writer > 0) {
        int ws;
        while (waitpid(writer, &ws, 0) < 0 && errno == EINTR) {}
    }
    rm_rf(dir);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "engine_bench: ares-sql failed (%s %d)\n", WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return -1;
    }
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------------ main */

static int agree(const char *what, const result *got, const result *want)
{
    double tol = 1e-9 * (fabs(want->sum) + 1) + 1e-3;
    double tolm = 1e-9 * (fabs(want->max) + 1) + 1e-3;
    if (got->rows == want->rows && got->count == want->count && fabs(got->sum - want->sum) <= tol &&
        fabs(got->max - want->max) <= tolm)
        return 0;
    fprintf(stderr,
            "engine_bench: %s disagrees with the loop: rows %lld vs %lld, sum of counts %lld vs %lld, "
            "sum of sums %.3f vs %.3f, sum of maxima %.3f vs %.3f\n",
            what, (long long)got->rows, (long long)want->rows, (long long)got->count, (long long)want->count, got->sum,
            want->sum, got->max, want->max);
    return -1;
}

static void usage(void)
{
    fputs("usage: engine_bench [--tuples N] [--keys N] [--rate TUPLES_PER_S] [--tmp DIR]\n"
          "                    [--ares-sql PATH] [--csv-tuples N] [--only engine|push|loop|csv]...\n"
          "                    [--small-pages]\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    /* as ares-sql and ares-node set up their heap (base.h), unless told not to */
    int small_pages = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--small-pages")) small_pages = 1;
    size_t huge = small_pages ? 0 : base_huge_heap(64);
    bopts o = {.tuples = 10000000, .keys = 10000, .rate = 100000, .tmp = "/tmp", .ares_sql = NULL};
    int only = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--small-pages")) continue;
        if (!v) usage();
        if (!strcmp(a, "--tuples")) o.tuples = atoll(v);
        else if (!strcmp(a, "--keys")) o.keys = atoi(v);
        else if (!strcmp(a, "--rate")) o.rate = atoll(v);
        else if (!strcmp(a, "--tmp")) o.tmp = v;
        else if (!strcmp(a, "--ares-sql")) o.ares_sql = v;
        else if (!strcmp(a, "--csv-tuples")) o.csv_tuples = atoll(v);
        else if (!strcmp(a, "--only")) {
            only = 1;
            if (!strcmp(v, "engine")) o.engine = 1;
            else if (!strcmp(v, "push")) o.push = 1;
            else if (!strcmp(v, "loop")) o.loop = 1;
            else if (!strcmp(v, "csv")) o.csv = 1;
            else usage();
        } else usage();
        i++;
    }
    if (!only) o.engine = o.push = o.loop = o.csv = 1;
    if (o.tuples < 1 || o.keys < 1 || o.rate < 1 || o.rate > 1000000) usage();
    if (!o.csv_tuples) o.csv_tuples = o.tuples;
    if (data_init(&o)) {
        fprintf(stderr, "engine_bench: out of memory\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    printf("engine_bench: %lld tuples, %d keys, %lld tuples per second of event time, 1 s tumbling windows\n",
           (long long)o.tuples, o.keys, (long long)o.rate);
    printf("engine_bench: heap %s\n", small_pages ? "in 4 KB pages (--small-pages)"
                                     : huge ? "advised for huge pages, as in ares-sql and ares-node"
                                            : "in 4 KB pages (the kernel refused huge pages)");
    fflush(stdout);

    int fail = 0;
    result loop, eng, push;
    int64_t late;
    /* The loop always runs: it is the reference for every check.  Best of
     * three, as it takes well under a second and other processes disturb it. */
    run_loop(&o, &loop);
    for (int rep = 0; rep < 2; rep++) {
        result again;
        run_loop(&o, &again);
        if (again.secs < loop.secs) loop.secs = again.secs;
    }
    double loop_rate = (double)o.tuples / loop.secs;
    if (o.loop) printf("figure: window_agg_loop = %.0f tuples/s\n", loop_rate);
    printf("engine_bench: loop emitted %lld rows (windows x keys)\n", (long long)loop.rows);
    fflush(stdout);
    if (o.engine) {
        if (run_engine(&o, 0, &eng, &late) || agree("the engine (standing query)", &eng, &loop)) fail = 1;
        else {
            double rate = (double)o.tuples / eng.secs;
            printf("figure: window_agg_engine = %.0f tuples/s\n", rate);
            printf("figure: window_agg_ratio = %.3f\n", rate / loop_rate);
        }
        fflush(stdout);
    }
    if (o.push) {
        if (run_engine(&o, 1, &push, &late) || agree("the engine (push query)", &push, &loop)) fail = 1;
        else printf("figure: window_agg_engine_push = %.0f tuples/s\n", (double)o.tuples / push.secs);
        fflush(stdout);
    }
    /* ares-sql is forked from here, and a child's peak RSS (ru_maxrss)
     * counts what it shared with this process until its exec: give the
     * engine runs' heap back first */
    malloc_trim(0);
    if (o.csv && !o.ares_sql) printf("engine_bench: no --ares-sql given: skipping the CSV figures\n");
    if (o.csv && o.ares_sql) {
        bopts oc = o;
        oc.tuples = o.csv_tuples;
        result lc, l2, c1, c2;
        run_loop(&oc, &lc);
        char dir[4096], path[4200];
        if (make_tmpdir(&o, dir, sizeof dir)) return 1;
        snprintf(path, sizeof path, "%s/input.csv", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || csv_write(&oc, fd, oc.tuples) || lseek(fd, 0, SEEK_SET) < 0) {
            fprintf(stderr, "engine_bench: writing %s: %s\n", path, strerror(errno));
            fail = 1;
        } else {
            struct stat sb;
            fstat(fd, &sb);
            long rss1 = 0, rss2 = 0, anon1 = 0, anon2 = 0;
            if (run_ares_sql(&oc, fd, oc.tuples, &c1, &rss1, &anon1) || agree("ares-sql --ingest", &c1, &lc)) fail = 1;
            else {
                printf("figure: csv_ingest_rate = %.0f rows/s\n", (double)oc.tuples / c1.secs);
                printf("figure: csv_ingest_mb_per_s = %.1f MB/s\n", (double)sb.st_size / 1e6 / c1.secs);
                printf("figure: csv_ingest_peak_rss = %.1f MiB\n", (double)rss1 / 1024.0);
                printf("figure: csv_ingest_peak_anon_rss = %.1f MiB\n", (double)anon1 / 1024.0);
            }
            fflush(stdout);
            close(fd);
            fd = -1;
            rm_rf(dir);
            bopts o2 = oc;
            o2.tuples = 2 * oc.tuples;
            run_loop(&o2, &l2);
            if (!fail) {
                if (run_ares_sql(&o2, -1, o2.tuples, &c2, &rss2, &anon2) || agree("ares-sql --ingest (2x)", &c2, &l2))
                    fail = 1;
                else {
                    printf("figure: csv_ingest_peak_rss_2x = %.1f MiB\n", (double)rss2 / 1024.0);
                    printf("figure: csv_ingest_peak_anon_rss_2x = %.1f MiB\n", (double)anon2 / 1024.0);
                }
            }
        }
        if (fd >= 0) {
            close(fd);
            rm_rf(dir);
        }
    }
    free(g_keys);
    free(g_cents);
    return fail;
}
