/*
 * tpch_gen: a seeded, rate-controlled TPC-H-like pair of streams, orders and
 * lineitem, for the windowed join of bench/workloads/tpch_join.sql (the
 * paper's second workload), in the spirit of TPC-H's dbgen.
 *
 *   tpch_gen [--rows N] [--seed S] [--rate R] [--event-rate E] [--max-delay-ms D]
 *            [--skew Z] [--table orders|lineitem | --out-dir DIR] [--part I/P] [--no-header]
 *
 * N orders; order i (0-based) has:
 *   orderkey    dbgen's sparse keys: 8 of every 32 are used, (i / 8) * 32 + i % 8 + 1;
 *   custkey     1..C with C = max(10, N / 10) (dbgen: 10 orders per customer);
 *   totalprice  the sum of its lineitems' extendedprice * (1 - discount), in cents;
 *   ts          event time 1704067200000 + i * 1000 / E ms (epoch milliseconds);
 *   priority    one of dbgen's five, '1-URGENT' .. '5-LOW'.
 * and 1..7 lineitems (uniform, as dbgen), line j (1-based) with:
 *   partkey       1..P with P = max(10, N * 2 / 15) (dbgen: 200,000 parts for 1.5M orders);
 *   quantity      1..50;
 *   extendedprice quantity times dbgen's retail price of the part,
 *                 (90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000)) / 100;
 *   discount      0.00..0.10;
 *   ts            the order's ts plus 0..D ms (uniform; D = 4000 by default):
 *                 a lineitem arrives within a few seconds after its order.
 * --skew Z draws custkey and partkey by a Zipf law of exponent Z over their
 * ranges (key k with probability proportional to 1 / k^Z) instead of
 * uniformly (Z = 0, the default, as dbgen).
 *
 * Output: CSV with a header line (unless --no-header), prices with two
 * decimals.  --table writes one table to stdout; --out-dir writes
 * DIR/orders.csv and DIR/lineitem.csv.  Each is in event-time order: orders
 * by construction, lineitems held back until no later order can make an
 * earlier one (ties by orderkey, then linenumber), so no row is ever late
 * under any watermark.  --rate paces the output at R orders per second of
 * wall-clock time (0, the default: as fast as possible); event times do not
 * depend on it.  Determinism: order i draws from its own PRNG seeded by
 * (seed, i), so both tables of one seed agree whichever is written.
 * --part I/P writes, of each table, only the rows whose index in that
 * table's output (0-based, in the order above) is I modulo P, each with its
 * header line: P generators with the same options write a round-robin split
 * of each table into P partitions, each in event-time order, and together
 * exactly the rows of one (every generator still draws every order, so a
 * lineitem and its order may go to different partitions).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/workloads/gen_common.h"

#define EPOCH_MS 1704067200000LL

static const char *const PRIORITIES[5] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"};

typedef struct line {
    int64_t ts, orderkey, partkey, quantity, ext_cents, discount; /* discount in hundredths */
    int linenumber;
} line;

/* a min-heap of lineitems by (ts, orderkey, linenumber) */
typedef struct heap {
    line *v;
    size_t n, cap;
} heap;

static int line_less(const line *a, const line *b)
{
    if (a->ts != b->ts) return a->ts < b->ts;
    if (a->orderkey != b->orderkey) return a->orderkey < b->orderkey;
    return a->linenumber < b->linenumber;
}

static int heap_push(heap *h, const line *l)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        line *v = realloc(h->v, cap * sizeof *v);
        if (!v) return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    h->v[i] = *l;
    while (i > 0 && line_less(&h->v[i], &h->v[(i - 1) / 2])) {
        line t = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
    return 0;
}

static line heap_pop(heap *h)
{
    line top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && line_less(&h->v[l], &h->v[m])) m = l;
        if (r < h->n && line_less(&h->v[r], &h->v[m])) m = r;
        if (m == i) break;
        line t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return top;
}

static void put_cents(FILE *f, int64_t c) { fprintf(f, "%lld.%02lld", (long long)(c / 100), (long long)(c % 100)); }

static void put_line(FILE *f, const line *l)
{
    fprintf(f, "%lld,%d,%lld,%lld,", (long long)l->orderkey, l->linenumber, (long long)l->partkey,
            (long long)l->quantity);
    put_cents(f, l->ext_cents);
    fprintf(f, ",0.%02lld,%lld\n", (long long)l->discount, (long long)l->ts);
}

static void usage(FILE *f)
{
    fputs("usage: tpch_gen [options] (--table orders|lineitem | --out-dir DIR)\n"
          "  --rows N          orders (default 100000); each has 1..7 lineitems\n"
          "  --seed S          PRNG seed (default 1)\n"
          "  --rate R          pace the output at R orders/s of wall-clock time (default 0: unpaced)\n"
          "  --event-rate E    orders per second of event time (default 1000)\n"
          "  --max-delay-ms D  a lineitem's event time is 0..D ms after its order's (default 4000)\n"
          "  --skew Z          Zipf exponent of custkey and partkey, 0 = uniform (default 0)\n"
          "  --table T         write table T (orders or lineitem) to stdout\n"
          "  --out-dir DIR     write DIR/orders.csv and DIR/lineitem.csv\n"
          "  --part I/P        of each table only the rows whose index is I modulo P (default 0/1: all)\n"
          "  --no-header       no CSV header lines\n",
          f);
}

int main(int argc, char **argv)
{
    int64_t rows = 100000, seed = 1, rate = 0, event_rate = 1000, max_delay = 4000;
    int64_t part = 0, nsplit = 1, nline = 0; /* nline: lineitems put out so far, of every part */
    double skew = 0;
    const char *table = NULL, *dir = NULL;
    int header = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--rows")) bad = gen_parse_i64(v, 0, INT64_MAX / 64, &rows), i++;
        else if (!strcmp(a, "--seed")) bad = gen_parse_i64(v, 0, INT64_MAX, &seed), i++;
        else if (!strcmp(a, "--rate")) bad = gen_parse_i64(v, 0, 1000000000, &rate), i++;
        else if (!strcmp(a, "--event-rate")) bad = gen_parse_i64(v, 1, 1000000000, &event_rate), i++;
        else if (!strcmp(a, "--max-delay-ms")) bad = gen_parse_i64(v, 0, 86400000, &max_delay), i++;
        else if (!strcmp(a, "--skew")) bad = gen_parse_double(v, 0, 10, &skew), i++;
        else if (!strcmp(a, "--table")) {
            table = v;
            i++;
            bad = !v || (strcmp(v, "orders") && strcmp(v, "lineitem"));
        } else if (!strcmp(a, "--out-dir")) {
            dir = v;
            i++;
            bad = !v;
        } else if (!strcmp(a, "--part")) {
            bad = gen_parse_part(v, &part, &nsplit);
            i++;
        } else if (!strcmp(a, "--no-header")) header = 0;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "tpch_gen: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "tpch_gen: bad value for %s: '%s'\n", a, v ? v : "(missing)");
            return 2;
        }
    }
    if (!table == !dir) {
        fprintf(stderr, "tpch_gen: give either --table orders|lineitem or --out-dir DIR\n");
        usage(stderr);
        return 2;
    }
    FILE *fo = NULL, *fl = NULL;
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/orders.csv", dir);
        if (!(fo = fopen(path, "w"))) {
            perror(path);
            return 1;
        }
        snprintf(path, sizeof path, "%s/lineitem.csv", dir);
        if (!(fl = fopen(path, "w"))) {
            perror(path);
            return 1;
        }
    } else if (!strcmp(table, "orders"))
        fo = stdout;
    else
        fl = stdout;
    static char bo[1 << 20], bl[1 << 20];
    if (fo) setvbuf(fo, bo, _IOFBF, sizeof bo);
    if (fl) setvbuf(fl, bl, _IOFBF, sizeof bl);
    if (header && fo) fputs("orderkey,custkey,totalprice,ts,priority\n", fo);
    if (header && fl) fputs("orderkey,linenumber,partkey,quantity,extendedprice,discount,ts\n", fl);

    int64_t ncust = rows / 10 > 10 ? rows / 10 : 10, nparts = rows * 2 / 15 > 10 ? rows * 2 / 15 : 10;
    gen_zipf zc, zp;
    heap h = {0};
    if (gen_zipf_init(&zc, ncust, skew) || gen_zipf_init(&zp, nparts, skew)) {
        fprintf(stderr, "tpch_gen: out of memory\n");
        return 1;
    }
    FILE *outs[2] = {fo, fl};
    uint64_t start = clock_mono_ns();
    for (int64_t i = 0; i < rows; i++) {
        if (rate > 0 && (i & 15) == 0) gen_pace(rate, start, i, outs, 2);
        gen_rng r = gen_for_row((uint64_t)seed, 0, i);
        int64_t okey = (i / 8) * 32 + i % 8 + 1, ts = EPOCH_MS + i * 1000 / event_rate;
        int64_t cust = gen_zipf_draw(&zc, &r);
        const char *prio = PRIORITIES[gen_below(&r, 5)];
        int nl = 1 + (int)gen_below(&r, 7);
        int64_t total = 0; /* in 1/10,000 of a unit: cents times hundredths */
        for (int j = 1; j <= nl; j++) {
            line l = {.orderkey = okey, .linenumber = j};
            l.partkey = gen_zipf_draw(&zp, &r);
            l.quantity = 1 + gen_below(&r, 50);
            l.ext_cents = l.quantity * (90000 + (l.partkey / 10) % 20001 + 100 * (l.partkey % 1000));
            l.discount = gen_below(&r, 11);
            l.ts = ts + gen_below(&r, max_delay + 1);
            total += l.ext_cents * (100 - l.discount);
            if (fl && heap_push(&h, &l)) {
                fprintf(stderr, "tpch_gen: out of memory\n");
                return 1;
            }
        }
        if (fo && i % nsplit == part) {
            fprintf(fo, "%lld,%lld,", (long long)okey, (long long)cust);
            put_cents(fo, (total + 50) / 100);
            fprintf(fo, ",%lld,%s\n", (long long)ts, prio);
        }
        /* every later order, and so each of its lineitems, is at or after this */
        int64_t next = EPOCH_MS + (i + 1) * 1000 / event_rate;
        while (fl && h.n && (h.v[0].ts < next || i + 1 == rows)) {
            line l = heap_pop(&h);
            if (nline++ % nsplit == part) put_line(fl, &l);
        }
    }
    int rc = 0;
    for (int k = 0; k < 2; k++)
        if (outs[k] && (fflush(outs[k]) || ferror(outs[k]))) {
            perror("tpch_gen: write");
            rc = 1;
        }
    if (dir) {
        fclose(fo);
        fclose(fl);
    }
    gen_zipf_fini(&zc);
    gen_zipf_fini(&zp);
    free(h.v);
    return rc;
}
