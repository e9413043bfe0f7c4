/*
 * gen_stream: seeded random event streams for the scenario tests and
 * benchmarks.  Writes rows (ts, k, s, v, d) as CSV or JSON lines on stdout
 * and, optionally, the same rows as SQL INSERTs for sqlite3, the oracle of
 * tests/scenario/t_oracle.sh.
 *
 *   ts  event time in epoch ms: mostly increasing (random steps, sometimes a
 *       pause), each row shifted later by a jitter below --disorder, so a row
 *       is never more than --disorder behind the largest time before it;
 *       with --disorder below the stream's watermark delay no row is late
 *   k   BIGINT key among --keys values (some negative), NULL sometimes
 *   s   TEXT key among --skeys values (spaces and UTF-8 included), NULL sometimes
 *   v   BIGINT in [-1000, 1000], NULL sometimes
 *   d   DOUBLE with two decimals in [-500, 500], NULL sometimes
 *
 * The same seed and options give the same bytes on every machine (a private
 * PRNG, integer arithmetic only; d is printed from an integer of cents).
 * It links nothing of Ares on purpose: an oracle's inputs must not come from
 * the code under test, so the ISO date code here is its own.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, n), n > 0 */
static int64_t rng_below(int64_t n) { return (int64_t)(rng_next() % (uint64_t)n); }

static int rng_pct(int pct) { return rng_below(100) < pct; }

typedef struct opts {
    uint64_t seed;
    int64_t rows, start, step, disorder, keys, skeys, pause, cents_range;
    int null_pct, iso_pct, pause_pct, header, json, no_text;
    const char *sql_path, *table;
} opts;

static void usage(void)
{
    fputs("usage: gen_stream [--seed N] [--rows N] [--start MS] [--step MS] [--disorder MS]\n"
          "                  [--keys N] [--skeys N] [--null-pct P] [--iso-pct P]\n"
          "                  [--pause-pct P] [--pause MS] [--header] [--json] [--no-text]\n"
          "                  [--sql FILE [--table NAME]]\n",
          stderr);
    exit(2);
}

/* Civil date from days since 1970-01-01 (H. Hinnant's algorithm). */
static void civil(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static void iso(int64_t ms, char *buf, size_t cap)
{
    int64_t days = ms / 86400000, rem = ms % 86400000;
    if (rem < 0) {
        rem += 86400000;
        days--;
    }
    int64_t y;
    int m, d;
    civil(days, &y, &m, &d);
    snprintf(buf, cap, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, m, d, (int)(rem / 3600000),
             (int)(rem / 60000 % 60), (int)(rem / 1000 % 60), (int)(rem % 1000));
}

/* TEXT keys: a few shapes, so grouping sees spaces, UTF-8 and shared prefixes. */
static void skey(int64_t i, char *buf, size_t cap)
{
    static const char *shape[] = {"s%lld", "key %lld", "ключ-%lld", "naïve_%lld", "S%lld", "s%lld0"};
    snprintf(buf, cap, shape[i % 6], (long long)(i / 6));
}

static void cents_text(int64_t c, char *buf, size_t cap)
{
    int64_t a = c < 0 ? -c : c;
    snprintf(buf, cap, "%s%lld.%02lld", c < 0 ? "-" : "", (long long)(a / 100), (long long)(a % 100));
}

int main(int argc, char **argv)
{
    opts o = {.seed = 1, .rows = 1000, .start = 1700000000000LL, .step = 10, .disorder = 0, .keys = 10,
              .skeys = 10, .pause = 0, .cents_range = 50000, .null_pct = 0, .iso_pct = 0, .pause_pct = 0,
              .table = "ev"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NUM(name, field)                                   \
        if (!strcmp(a, name)) {                            \
            if (!v) usage();                               \
            o.field = strtoll(v, NULL, 10);                \
            i++;                                           \
            continue;                                      \
        }
        NUM("--rows", rows)
        NUM("--start", start)
        NUM("--step", step)
        NUM("--disorder", disorder)
        NUM("--keys", keys)
        NUM("--skeys", skeys)
        NUM("--null-pct", null_pct)
        NUM("--iso-pct", iso_pct)
        NUM("--pause-pct", pause_pct)
        NUM("--pause", pause)
#undef NUM
        if (!strcmp(a, "--seed") && v) { o.seed = strtoull(v, NULL, 10); i++; continue; }
        if (!strcmp(a, "--sql") && v) { o.sql_path = v; i++; continue; }
        if (!strcmp(a, "--table") && v) { o.table = v; i++; continue; }
        if (!strcmp(a, "--header")) { o.header = 1; continue; }
        if (!strcmp(a, "--json")) { o.json = 1; continue; }
        if (!strcmp(a, "--no-text")) { o.no_text = 1; continue; }
        usage();
    }
    if (o.rows < 0 || o.step < 0 || o.disorder < 0 || o.keys < 1 || o.skeys < 1) usage();
    rng_state = o.seed * 0x2545f4914f6cdd1dull + 12345;

    FILE *sql = NULL;
    if (o.sql_path) {
        if (!(sql = fopen(o.sql_path, "w"))) {
            perror(o.sql_path);
            return 1;
        }
        fprintf(sql, "CREATE TABLE IF NOT EXISTS %s (ts INTEGER, k INTEGER, s TEXT, v INTEGER, d REAL);\nBEGIN;\n",
                o.table);
    }
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof out);
    if (o.header && !o.json) puts(o.no_text ? "ts,k,v,d" : "ts,k,s,v,d");

    int64_t base = o.start;
    int64_t koff = o.keys / 4; /* a quarter of the keys are negative */
    for (int64_t r = 0; r < o.rows; r++) {
        if (r) base += o.step ? rng_below(2 * o.step + 1) : 0;
        if (o.pause_pct && rng_pct(o.pause_pct)) base += o.pause;
        int64_t ts = base + (o.disorder ? rng_below(o.disorder) : 0);
        int kn = rng_pct(o.null_pct), sn = rng_pct(o.null_pct), vn = rng_pct(o.null_pct), dn = rng_pct(o.null_pct);
        int64_t k = rng_below(o.keys) - koff;
        int64_t si = rng_below(o.skeys);
        int64_t v = rng_below(2001) - 1000;
        int64_t c = rng_below(2 * o.cents_range + 1) - o.cents_range;
        int use_iso = o.iso_pct && rng_pct(o.iso_pct);
        char tsb[48], sb[64], db[48];
        if (use_iso) iso(ts, tsb, sizeof tsb);
        else snprintf(tsb, sizeof tsb, "%lld", (long long)ts);
        skey(si, sb, sizeof sb);
        cents_text(c, db, sizeof db);
        if (o.json) {
            /* a missing member is NULL too: drop some instead of writing null */
            printf("{\"ts\":");
            if (use_iso) printf("\"%s\"", tsb);
            else printf("%s", tsb);
            if (!kn) printf(",\"k\":%lld", (long long)k);
            else if (r & 1) printf(",\"k\":null");
            if (!o.no_text && !sn) printf(",\"s\":\"%s\"", sb);
            if (!vn) printf(",\"v\":%lld", (long long)v);
            if (!dn) printf(",\"d\":%s", db);
            puts("}");
        } else {
            printf("%s,", tsb);
            if (!kn) printf("%lld", (long long)k);
            if (!o.no_text) {
                putchar(',');
                if (!sn) fputs(sb, stdout);
            }
            putchar(',');
            if (!vn) printf("%lld", (long long)v);
            putchar(',');
            if (!dn) fputs(db, stdout);
            putchar('\n');
        }
        if (sql) {
            fprintf(sql, "INSERT INTO %s VALUES (%lld,", o.table, (long long)ts);
            if (kn) fputs("NULL,", sql);
            else fprintf(sql, "%lld,", (long long)k);
            if (sn || o.no_text) fputs("NULL,", sql);
            else fprintf(sql, "'%s',", sb);
            if (vn) fputs("NULL,", sql);
            else fprintf(sql, "%lld,", (long long)v);
            if (dn) fputs("NULL);\n", sql);
            else fprintf(sql, "%s);\n", db);
        }
    }
    if (sql) {
        fputs("COMMIT;\n", sql);
        if (fclose(sql) != 0) {
            perror(o.sql_path);
            return 1;
        }
    }
    if (fflush(stdout) != 0) {
        perror("stdout");
        return 1;
    }
    return 0;
}
