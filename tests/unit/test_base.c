/* Unit tests for base/: error reports, sbuf, hash64, crc32c, big-endian helpers,
 * timestamps and intervals as text, host:port, log lines, rows by hash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static void test_crc32c_known_vector(void **state)
{
    (void)state;
    /* The standard check value for CRC-32C over "123456789". */
    assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
    /* Incremental equals one-shot. */
    uint32_t c = crc32c(0, "1234", 4);
    assert_int_equal(crc32c(c, "56789", 5), 0xe3069283u);
    unsigned char zeros[32] = {0};
    assert_int_equal(crc32c(0, zeros, 32), 0x8a9136aau);
}

static void test_sbuf(void **state)
{
    (void)state;
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < 1000; i++) assert_int_equal(sbuf_printf(&b, "%d,", i), 0);
    assert_true(b.len > 2000);
    assert_memory_equal(b.p, "0,1,2,", 6);
    sbuf_reset(&b);
    assert_int_equal(b.len, 0);
    sbuf_adds(&b, "abc");
    char *s = sbuf_steal(&b);
    assert_string_equal(s, "abc");
    assert_null(b.p);
    free(s);
    sbuf_fini(&b);
}

static void test_xerr(void **state)
{
    (void)state;
    xerr e;
    assert_int_equal(xerr_at(&e, XE_SYNTAX, 2, 14, "unexpected '%s'", "FORM"), XE_SYNTAX);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 14);
    assert_string_equal(e.msg, "unexpected 'FORM'");
    assert_int_equal(xerr_set(NULL, XE_IO, "x"), XE_IO);
}

static void test_hash_and_be(void **state)
{
    (void)state;
    assert_true(hash64("a", 1, 0) != hash64("b", 1, 0));
    assert_true(hash64("abcdefghij", 10, 0) != hash64("abcdefghij", 10, 1));
    assert_int_equal(hash64("abcdefghij", 10, 7), hash64("abcdefghij", 10, 7));
    unsigned char k[8];
    be64_put(k, 0x0102030405060708ULL);
    assert_int_equal(k[0], 1);
    assert_int_equal(k[7], 8);
    assert_true(be64_get(k) == 0x0102030405060708ULL);
    assert_int_equal(str_distance("price", "prcie"), 2);
    assert_int_equal(str_distance("Price", "price"), 0);
}

/* base_huge_heap, in a child (it changes the process's malloc settings):
 * where the kernel offers transparent huge pages for madvise'd memory, the
 * reserve is advised, in whole 2 MB pages; either way malloc goes on
 * working, and a 0 reserve does nothing. */
static void test_huge_heap(void **state)
{
    (void)state;
    assert_int_equal(base_huge_heap(0), 0);
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(mode, sizeof mode, f)) mode[0] = '\0';
        fclose(f);
    }
    int offered = strstr(mode, "[always]") || strstr(mode, "[madvise]");
#ifdef __SANITIZE_ADDRESS__
    offered = 0; /* ASan's allocator has no brk heap to advise */
#endif
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        size_t n = base_huge_heap(64);
        int ok = n % (2u << 20) == 0 && n <= (68u << 20) && (!offered || n >= (32u << 20));
        for (int i = 0; i < 10000 && ok; i++) {
            char *p = malloc((size_t)(i % 97) * 100 + 1);
            ok = p != NULL;
            if (p) p[0] = 1;
            free(p);
        }
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ENOSPC is a full disk wherever it comes from; EIO only when the file
 * system has (next to) nothing left, which /tmp has not here. */
static void test_disk_full(void **state)
{
    (void)state;
    char buf[512];
    assert_int_equal(disk_full("/tmp", ENOSPC, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "the disk is full ("));
    assert_non_null(strstr(buf, "KiB free on the file system of /tmp)"));
    assert_int_equal(disk_full("/tmp", EDQUOT, buf, sizeof buf), 1);
    assert_int_equal(disk_full("/tmp", EIO, buf, sizeof buf), 0);
    assert_int_equal(disk_full("/tmp", EACCES, buf, sizeof buf), 0);
    assert_int_equal(disk_full("/nonexistent/dir", ENOSPC, buf, sizeof buf), 1);
    assert_string_equal(buf, "the disk is full (on the file system of /nonexistent/dir)");
}

/* ------------------------------------------------------------------ time.c */

static int64_t ts(const char *s, time_dialect d)
{
    int64_t ms = 12345; /* left alone on failure */
    int rc = time_ts_parse(s, strlen(s), d, &ms);
    return rc ? (assert_int_equal(ms, 12345), INT64_MIN) : ms;
}

static const char *ts_text(int64_t ms, time_dialect d, char buf[TIME_TS_BUF])
{
    size_t n = time_ts_print(ms, d, buf);
    assert_int_equal(n, strlen(buf));
    return buf;
}

/* What both dialects read alike: dates, times, fractions, zones. */
static void test_ts_parse_common(void **state)
{
    (void)state;
    for (int d = TIME_SQL; d <= TIME_DATA; d++) {
        assert_true(ts("1970-01-01", d) == 0);
        assert_true(ts("2023-11-14T22:13:20Z", d) == 1700000000000LL);
        assert_true(ts("2023-11-14 22:13:20", d) == 1700000000000LL);
        assert_true(ts("2023-11-14t22:13:20z", d) == 1700000000000LL);
        assert_true(ts(" 2023-11-14 22:13 ", d) == 1699999980000LL);
        assert_true(ts("2023-11-14T22:13:20.5", d) == 1700000000500LL);
        assert_true(ts("2023-11-14T22:13:20.123456", d) == 1700000000123LL); /* truncated */
        assert_true(ts("2023-11-14T23:13:20+01:00", d) == 1700000000000LL);
        assert_true(ts("2023-11-14T23:13:20+0100", d) == 1700000000000LL);
        assert_true(ts("2023-11-14T23:13:20+01", d) == 1700000000000LL);
        assert_true(ts("2023-11-14T21:43:20-00:30", d) == 1700000000000LL);
        /* negative epochs: before 1970, and the day boundary */
        assert_true(ts("1969-12-31 23:59:59.999", d) == -1);
        assert_true(ts("1969-12-31", d) == -86400000LL);
        assert_true(ts("0000-01-01", d) == TIME_TS_MIN);
        assert_true(ts("9999-12-31T23:59:59.999", d) == TIME_TS_MAX);
        /* leap days */
        assert_true(ts("2024-02-29", d) == 1709164800000LL);
        assert_true(ts("2000-02-29", d) != INT64_MIN);
        assert_true(ts("1900-02-29", d) == INT64_MIN);
        assert_true(ts("2023-02-29", d) == INT64_MIN);
        /* bad input */
        static const char *bad[] = {"", "   ", "2024-", "2024-1-01", "2024-01-1", "2024/01/01", "2024-13-01",
                                    "2024-00-10", "2024-04-31", "2024-01-01 25:00", "2024-01-01 10:60",
                                    "2024-01-01 10:00:60", "2024-01-01 10", "2024-01-01T", "2024-01-01 10:00:00.",
                                    "2024-01-01 10:00 junk", "2024-01-01 10:00+24", "2024-01-01 10:00+05:60",
                                    "2024-01-01 10:00+5", "2024-01-01  10:00", "x2024-01-01"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_true(ts(bad[i], d) == INT64_MIN);
    }
}

/* Where the dialects differ (see base.h). */
static void test_ts_parse_dialects(void **state)
{
    (void)state;
    /* epoch milliseconds: data only, in range */
    assert_true(ts("1700000000000", TIME_DATA) == 1700000000000LL);
    assert_true(ts("-86400000", TIME_DATA) == -86400000LL);
    assert_true(ts("+5", TIME_DATA) == 5);
    assert_true(ts("-0", TIME_DATA) == 0);
    assert_true(ts("253402300799999", TIME_DATA) == TIME_TS_MAX);
    assert_true(ts("253402300800000", TIME_DATA) == INT64_MIN);
    assert_true(ts("-62167219200000", TIME_DATA) == TIME_TS_MIN);
    assert_true(ts("-62167219200001", TIME_DATA) == INT64_MIN);
    assert_true(ts("99999999999999999999999", TIME_DATA) == INT64_MIN);
    assert_true(ts("-", TIME_DATA) == INT64_MIN);
    assert_true(ts("1700000000000", TIME_SQL) == INT64_MIN);
    /* tabs are blanks in data */
    assert_true(ts("\t2024-01-01\t", TIME_DATA) == 1704067200000LL);
    assert_true(ts("2024-01-01\t", TIME_SQL) == INT64_MIN);
    /* a comma before the fraction, and at most 9 digits of it, in data */
    assert_true(ts("2024-01-01 00:00:00,25", TIME_DATA) == 1704067200250LL);
    assert_true(ts("2024-01-01 00:00:00,25", TIME_SQL) == INT64_MIN);
    assert_true(ts("2024-01-01 00:00:00.1234567891", TIME_DATA) == INT64_MIN);
    assert_true(ts("2024-01-01 00:00:00.1234567891", TIME_SQL) == 1704067200123LL);
    /* a zone after a bare date, and "+hh:" at the end: SQL only */
    assert_true(ts("2024-01-01Z", TIME_SQL) == 1704067200000LL);
    assert_true(ts("2024-01-01+01", TIME_SQL) == 1704063600000LL);
    assert_true(ts("2024-01-01Z", TIME_DATA) == INT64_MIN);
    assert_true(ts("2024-01-01 01:00+01:", TIME_SQL) == 1704067200000LL);
    assert_true(ts("2024-01-01 01:00+01:", TIME_DATA) == INT64_MIN);
    /* a blank after "+hh": data trims it first, SQL reads it as minutes */
    assert_true(ts("2024-01-01 01:00+01 ", TIME_DATA) == 1704067200000LL);
    assert_true(ts("2024-01-01 01:00+01 ", TIME_SQL) == INT64_MIN);
}

static void test_ts_print(void **state)
{
    (void)state;
    char b[TIME_TS_BUF];
    assert_string_equal(ts_text(1700000000000LL, TIME_DATA, b), "2023-11-14T22:13:20.000Z");
    assert_string_equal(ts_text(1700000000000LL, TIME_SQL, b), "2023-11-14 22:13:20");
    assert_string_equal(ts_text(1700000000042LL, TIME_SQL, b), "2023-11-14 22:13:20.042");
    assert_string_equal(ts_text(-1, TIME_DATA, b), "1969-12-31T23:59:59.999Z");
    assert_string_equal(ts_text(-1, TIME_SQL, b), "1969-12-31 23:59:59.999");
    assert_string_equal(ts_text(-86400000LL, TIME_SQL, b), "1969-12-31 00:00:00");
    assert_string_equal(ts_text(951782400123LL, TIME_DATA, b), "2000-02-29T00:00:00.123Z");
    assert_string_equal(ts_text(TIME_TS_MIN, TIME_DATA, b), "0000-01-01T00:00:00.000Z");
    assert_string_equal(ts_text(TIME_TS_MAX, TIME_DATA, b), "9999-12-31T23:59:59.999Z");
    assert_string_equal(ts_text(TIME_TS_MAX + 1, TIME_DATA, b), "10000-01-01T00:00:00.000Z");
    assert_string_equal(ts_text(TIME_TS_MIN - 86400000LL, TIME_SQL, b), "-001-12-31 00:00:00");
    /* the extremes fit the buffer */
    assert_true(time_ts_print(INT64_MIN, TIME_DATA, b) < TIME_TS_BUF);
    assert_true(time_ts_print(INT64_MAX, TIME_DATA, b) < TIME_TS_BUF);
    assert_true(time_ts_print(INT64_MIN, TIME_SQL, b) < TIME_TS_BUF);
}

/* Every printed timestamp in range reads back as itself, in either dialect. */
static void test_ts_round_trip(void **state)
{
    (void)state;
    char b[TIME_TS_BUF];
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t ms = TIME_TS_MIN + (int64_t)(x % (uint64_t)(TIME_TS_MAX - TIME_TS_MIN + 1));
        if (i % 4 == 0) ms -= ms % 1000; /* whole seconds: the SQL form without a fraction */
        for (int d = TIME_SQL; d <= TIME_DATA; d++) {
            time_ts_print(ms, d, b);
            assert_true(ts(b, d) == ms);
        }
    }
}

static int64_t iv(const char *s, int64_t unit, int want_rc)
{
    int64_t ms = -7;
    assert_int_equal(time_iv_parse(s, strlen(s), unit, &ms), want_rc);
    if (want_rc) assert_true(ms == -7);
    return ms;
}

static const char *iv_text(int64_t ms, sbuf *b)
{
    sbuf_reset(b);
    assert_int_equal(time_iv_print(ms, b), 0);
    return b->p;
}

static void test_intervals(void **state)
{
    (void)state;
    assert_true(iv("5", 1000, 0) == 5000);
    assert_true(iv("1.5", 1000, 0) == 1500);
    assert_true(iv(".5", 60000, 0) == 30000);
    assert_true(iv("0", 86400000, 0) == 0);
    assert_true(iv("0.0000", 1, 0) == 0);
    assert_true(iv("2e3", 1, 0) == 2000);
    assert_true(iv("2500e-3", 1000, 0) == 2500);
    assert_true(iv("007", 1, 0) == 7);
    assert_true(iv("1000000000000000000000", 1, 0 - 2) == -7); /* past int64 */
    assert_true(iv("9223372036854775807", 1, 0 - 2) == -7);  /* 19 significant digits */
    assert_true(iv("106751991167.3", 86400000, 0 - 2) == -7); /* past int64 ms */
    assert_true(iv("1.0005", 1000, 0 - 3) == -7);
    assert_true(iv("0.5", 1, 0 - 3) == -7);
    static const char *bad[] = {"", ".", "e3", "1e", "1e+", "1..2", "1 ", "-1", "+1", "x", "1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) iv(bad[i], 1000, -1);

    sbuf b;
    sbuf_init(&b);
    assert_string_equal(iv_text(0, &b), "0 SECONDS");
    assert_string_equal(iv_text(86400000, &b), "1 DAY");
    assert_string_equal(iv_text(2 * 86400000LL, &b), "2 DAYS");
    assert_string_equal(iv_text(3600000, &b), "1 HOUR");
    assert_string_equal(iv_text(90000, &b), "90 SECONDS");
    assert_string_equal(iv_text(60000, &b), "1 MINUTE");
    assert_string_equal(iv_text(1500, &b), "1500 MILLISECONDS");
    assert_string_equal(iv_text(1, &b), "1 MILLISECOND");
    assert_string_equal(iv_text(-1000, &b), "-1 SECONDS");
    /* round trip through the unit printed */
    static const struct { const char *unit; int64_t ms; } units[] = {
        {"DAY", 86400000}, {"HOUR", 3600000}, {"MINUTE", 60000}, {"SECOND", 1000}, {"MILLISECOND", 1},
    };
    uint64_t x = 2463534242ULL;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t ms = (int64_t)(x % 1000000000000ULL);
        const char *t = iv_text(ms, &b);
        char *sp = strchr(t, ' ');
        assert_non_null(sp);
        int64_t unit = 0;
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
            if (!strncmp(sp + 1, units[u].unit, strlen(units[u].unit))) unit = units[u].ms;
        assert_true(unit > 0);
        int64_t back = -1;
        assert_int_equal(time_iv_parse(t, (size_t)(sp - t), unit, &back), 0);
        assert_true(back == ms);
    }
    sbuf_fini(&b);
}

static void test_hostport(void **state)
{
    (void)state;
    static const struct { const char *s, *host; int port; } good[] = {
        {"127.0.0.1:7000", "127.0.0.1", 7000},
        {"localhost:0", "localhost", 0},
        {"[::1]:65535", "::1", 65535},
        {"::1:80", "::1", 80}, /* the last ':' splits */
        {"[123456789012345]:1", "123456789012345", 1}, /* just fits; brackets not counted */
        {"123456789012345:1", "123456789012345", 1},
    };
    char host[16];
    int port = -1;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(base_parse_hostport(good[i].s, host, sizeof host, &port), 0);
        assert_string_equal(host, good[i].host);
        assert_int_equal(port, good[i].port);
    }
    port = -1;
    static const char *bad[] = {"", "7000", ":7000", "host:", "host:port", "host:70000", "host:-1", "host:80x",
                                "host:8 0", "1234567890123456:1", "[1234567890123456]:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(base_parse_hostport(bad[i], host, sizeof host, &port), XE_INVAL);
        assert_int_equal(port, -1);
    }
}

/* Log lines: stderr into a file for the call, then the bytes checked. */
static void test_log_line(void **state)
{
    (void)state;
    assert_string_equal(base_log_level_name(BASE_LOG_DEBUG), "DEBUG");
    assert_string_equal(base_log_level_name(BASE_LOG_ERROR), "ERROR");
    assert_string_equal(base_log_level_name(4), "?");
    assert_string_equal(base_log_level_name(-1), "?");
    FILE *f = tmpfile();
    assert_non_null(f);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(f), 2) == 2);
    base_log_line("n1", BASE_LOG_WARN, NULL, "lost n2");
    base_log_line("net", BASE_LOG_INFO, "127.0.0.1:7001 n2", "up");
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    char line[2][128];
    rewind(f);
    for (int i = 0; i < 2; i++) assert_non_null(fgets(line[i], sizeof line[i], f));
    fclose(f);
    /* 2024-05-01T12:00:00.123Z: 24 bytes */
    for (int i = 0; i < 2; i++) {
        assert_true(strlen(line[i]) > 25);
        assert_int_equal(line[i][4], '-');
        assert_int_equal(line[i][10], 'T');
        assert_int_equal(line[i][19], '.');
        assert_int_equal(line[i][23], 'Z');
        int64_t ms;
        assert_int_equal(time_ts_parse(line[i], 24, TIME_DATA, &ms), 0);
    }
    assert_string_equal(line[0] + 24, " n1 WARN lost n2\n");
    assert_string_equal(line[1] + 24, " net INFO [127.0.0.1:7001 n2] up\n");
}

static int keep_odd(rowtab_ent *e, void *ctx)
{
    (void)ctx;
    if (!(e->h & 1)) return 0;
    e->seen = 7;
    return 1;
}

/* rowtab: slots by hash with linear probing, rehash in slot order, keep. */
static void test_rowtab(void **state)
{
    (void)state;
    rowtab t = {0};
    assert_int_equal(rowtab_rehash(&t, 8, NULL, NULL), 0);
    assert_int_equal(t.cap, 8);
    assert_int_equal(t.len, 0);
    /* 3, 11 and 19 all hash to slot 3: they take 3, 4, 5 */
    static const uint64_t hs[] = {3, 11, 19, 6};
    for (size_t i = 0; i < 4; i++) {
        rowtab_ent *e = rowtab_slot(&t, hs[i]);
        assert_int_equal(e->count, 0);
        e->h = hs[i];
        e->count = 1;
        e->at = (int64_t)i * 10;
        t.len++;
    }
    assert_ptr_equal(rowtab_slot(&t, 3), &t.v[3]);
    assert_ptr_equal(rowtab_slot(&t, 11), &t.v[4]);
    assert_ptr_equal(rowtab_slot(&t, 19), &t.v[5]);
    assert_ptr_equal(rowtab_slot(&t, 6), &t.v[6]);
    assert_ptr_equal(rowtab_slot(&t, 27), &t.v[7]); /* the free slot after the run */
    rowtab_slot(&t, 11)->count++;
    assert_int_equal(rowtab_slot(&t, 11)->count, 2);
    int64_t cut = 15;
    assert_int_equal(rowtab_count(&t, NULL, NULL), 4);
    assert_int_equal(rowtab_count(&t, rowtab_since, &cut), 2); /* 19 (at 20), 6 (at 30) */
    assert_int_equal(rowtab_count(&t, keep_odd, NULL), 3);
    assert_int_equal(t.v[3].seen, 0); /* count sees copies */
    /* grow keeping all: same entries, each where probing puts it */
    assert_int_equal(rowtab_rehash(&t, 16, NULL, NULL), 0);
    assert_int_equal(t.cap, 16);
    assert_int_equal(t.len, 4);
    assert_true(t.v[3].h == 3 && t.v[11].h == 11 && t.v[4].h == 19 && t.v[6].h == 6);
    assert_int_equal(rowtab_slot(&t, 11)->count, 2);
    /* keep may change what it keeps */
    assert_int_equal(rowtab_rehash(&t, 8, keep_odd, NULL), 0);
    assert_int_equal(t.len, 3);
    assert_int_equal(rowtab_slot(&t, 6)->count, 0);
    assert_int_equal(rowtab_slot(&t, 19)->seen, 7);
    assert_int_equal(rowtab_rehash(&t, 8, rowtab_since, &cut), 0);
    assert_int_equal(t.len, 1);
    assert_true(rowtab_slot(&t, 19)->count == 1 && rowtab_slot(&t, 3)->count == 0);
    rowtab_fini(&t);
    assert_null(t.v);
    assert_int_equal(t.cap, 0);
    rowtab_fini(&t);
}

/* base_proc_status_kb: this process's resident memory is there and not
 * zero; a field or a process that does not exist gives -1. */
static void test_proc_status(void **state)
{
    (void)state;
    assert_true(base_proc_status_kb(0, "VmRSS") > 0);
    assert_true(base_proc_status_kb((int)getpid(), "VmRSS") > 0);
    assert_int_equal(base_proc_status_kb(0, "NoSuchField"), -1);
    assert_int_equal(base_proc_status_kb(0, "VmRS"), -1); /* a prefix of a field is not the field */
    assert_int_equal(base_proc_status_kb(999999999, "VmRSS"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_heap),
        cmocka_unit_test(test_crc32c_known_vector),
        cmocka_unit_test(test_sbuf),
        cmocka_unit_test(test_xerr),
        cmocka_unit_test(test_hash_and_be),
        cmocka_unit_test(test_disk_full),
        cmocka_unit_test(test_ts_parse_common),
        cmocka_unit_test(test_ts_parse_dialects),
        cmocka_unit_test(test_ts_print),
        cmocka_unit_test(test_ts_round_trip),
        cmocka_unit_test(test_intervals),
        cmocka_unit_test(test_hostport),
        cmocka_unit_test(test_log_line),
        cmocka_unit_test(test_rowtab),
        cmocka_unit_test(test_proc_status),
    };
    return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}
