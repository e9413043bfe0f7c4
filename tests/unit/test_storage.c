/*
 * Unit tests for storage/: the LMDB store behind catalog, meta, stream logs
 * and window state.  Each test works in its own mkdtemp directory under /tmp
 * and removes it.  Beyond the happy paths: map growth from a 1 MiB map,
 * map_max, a foreign format version, garbage data files, and kill -9 of a
 * writing child at random moments (committed transactions must be atomic).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "storage/storage.h"

/* ------------------------------------------------------------------ helpers */

typedef struct fixture {
    char dir[64];
    store *s;
} fixture;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_rf(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/ares-storage-XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_close(f->s);
    rm_rf(f->dir);
    free(f);
    return 0;
}

static store *open_ok(const char *dir, const store_opts *o)
{
    store *s = NULL;
    xerr e = {0};
    int rc = store_open(dir, o, &s, &e);
    if (rc) print_error("store_open: %s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_non_null(s);
    return s;
}

static void reopen(fixture *f, const store_opts *o)
{
    store_close(f->s);
    f->s = open_ok(f->dir, o);
}

static store_txn *begin(store *s, int write)
{
    store_txn *t = NULL;
    xerr e = {0};
    assert_int_equal(store_begin(s, write, &t, &e), 0);
    return t;
}

static void commit(store_txn *t)
{
    xerr e = {0};
    int rc = store_commit(t, &e);
    if (rc) print_error("store_commit: %s\n", e.msg);
    assert_int_equal(rc, 0);
}

static void open_with_log(fixture *f, const store_opts *o, const char *stream)
{
    xerr e = {0};
    f->s = open_ok(f->dir, o);
    store_txn *t = begin(f->s, 1);
    assert_int_equal(store_log_create(t, stream, &e), 0);
    commit(t);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, n, fp), n);
    fclose(fp);
}

/* ------------------------------------------------------------------ open, kv */

/* Background syncs: commits go on while the store's thread syncs the
 * previous ones; store_sync and store_close wait for it; a write begun
 * right after store_sync_start sees what was committed; everything is
 * there after a reopen. */
static void test_background_sync(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    for (int i = 0; i < 50; i++) {
        char key[32], val[32];
        snprintf(key, sizeof key, "k%03d", i);
        snprintf(val, sizeof val, "v%d", i);
        store_txn *t = begin(f->s, 1);
        assert_int_equal(store_kv_put(t, STORE_CATALOG, key, val, strlen(val), &e), 0);
        commit(t);
        if (i % 10 == 9) assert_int_equal(store_sync(f->s, &e), 0);
        else assert_int_equal(store_sync_start(f->s, &e), 0);
    }
    reopen(f, NULL); /* store_close waits for the last background sync */
    store_txn *t = begin(f->s, 0);
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < 50; i++) {
        char key[32], val[32];
        snprintf(key, sizeof key, "k%03d", i);
        snprintf(val, sizeof val, "v%d", i);
        assert_int_equal(store_kv_get(t, STORE_CATALOG, key, &b, &e), 0);
        assert_int_equal(b.len, strlen(val));
        assert_memory_equal(b.p, val, b.len);
    }
    commit(t);
    sbuf_fini(&b);
    assert_int_equal(store_sync_start(f->s, &e), 0); /* nothing committed since: a no-op sync */
}



static void test_open_close_reopen(void **state)
{
    fixture *f = *state;
    char sub[128];
    snprintf(sub, sizeof sub, "%s/a/b", f->dir); /* created with parents */
    store *s = open_ok(sub, NULL);
    assert_string_equal(store_dir(s), sub);
    store_stats st;
    xerr e = {0};
    assert_int_equal(store_get_stats(s, &st, &e), 0);
    assert_int_equal(st.map_size, (size_t)256 << 20);
    assert_true(st.used_bytes > 0);

    store_txn *t = begin(s, 1);
    assert_int_equal(store_kv_put(t, STORE_CATALOG, "stream.ev", "def", 3, &e), 0);
    commit(t);
    assert_int_equal(store_sync(s, &e), 0);
    store_close(s);

    /* A second open of a directory in use is refused. */
    s = open_ok(sub, NULL);
    store *s2 = NULL;
    assert_int_equal(store_open(sub, NULL, &s2, &e), XE_BUSY);
    assert_null(s2);
    assert_non_null(strstr(e.msg, sub));

    t = begin(s, 0);
    sbuf b;
    sbuf_init(&b);
    assert_int_equal(store_kv_get(t, STORE_CATALOG, "stream.ev", &b, &e), 0);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.p, "def", 3);
    commit(t);
    sbuf_fini(&b);
    store_close(s);
    store_close(NULL);
}

static void note_warning(void *ctx, const char *msg)
{
    sbuf *b = ctx;
    sbuf_adds(b, msg);
    sbuf_adds(b, "\n");
}

static mode_t mode_of(const char *dir, const char *file)
{
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", dir, *file ? "/" : "", file);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

/* A new data directory is the owner's alone (0700, files 0600, whatever the
 * umask lets through beyond that); an existing one open to others is
 * reported through opts.warn, file by file, with the chmod that fixes it. */
static void test_private_modes(void **state)
{
    fixture *f = *state;
    char sub[128], want[2048];
    snprintf(sub, sizeof sub, "%s/a/b", f->dir);
    mode_t old = umask(022);
    sbuf w;
    sbuf_init(&w);
    store_opts o = {0};
    o.warn = note_warning;
    o.warn_ctx = &w;
    f->s = open_ok(sub, &o);
    assert_int_equal(mode_of(sub, ""), 0700);
    char parent[128];
    snprintf(parent, sizeof parent, "%s/a", f->dir);
    assert_int_equal(mode_of(parent, ""), 0700);
    assert_int_equal(mode_of(sub, "data.mdb"), 0600);
    assert_int_equal(mode_of(sub, "lock.mdb"), 0600);
    assert_int_equal(mode_of(sub, "store.lock"), 0600);
    assert_int_equal(w.len, 0);
    store_close(f->s);
    f->s = NULL;

    /* made open by hand, or by an older version: said at the next open */
    char path[256];
    assert_int_equal(chmod(sub, 0755), 0);
    snprintf(path, sizeof path, "%s/data.mdb", sub);
    assert_int_equal(chmod(path, 0644), 0);
    f->s = open_ok(sub, &o);
    snprintf(want, sizeof want, "storage %s: the data directory %s has mode 0755, open to group or others, who can "
             "read the stream logs and the state; chmod 700 %s\n"
             "storage %s: file %s has mode 0644, open to group or others, who can read the stream logs and the "
             "state; chmod 600 %s\n", sub, sub, sub, sub, path, path);
    assert_string_equal(w.p, want);
    assert_int_equal(mode_of(sub, ""), 0755); /* said, not changed */
    umask(old);
    sbuf_fini(&w);
}

typedef struct collect {
    sbuf keys;
    int n, stop_at;
} collect;

static int collect_kv(void *ctx, const char *key, const void *val, size_t n)
{
    collect *c = ctx;
    sbuf_printf(&c->keys, "%s=%.*s;", key, (int)n, (const char *)val);
    return ++c->n == c->stop_at ? 42 : 0;
}

static void test_kv(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    store_txn *t = begin(f->s, 1);
    const char *keys[] = {"q.b", "q.a", "qq", "p", "q.c", "r"};
    for (int i = 0; i < 6; i++) assert_int_equal(store_kv_put(t, STORE_CATALOG, keys[i], keys[i], 1, &e), 0);
    assert_int_equal(store_kv_put(t, STORE_META, "epoch", "7", 1, &e), 0);
    assert_int_equal(store_kv_put(t, STORE_CATALOG, "q.a", "A", 1, &e), 0); /* overwrite */
    assert_int_equal(store_kv_put(t, STORE_CATALOG, "", "x", 1, &e), XE_INVAL);
    commit(t);

    t = begin(f->s, 1);
    assert_int_equal(store_kv_put(t, STORE_META, "store.version", "x", 1, &e), XE_INVAL);
    assert_int_equal(store_kv_del(t, STORE_META, "store.version", &e), XE_INVAL);
    assert_int_equal(store_kv_del(t, STORE_CATALOG, "p", &e), 0);
    assert_int_equal(store_kv_del(t, STORE_CATALOG, "absent", &e), 0);
    commit(t);

    t = begin(f->s, 0);
    collect c = {.stop_at = -1};
    sbuf_init(&c.keys);
    assert_int_equal(store_kv_scan(t, STORE_CATALOG, "q.", collect_kv, &c, &e), 0);
    assert_string_equal(c.keys.p, "q.a=A;q.b=q;q.c=q;");
    sbuf_reset(&c.keys);
    c.n = 0;
    assert_int_equal(store_kv_scan(t, STORE_CATALOG, "", collect_kv, &c, &e), 0);
    assert_string_equal(c.keys.p, "q.a=A;q.b=q;q.c=q;qq=q;r=r;");
    sbuf_reset(&c.keys);
    c.n = 0;
    c.stop_at = 2;
    assert_int_equal(store_kv_scan(t, STORE_CATALOG, "q", collect_kv, &c, &e), 42);
    assert_string_equal(c.keys.p, "q.a=A;q.b=q;");
    sbuf_reset(&c.keys);
    c.n = 0;
    c.stop_at = -1;
    assert_int_equal(store_kv_scan(t, STORE_CATALOG, "zzz", collect_kv, &c, &e), 0);
    assert_int_equal(c.n, 0);
    /* Meta: the module's own keys are hidden. */
    assert_int_equal(store_kv_scan(t, STORE_META, "", collect_kv, &c, &e), 0);
    assert_string_equal(c.keys.p, "epoch=7;");

    sbuf b;
    sbuf_init(&b);
    assert_int_equal(store_kv_get(t, STORE_CATALOG, "p", &b, &e), XE_NOTFOUND);
    assert_int_equal(store_kv_get(t, STORE_META, "epoch", &b, &e), 0);
    assert_memory_equal(b.p, "7", 1);
    /* Catalog and meta are separate databases. */
    assert_int_equal(store_kv_get(t, STORE_CATALOG, "epoch", &b, &e), XE_NOTFOUND);
    /* Writes in a read txn are refused. */
    assert_int_equal(store_kv_put(t, STORE_CATALOG, "x", "x", 1, &e), XE_INVAL);
    commit(t);
    sbuf_fini(&b);
    sbuf_fini(&c.keys);
}

static void test_abort_discards(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    store_txn *t = begin(f->s, 1);
    assert_int_equal(store_kv_put(t, STORE_CATALOG, "k", "v", 1, &e), 0);
    assert_int_equal(store_state_put(t, STORE_STATE, 1, 5, "g", 1, "v", 1, &e), 0);
    assert_int_equal(store_log_create(t, "s1", &e), 0);
    uint64_t off;
    assert_int_equal(store_log_append(t, "s1", "r", 1, &off, &e), 0);
    store_abort(t);
    store_abort(NULL);

    t = begin(f->s, 0);
    sbuf b;
    sbuf_init(&b);
    assert_int_equal(store_kv_get(t, STORE_CATALOG, "k", &b, &e), XE_NOTFOUND);
    assert_int_equal(store_state_get(t, STORE_STATE, 1, 5, "g", 1, &b, &e), XE_NOTFOUND);
    uint64_t end;
    assert_int_equal(store_log_end(t, "s1", &end, &e), XE_NOTFOUND);
    commit(t);

    /* The log handle LMDB closed on abort is opened again. */
    t = begin(f->s, 1);
    assert_int_equal(store_log_create(t, "s1", &e), 0);
    assert_int_equal(store_log_append(t, "s1", "r", 1, &off, &e), 0);
    assert_int_equal(off, 0);
    commit(t);
    reopen(f, NULL);
    t = begin(f->s, 0);
    assert_int_equal(store_log_end(t, "s1", &end, &e), 0);
    assert_int_equal(end, 1);
    commit(t);
    sbuf_fini(&b);
}

/* ------------------------------------------------------------------ logs */

typedef struct logread {
    uint64_t first, last;
    int n, stop_at;
} logread;

static int read_rec(void *ctx, uint64_t offset, const void *rec, size_t n)
{
    logread *r = ctx;
    char want[32];
    int len = snprintf(want, sizeof want, "rec-%llu", (unsigned long long)offset);
    assert_int_equal(n, (size_t)len);
    assert_memory_equal(rec, want, n);
    if (r->n == 0) r->first = offset;
    else assert_int_equal(offset, r->last + 1);
    r->last = offset;
    return ++r->n == r->stop_at ? 7 : 0;
}

static void append_n(store_txn *t, const char *stream, uint64_t from, int n)
{
    xerr e = {0};
    for (int i = 0; i < n; i++) {
        char rec[32];
        int len = snprintf(rec, sizeof rec, "rec-%llu", (unsigned long long)(from + (uint64_t)i));
        uint64_t off = 99999;
        assert_int_equal(store_log_append(t, stream, rec, (size_t)len, &off, &e), 0);
        assert_int_equal(off, from + (uint64_t)i);
    }
}

static void check_bounds(store *s, const char *stream, uint64_t begin_want, uint64_t end_want)
{
    xerr e = {0};
    store_txn *t = begin(s, 0);
    uint64_t b = 1, en = 1;
    assert_int_equal(store_log_begin(t, stream, &b, &e), 0);
    assert_int_equal(store_log_end(t, stream, &en, &e), 0);
    assert_int_equal(b, begin_want);
    assert_int_equal(en, end_want);
    commit(t);
}

/* Records of sizes around whole overflow pages (4 KB pages: 4,080 bytes in
 * one, 8,176 in two): those just over are stored as a head and a tail
 * (storage/log.c) and must read back whole, from any offset, after trims and a
 * reopen, and inside the transaction that wrote them. */
static size_t split_size(uint64_t off)
{
    static const size_t sizes[] = {1, 100, 2000, 4079, 4080, 4081, 4269, 5104, 5105, 8176, 8177, 8500, 9199, 12300};
    return sizes[off % (sizeof sizes / sizeof sizes[0])];
}

static void split_fill(unsigned char *p, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(off * 31 + i * 7 + (i >> 8));
}

typedef struct splitread {
    uint64_t next;
    int n, stop_at;
} splitread;

static int read_split(void *ctx, uint64_t offset, const void *rec, size_t n)
{
    splitread *r = ctx;
    static unsigned char want[12300];
    assert_int_equal(offset, r->next);
    assert_int_equal(n, split_size(offset));
    split_fill(want, offset, n);
    assert_memory_equal(rec, want, n);
    r->next++;
    return ++r->n == r->stop_at ? 5 : 0;
}

/* Read "big" from `from` (its first record is at `first` or later). */
static void split_read(store *s, store_txn *tw, uint64_t from, uint64_t first, size_t max, int stop_at, int want_rc,
                       int want_n)
{
    xerr e = {0};
    store_txn *t = tw ? tw : begin(s, 0);
    splitread r = {from > first ? from : first, 0, stop_at};
    assert_int_equal(store_log_read(t, "big", from, max, read_split, &r, &e), want_rc);
    assert_int_equal(r.n, want_n);
    if (!tw) commit(t);
}

static void test_log_split(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    static unsigned char rec[12300];
    store_txn *t = begin(f->s, 1);
    assert_int_equal(store_log_create(t, "big", &e), 0);
    for (uint64_t off = 0; off < 70; off++) {
        size_t n = split_size(off);
        split_fill(rec, off, n);
        uint64_t got = 0;
        assert_int_equal(store_log_append(t, "big", rec, n, &got, &e), 0);
        assert_int_equal(got, off);
    }
    split_read(f->s, t, 0, 0, 0, -1, 0, 70); /* before the commit */
    commit(t);
    check_bounds(f->s, "big", 0, 70);
    split_read(f->s, NULL, 0, 0, 0, -1, 0, 70);
    for (uint64_t from = 0; from < 14; from++) split_read(f->s, NULL, from, 0, 3, -1, 0, 3);
    split_read(f->s, NULL, 6, 0, 0, 4, 5, 4); /* fn stops the read at a split record */
    split_read(f->s, NULL, 69, 0, 0, -1, 0, 1);
    split_read(f->s, NULL, 70, 0, 0, -1, 0, 0);

    t = begin(f->s, 1);
    assert_int_equal(store_log_trim(t, "big", 6, &e), 0); /* offset 6 is split: 4,269 bytes */
    commit(t);
    check_bounds(f->s, "big", 6, 70);
    reopen(f, NULL);
    check_bounds(f->s, "big", 6, 70);
    split_read(f->s, NULL, 0, 6, 0, -1, 0, 64);
    t = begin(f->s, 1);
    assert_int_equal(store_log_trim(t, "big", 1000, &e), 0);
    commit(t);
    check_bounds(f->s, "big", 70, 70);
    split_read(f->s, NULL, 0, 70, 0, -1, 0, 0);
}

static void test_log(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    store_txn *t = begin(f->s, 1);
    assert_int_equal(store_log_create(t, "ev", &e), 0);
    assert_int_equal(store_log_create(t, "ev", &e), 0); /* idempotent */
    assert_int_equal(store_log_create(t, "other", &e), 0);
    assert_int_equal(store_log_create(t, "", &e), XE_INVAL);
    uint64_t x;
    assert_int_equal(store_log_end(t, "ev", &x, &e), 0);
    assert_int_equal(x, 0);
    assert_int_equal(store_log_begin(t, "ev", &x, &e), 0);
    assert_int_equal(x, 0);
    append_n(t, "ev", 0, 60);
    append_n(t, "other", 0, 3);
    commit(t);
    t = begin(f->s, 1);
    append_n(t, "ev", 60, 40);
    assert_int_equal(store_log_append(t, "nosuch", "x", 1, &x, &e), XE_NOTFOUND);
    assert_non_null(strstr(e.msg, "nosuch"));
    commit(t);
    check_bounds(f->s, "ev", 0, 100);
    check_bounds(f->s, "other", 0, 3);

    t = begin(f->s, 0);
    logread r = {.stop_at = -1};
    assert_int_equal(store_log_read(t, "ev", 0, 0, read_rec, &r, &e), 0);
    assert_int_equal(r.n, 100);
    assert_int_equal(r.first, 0);
    r = (logread){.stop_at = -1};
    assert_int_equal(store_log_read(t, "ev", 50, 10, read_rec, &r, &e), 0);
    assert_int_equal(r.n, 10);
    assert_int_equal(r.first, 50);
    assert_int_equal(r.last, 59);
    r = (logread){.stop_at = 3};
    assert_int_equal(store_log_read(t, "ev", 95, 0, read_rec, &r, &e), 7);
    assert_int_equal(r.n, 3);
    r = (logread){.stop_at = -1};
    assert_int_equal(store_log_read(t, "ev", 100, 0, read_rec, &r, &e), 0);
    assert_int_equal(r.n, 0);
    commit(t);

    t = begin(f->s, 1);
    assert_int_equal(store_log_trim(t, "ev", 30, &e), 0);
    assert_int_equal(store_log_trim(t, "ev", 10, &e), 0); /* no-op */
    commit(t);
    check_bounds(f->s, "ev", 30, 100);
    reopen(f, NULL);
    check_bounds(f->s, "ev", 30, 100);
    check_bounds(f->s, "other", 0, 3);
    t = begin(f->s, 0);
    r = (logread){.stop_at = -1};
    assert_int_equal(store_log_read(t, "ev", 0, 0, read_rec, &r, &e), 0);
    assert_int_equal(r.n, 70);
    assert_int_equal(r.first, 30);
    commit(t);

    /* Trimming everything keeps the next offset, across reopen too. */
    t = begin(f->s, 1);
    assert_int_equal(store_log_trim(t, "ev", 1000, &e), 0);
    commit(t);
    check_bounds(f->s, "ev", 100, 100);
    reopen(f, NULL);
    check_bounds(f->s, "ev", 100, 100);
    t = begin(f->s, 1);
    append_n(t, "ev", 100, 5);
    commit(t);
    check_bounds(f->s, "ev", 100, 105);

    /* Drop, then create again: a new log from offset 0. */
    t = begin(f->s, 1);
    assert_int_equal(store_log_drop(t, "ev", &e), 0);
    assert_int_equal(store_log_end(t, "ev", &x, &e), XE_NOTFOUND);
    assert_int_equal(store_log_drop(t, "ev", &e), 0);
    commit(t);
    reopen(f, NULL);
    t = begin(f->s, 0);
    assert_int_equal(store_log_read(t, "ev", 0, 0, read_rec, &r, &e), XE_NOTFOUND);
    commit(t);
    t = begin(f->s, 1);
    assert_int_equal(store_log_create(t, "ev", &e), 0);
    append_n(t, "ev", 0, 2);
    commit(t);
    check_bounds(f->s, "ev", 0, 2);
    check_bounds(f->s, "other", 0, 3);
}

/* store_log_put: a copy of another log, record by record at the same
 * offsets: held offsets are skipped, an empty log starts anywhere, a gap in
 * a log that holds records is refused. */
static int put_rec(store_txn *t, uint64_t off, const char *text)
{
    xerr e = {0};
    char rec[32];
    int len = snprintf(rec, sizeof rec, "%s-%llu", text, (unsigned long long)off);
    return store_log_put(t, "ev", off, rec, (size_t)len, &e);
}

static void test_log_put(void **state)
{
    fixture *f = *state;
    open_with_log(f, NULL, "ev");
    xerr e = {0};
    store_txn *t = begin(f->s, 1);
    /* an empty log may start at 40 (the home had trimmed 0..39) */
    assert_int_equal(put_rec(t, 40, "rec"), 0);
    assert_int_equal(put_rec(t, 41, "rec"), 0);
    assert_int_equal(put_rec(t, 41, "other"), 1); /* held: a shipment sent again */
    assert_int_equal(put_rec(t, 40, "other"), 1);
    assert_int_equal(store_log_put(t, "ev", 44, "x", 1, &e), XE_INVAL); /* 42, 43 missing */
    assert_non_null(strstr(e.msg, "gap"));
    assert_int_equal(put_rec(t, 42, "rec"), 0);
    append_n(t, "ev", 43, 1);
    assert_int_equal(store_log_put(t, "nosuch", 0, "x", 1, &e), XE_NOTFOUND);
    commit(t);
    check_bounds(f->s, "ev", 40, 44);
    /* the records are the first ones put, after a reopen too */
    reopen(f, NULL);
    t = begin(f->s, 0);
    logread r = {.stop_at = -1};
    assert_int_equal(store_log_read(t, "ev", 0, 0, read_rec, &r, &e), 0);
    assert_int_equal(r.n, 4);
    assert_int_equal(r.first, 40);
    store_abort(t);
    t = begin(f->s, 1);
    assert_int_equal(put_rec(t, 44, "rec"), 0);
    commit(t);
    check_bounds(f->s, "ev", 40, 45);
    /* a copy of a log its home emptied: an empty log skips forward, never back */
    t = begin(f->s, 1);
    assert_int_equal(store_log_skip(t, "ev", 50, &e), XE_INVAL); /* it holds records */
    assert_int_equal(store_log_trim(t, "ev", 45, &e), 0);
    assert_int_equal(store_log_skip(t, "ev", 50, &e), 0);
    assert_int_equal(store_log_skip(t, "ev", 47, &e), 0);
    commit(t);
    check_bounds(f->s, "ev", 50, 50);
    reopen(f, NULL);
    check_bounds(f->s, "ev", 50, 50);
    t = begin(f->s, 1);
    assert_int_equal(put_rec(t, 50, "rec"), 0);
    commit(t);
    check_bounds(f->s, "ev", 50, 51);
}

static void test_many_logs(void **state)
{
    fixture *f = *state;
    store_opts o = {.max_streams = 8};
    f->s = open_ok(f->dir, &o);
    xerr e = {0};
    char name[16];
    store_txn *t = begin(f->s, 1);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "s%d", i);
        assert_int_equal(store_log_create(t, name, &e), 0);
        append_n(t, name, 0, i + 1); /* more logs than the txn's cache */
    }
    assert_int_equal(store_log_create(t, "one-too-many", &e), XE_FULL);
    assert_non_null(strstr(e.msg, "max_streams"));
    commit(t); /* the refused create spoiled nothing */
    reopen(f, &o);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "s%d", i);
        check_bounds(f->s, name, 0, (uint64_t)i + 1);
    }
    /* A dropped log keeps its handle until the next open, which deletes it. */
    t = begin(f->s, 1);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "s%d", i);
        assert_int_equal(store_log_drop(t, name, &e), 0);
    }
    assert_int_equal(store_log_create(t, "s3", &e), 0); /* same name: same handle */
    append_n(t, "s3", 0, 1);
    assert_int_equal(store_log_create(t, "new", &e), XE_FULL);
    store_abort(t);
    t = begin(f->s, 1);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "s%d", i);
        assert_int_equal(store_log_drop(t, name, &e), 0);
    }
    commit(t);
    reopen(f, &o);
    t = begin(f->s, 1);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(store_log_create(t, name, &e), 0);
        append_n(t, name, 0, 2);
    }
    commit(t);
    reopen(f, &o);
    check_bounds(f->s, "n7", 0, 2);
    t = begin(f->s, 0);
    uint64_t x;
    assert_int_equal(store_log_end(t, "s0", &x, &e), XE_NOTFOUND);
    commit(t);
}

/* ------------------------------------------------------------------ state */

typedef struct staterow {
    int64_t we;
    char key[16];
    char val[16];
} staterow;

typedef struct statecol {
    staterow rows[64];
    int n;
    store_txn *del_in; /* delete each visited entry through this txn */
    uint32_t task;
} statecol;

static int collect_state(void *ctx, int64_t we, const void *key, size_t klen, const void *val, size_t vlen)
{
    statecol *c = ctx;
    assert_true(c->n < 64);
    staterow *r = &c->rows[c->n++];
    r->we = we;
    memcpy(r->key, key, klen);
    r->key[klen] = 0;
    memcpy(r->val, val, vlen);
    r->val[vlen] = 0;
    if (c->del_in) {
        xerr e = {0};
        assert_int_equal(store_state_del(c->del_in, STORE_STATE, c->task, we, key, klen, &e), 0);
    }
    return 0;
}

static void scan(store_txn *t, store_state_db db, uint32_t task, int64_t lo, int64_t hi, statecol *c)
{
    xerr e = {0};
    c->n = 0;
    assert_int_equal(store_state_scan(t, db, task, lo, hi, collect_state, c, &e), 0);
}

static void test_state(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    store_txn *t = begin(f->s, 1);
    int64_t wes[] = {5, -5, 0, INT64_MIN, INT64_MAX, -1, 1000};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(store_state_put(t, STORE_STATE, 7, wes[i], "b", 1, "vb", 2, &e), 0);
        assert_int_equal(store_state_put(t, STORE_STATE, 7, wes[i], "a", 1, "va", 2, &e), 0);
        assert_int_equal(store_state_put(t, STORE_STATE, 6, wes[i], "x", 1, "t6", 2, &e), 0);
        assert_int_equal(store_state_put(t, STORE_STATE, 8, wes[i], "x", 1, "t8", 2, &e), 0);
        assert_int_equal(store_state_put(t, STORE_REPLICA, 7, wes[i], "r", 1, "rr", 2, &e), 0);
    }
    assert_int_equal(store_state_put(t, STORE_STATE, UINT32_MAX, -3, "", 0, "max", 3, &e), 0);
    assert_int_equal(store_state_put(t, STORE_STATE, 7, 5, "a", 1, "VA", 2, &e), 0); /* overwrite */
    char big[600] = {0};
    assert_int_equal(store_state_put(t, STORE_STATE, 7, 5, big, sizeof big, "v", 1, &e), XE_INVAL);
    commit(t);

    t = begin(f->s, 0);
    statecol c = {0};
    scan(t, STORE_STATE, 7, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 12); /* INT64_MAX itself is excluded */
    int64_t order[] = {INT64_MIN, -5, -1, 0, 5, 1000};
    for (int i = 0; i < 6; i++) {
        assert_true(c.rows[2 * i].we == order[i]);
        assert_true(c.rows[2 * i + 1].we == order[i]);
        assert_string_equal(c.rows[2 * i].key, "a");
        assert_string_equal(c.rows[2 * i + 1].key, "b");
    }
    assert_string_equal(c.rows[8].val, "VA");
    scan(t, STORE_STATE, 7, -5, 1, &c);
    assert_int_equal(c.n, 6);
    assert_true(c.rows[0].we == -5 && c.rows[5].we == 0);
    scan(t, STORE_STATE, 7, 1, 1, &c);
    assert_int_equal(c.n, 0);
    scan(t, STORE_REPLICA, 7, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 6);
    assert_string_equal(c.rows[0].val, "rr");
    scan(t, STORE_STATE, UINT32_MAX, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 1);
    assert_true(c.rows[0].we == -3);
    assert_string_equal(c.rows[0].key, "");
    sbuf b;
    sbuf_init(&b);
    assert_int_equal(store_state_get(t, STORE_STATE, 7, INT64_MAX, "b", 1, &b, &e), 0);
    assert_memory_equal(b.p, "vb", 2);
    assert_int_equal(store_state_get(t, STORE_STATE, 7, 4, "b", 1, &b, &e), XE_NOTFOUND);
    commit(t);

    t = begin(f->s, 1);
    assert_int_equal(store_state_del(t, STORE_STATE, 7, -5, "a", 1, &e), 0);
    assert_int_equal(store_state_del(t, STORE_STATE, 7, -5, "a", 1, &e), 0); /* absent: fine */
    assert_int_equal(store_state_delete_range(t, STORE_STATE, 7, -1, 6, &e), 0);
    commit(t);
    t = begin(f->s, 0);
    scan(t, STORE_STATE, 7, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 5);
    assert_true(c.rows[0].we == INT64_MIN);
    assert_true(c.rows[2].we == -5 && strcmp(c.rows[2].key, "b") == 0);
    assert_true(c.rows[3].we == 1000);
    commit(t);

    t = begin(f->s, 1);
    assert_int_equal(store_state_drop_task(t, STORE_STATE, 7, &e), 0);
    commit(t);
    t = begin(f->s, 0);
    scan(t, STORE_STATE, 7, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 0);
    assert_int_equal(store_state_get(t, STORE_STATE, 7, INT64_MAX, "b", 1, &b, &e), XE_NOTFOUND);
    scan(t, STORE_STATE, 6, INT64_MIN, INT64_MAX, &c); /* neighbours untouched */
    assert_int_equal(c.n, 6);
    assert_int_equal(store_state_get(t, STORE_STATE, 6, INT64_MAX, "x", 1, &b, &e), 0);
    scan(t, STORE_STATE, 8, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 6);
    scan(t, STORE_REPLICA, 7, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 6);
    commit(t);

    /* Close windows the way the executor will: scan, emit, delete in the callback. */
    t = begin(f->s, 1);
    c.del_in = t;
    c.task = 6;
    scan(t, STORE_STATE, 6, INT64_MIN, 1, &c);
    assert_int_equal(c.n, 4);
    c.del_in = NULL;
    scan(t, STORE_STATE, 6, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 2);
    assert_true(c.rows[0].we == 5);
    commit(t);
    sbuf_fini(&b);
}

/* A recorder takes the changes made while it is set, and store_state_apply
 * makes them again, in order, in another db; store_txn_recording says which
 * recorder is set, so that a writer between flushes (the aggregates' cold
 * records) can record into its own and put the one it found back. */
static void test_state_record(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    sbuf flush, own;
    sbuf_init(&flush);
    sbuf_init(&own);
    store_txn *t = begin(f->s, 1);
    assert_null(store_txn_recording(t));
    assert_null(store_txn_recording(NULL));
    store_txn_record(t, &own);
    assert_ptr_equal(store_txn_recording(t), &own);
    assert_int_equal(store_state_put(t, STORE_STATE, 9, 10, "cold", 4, "c1", 2, &e), 0);
    assert_int_equal(store_state_put(t, STORE_STATE, 9, 10, "gone", 4, "g1", 2, &e), 0);
    assert_int_equal(store_state_del(t, STORE_STATE, 9, 10, "gone", 4, &e), 0);
    store_txn_record(t, NULL);
    assert_int_equal(store_state_put(t, STORE_STATE, 9, 10, "unrecorded", 10, "u", 1, &e), 0);
    /* the flush: what was recorded between flushes first, then its own */
    store_txn_record(t, &flush);
    assert_int_equal(sbuf_add(&flush, own.p, own.len), 0);
    assert_int_equal(store_state_put(t, STORE_STATE, 9, 10, "hot", 3, "h1", 2, &e), 0);
    store_txn_record(t, NULL);
    assert_int_equal(store_state_apply(t, STORE_REPLICA, flush.p, flush.len, &e), 0);
    commit(t);
    t = begin(f->s, 0);
    statecol c = {0};
    scan(t, STORE_REPLICA, 9, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.rows[0].key, "cold");
    assert_string_equal(c.rows[0].val, "c1");
    assert_string_equal(c.rows[1].key, "hot");
    scan(t, STORE_STATE, 9, INT64_MIN, INT64_MAX, &c);
    assert_int_equal(c.n, 3);
    commit(t);
    sbuf_fini(&flush);
    sbuf_fini(&own);
}

/* Many entries over many pages: ranges delete exactly what they should. */
static int count_state(void *ctx, int64_t we, const void *key, size_t klen, const void *val, size_t vlen)
{
    int64_t *n = ctx;
    (void)we, (void)key, (void)klen, (void)val, (void)vlen;
    (*n)++;
    return 0;
}

static void test_state_bulk(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    store_txn *t = begin(f->s, 1);
    char key[16], val[64];
    memset(val, 'v', sizeof val);
    for (uint32_t task = 1; task <= 3; task++)
        for (int64_t w = -500; w < 500; w++)
            for (int k = 0; k < 5; k++) {
                int n = snprintf(key, sizeof key, "g%03d", k);
                assert_int_equal(store_state_put(t, STORE_STATE, task, w * 1000, key, (size_t)n, val, sizeof val, &e), 0);
            }
    commit(t);
    t = begin(f->s, 1);
    assert_int_equal(store_state_delete_range(t, STORE_STATE, 2, -250000, 250000, &e), 0);
    int64_t n = 0;
    assert_int_equal(store_state_scan(t, STORE_STATE, 2, INT64_MIN, INT64_MAX, count_state, &n, &e), 0);
    assert_int_equal(n, 2500);
    n = 0;
    assert_int_equal(store_state_scan(t, STORE_STATE, 2, -250000, 250001, count_state, &n, &e), 0);
    assert_int_equal(n, 5);
    assert_int_equal(store_state_drop_task(t, STORE_STATE, 1, &e), 0);
    commit(t);
    t = begin(f->s, 0);
    n = 0;
    assert_int_equal(store_state_scan(t, STORE_STATE, 1, INT64_MIN, INT64_MAX, count_state, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_int_equal(store_state_scan(t, STORE_STATE, 3, INT64_MIN, INT64_MAX, count_state, &n, &e), 0);
    assert_int_equal(n, 5000);
    commit(t);
}

/* ------------------------------------------------------------------ map growth */

typedef struct bulk {
    uint64_t next;  /* first record of this batch */
    int per_txn;
    size_t rec_size;
    int calls;
} bulk;

static void fill_rec(unsigned char *rec, size_t n, uint64_t off)
{
    for (size_t i = 0; i < n; i++) rec[i] = (unsigned char)(off * 31 + i);
}

static int write_batch(void *ctx, store_txn *t, xerr *err)
{
    bulk *b = ctx;
    unsigned char rec[8192];
    b->calls++;
    for (int i = 0; i < b->per_txn; i++) {
        uint64_t want = b->next + (uint64_t)i, off;
        fill_rec(rec, b->rec_size, want);
        int rc = store_log_append(t, "big", rec, b->rec_size, &off, err);
        if (rc < 0) return rc;
        assert_int_equal(off, want);
    }
    return 0;
}

static int check_rec(void *ctx, uint64_t offset, const void *rec, size_t n)
{
    bulk *b = ctx;
    unsigned char want[8192];
    assert_int_equal(offset, b->next);
    assert_int_equal(n, b->rec_size);
    fill_rec(want, n, offset);
    assert_memory_equal(rec, want, n);
    b->next++;
    return 0;
}

static void test_map_growth(void **state)
{
    fixture *f = *state;
    store_opts o = {.map_size = 1 << 20};
    open_with_log(f, &o, "big");
    xerr e = {0};
    store_txn *t;

    /* By hand first: fill the map inside one txn, see XE_FULL, redo it. */
    t = begin(f->s, 1);
    unsigned char rec[4096];
    int rc = 0, puts = 0;
    uint64_t off;
    while (rc == 0 && puts < 10000) {
        fill_rec(rec, sizeof rec, (uint64_t)puts);
        rc = store_log_append(t, "big", rec, sizeof rec, &off, &e);
        puts++;
    }
    assert_int_equal(rc, XE_FULL);
    assert_int_equal(store_log_append(t, "big", rec, sizeof rec, &off, &e), XE_FULL);
    assert_int_equal(store_commit(t, &e), XE_FULL);
    assert_non_null(strstr(e.msg, "grown"));
    store_stats st;
    assert_int_equal(store_get_stats(f->s, &st, &e), 0);
    assert_true(st.map_size >= (size_t)2 << 20);
    t = begin(f->s, 0);
    assert_int_equal(store_log_end(t, "big", &off, &e), 0);
    assert_int_equal(off, 0); /* the failed txn left nothing */
    commit(t);

    /* Then 50 MB through store_write, 1 MB per txn. */
    bulk b = {.per_txn = 256, .rec_size = 4096};
    size_t total = 50u << 20;
    while (b.next * b.rec_size < total) {
        rc = store_write(f->s, write_batch, &b, &e);
        if (rc) print_error("store_write: %s\n", e.msg);
        assert_int_equal(rc, 0);
        b.next += (uint64_t)b.per_txn;
    }
    assert_true(b.calls >= (int)(total / (256 * 4096)));
    assert_int_equal(store_get_stats(f->s, &st, &e), 0);
    assert_true(st.map_size >= total);
    assert_true(st.used_bytes >= total);
    uint64_t written = b.next;

    reopen(f, &o); /* a small configured map does not shrink what the data needs */
    bulk check = {.rec_size = 4096};
    t = begin(f->s, 0);
    assert_int_equal(store_log_read(t, "big", 0, 0, check_rec, &check, &e), 0);
    assert_int_equal(check.next, written);
    commit(t);
    b.per_txn = 64;
    assert_int_equal(store_write(f->s, write_batch, &b, &e), 0);
}

static void test_map_max(void **state)
{
    fixture *f = *state;
    store_opts o = {.map_size = 1 << 20, .map_max = 3 << 20};
    open_with_log(f, &o, "big");
    xerr e = {0};
    store_txn *t;
    bulk b = {.per_txn = 64, .rec_size = 4096};
    int rc;
    while ((rc = store_write(f->s, write_batch, &b, &e)) == 0) b.next += (uint64_t)b.per_txn;
    assert_int_equal(rc, XE_FULL);
    assert_non_null(strstr(e.msg, "map_max"));
    assert_non_null(strstr(e.msg, f->dir));
    assert_true(b.next > 0 && b.next * b.rec_size <= (3u << 20));
    /* Still usable: trimming frees pages that writes reuse once two more
     * transactions have committed (LMDB keeps the previous snapshot). */
    t = begin(f->s, 1);
    assert_int_equal(store_log_trim(t, "big", b.next, &e), 0);
    commit(t);
    for (int i = 0; i < 2; i++) {
        t = begin(f->s, 1);
        assert_int_equal(store_kv_put(t, STORE_META, "epoch", &i, sizeof i, &e), 0);
        commit(t);
    }
    rc = store_write(f->s, write_batch, &b, &e);
    if (rc) print_error("store_write after trim: %s\n", e.msg);
    assert_int_equal(rc, 0);
}

/* A reader open at the moment of MAP_FULL: growth waits for it to end. */
static void test_map_full_with_reader(void **state)
{
    fixture *f = *state;
    store_opts o = {.map_size = 1 << 20};
    open_with_log(f, &o, "big");
    xerr e = {0};
    store_txn *t;
    store_txn *r = begin(f->s, 0);
    bulk b = {.per_txn = 512, .rec_size = 4096};
    t = begin(f->s, 1);
    assert_int_equal(write_batch(&b, t, &e), XE_FULL);
    assert_int_equal(store_commit(t, &e), XE_FULL);
    assert_non_null(strstr(e.msg, "open transaction"));
    store_stats st;
    assert_int_equal(store_get_stats(f->s, &st, &e), 0);
    assert_int_equal(st.map_size, (size_t)1 << 20);
    commit(r); /* the last txn to end grows the map */
    assert_int_equal(store_get_stats(f->s, &st, &e), 0);
    assert_true(st.map_size >= (size_t)2 << 20);
    assert_int_equal(store_write(f->s, write_batch, &b, &e), 0);
}

/* Readers on another thread while the writer grows the map and creates logs:
 * every snapshot is consistent and never goes back in time. */
typedef struct concur {
    store *s;
    atomic_int stop;
    atomic_int reads;
    int failed;
} concur;

static int count_rows(void *ctx, int64_t we, const void *key, size_t klen, const void *val, size_t vlen)
{
    (void)we, (void)key, (void)klen, (void)val, (void)vlen;
    (*(uint64_t *)ctx)++;
    return 0;
}

static void *reader_main(void *arg)
{
    concur *c = arg;
    uint64_t last = 0;
    sbuf b;
    sbuf_init(&b);
    while (!atomic_load(&c->stop) && !c->failed) {
        store_txn *t;
        xerr e = {0};
        if (store_begin(c->s, 0, &t, &e) != 0) {
            c->failed = 1;
            break;
        }
        uint64_t counter = 0, rows = 0, end = 0;
        if (store_kv_get(t, STORE_META, "counter", &b, &e) == 0) counter = be64_get((unsigned char *)b.p);
        if (store_state_scan(t, STORE_STATE, 3, INT64_MIN, INT64_MAX, count_rows, &rows, &e) != 0) c->failed = 2;
        /* Log k is created by txn 10*k and gets one record per txn after. */
        char name[32];
        snprintf(name, sizeof name, "l%llu", (unsigned long long)(counter / 10));
        int rc = store_log_end(t, name, &end, &e);
        if (counter >= 10 && (rc != 0 || end != counter % 10 + 1)) c->failed = 3;
        if (counter < last || rows != counter) c->failed = 4;
        last = counter;
        store_abort(t);
        atomic_fetch_add(&c->reads, 1);
    }
    sbuf_fini(&b);
    return NULL;
}

typedef struct concur_w {
    uint64_t i;
} concur_w;

static int concur_txn(void *ctx, store_txn *t, xerr *err)
{
    concur_w *w = ctx;
    static char val[4096];
    unsigned char v[8];
    be64_put(v, w->i);
    char name[32];
    snprintf(name, sizeof name, "l%llu", (unsigned long long)(w->i / 10));
    uint64_t off;
    int rc;
    if ((rc = store_state_put(t, STORE_STATE, 3, (int64_t)w->i, "k", 1, val, sizeof val, err)) < 0 ||
        (rc = store_kv_put(t, STORE_META, "counter", v, 8, err)) < 0)
        return rc;
    if (w->i >= 10 && w->i % 10 == 0) {
        if ((rc = store_log_create(t, name, err)) < 0) return rc;
        snprintf(name, sizeof name, "l%llu", (unsigned long long)(w->i / 10 - 1));
        if ((rc = store_log_drop(t, name, err)) < 0) return rc; /* under the readers' feet */
        snprintf(name, sizeof name, "l%llu", (unsigned long long)(w->i / 10));
    }
    if (w->i >= 10 && (rc = store_log_append(t, name, v, 8, &off, err)) < 0) return rc;
    return 0;
}

static void test_concurrent_readers(void **state)
{
    fixture *f = *state;
    store_opts o = {.map_size = 1 << 20};
    f->s = open_ok(f->dir, &o);
    concur c = {.s = f->s};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, reader_main, &c), 0);
    xerr e = {0};
    concur_w w = {0};
    for (w.i = 1; w.i <= 1200 && !c.failed; w.i++) {
        int rc = store_write(f->s, concur_txn, &w, &e);
        if (rc) print_error("store_write: %s\n", e.msg);
        assert_int_equal(rc, 0);
    }
    atomic_store(&c.stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(c.failed, 0);
    assert_true(atomic_load(&c.reads) > 0);
    store_stats st;
    assert_int_equal(store_get_stats(f->s, &st, &e), 0);
    assert_true(st.map_size >= (size_t)8 << 20);
}

/* ------------------------------------------------------------------ bad directories */

/* Every copy of the format version `from` in the data file (the key and
 * value sit side by side in an LMDB leaf node) becomes `to`; how many. */
static int patch_version(const char *path, uint32_t from, uint32_t to)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    const char *key = "store.version";
    size_t kl = strlen(key);
    int patched = 0;
    for (size_t i = 0; i + kl + 4 <= n; i++)
        if (memcmp(buf + i, key, kl) == 0 && be32_get(buf + i + kl) == from) {
            be32_put(buf + i + kl, to);
            patched++;
        }
    write_file(path, buf, n);
    return patched;
}

static void test_version_mismatch(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    store_close(f->s);
    f->s = NULL;

    /* Rewrite the format version in place, as another build would have left it. */
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", f->dir);
    assert_true(patch_version(path, STORE_FORMAT_VERSION, 99) > 0);

    store *s = NULL;
    xerr e = {0};
    assert_int_equal(store_open(f->dir, NULL, &s, &e), XE_VERSION);
    assert_null(s);
    assert_non_null(strstr(e.msg, f->dir));
    assert_non_null(strstr(e.msg, "99"));
}

/* A version 2 directory (logs without split records) opens, and is then
 * version 3, so that an older build refuses it rather than misread it. */
static void test_version_upgrade(void **state)
{
    fixture *f = *state;
    f->s = open_ok(f->dir, NULL);
    xerr e = {0};
    store_txn *t = begin(f->s, 1);
    assert_int_equal(store_log_create(t, "ev", &e), 0);
    append_n(t, "ev", 0, 5);
    commit(t);
    store_close(f->s);
    f->s = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", f->dir);
    assert_true(patch_version(path, STORE_FORMAT_VERSION, 2) > 0);
    f->s = open_ok(f->dir, NULL);
    t = begin(f->s, 0);
    logread r = {.stop_at = -1};
    assert_int_equal(store_log_read(t, "ev", 0, 0, read_rec, &r, &e), 0);
    assert_int_equal(r.n, 5);
    commit(t);
    store_close(f->s);
    f->s = NULL;
    assert_true(patch_version(path, STORE_FORMAT_VERSION, STORE_FORMAT_VERSION) > 0); /* it says 3 again */
    f->s = open_ok(f->dir, NULL);
}

static void test_garbage_dir(void **state)
{
    fixture *f = *state;
    char path[128];
    static unsigned char junk[256 << 10];
    srand(12345);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)rand();
    snprintf(path, sizeof path, "%s/data.mdb", f->dir);
    store *s = NULL;
    xerr e = {0};

    size_t sizes[] = {sizeof junk, 100, 4096 * 3};
    for (int i = 0; i < 3; i++) {
        write_file(path, junk, sizes[i]);
        assert_int_equal(store_open(f->dir, NULL, &s, &e), XE_CORRUPT);
        assert_null(s);
        assert_non_null(strstr(e.msg, f->dir));
    }
    /* A regular file where the directory should be. */
    assert_int_equal(store_open(path, NULL, &s, &e), XE_IO);
    assert_null(s);
    assert_non_null(strstr(e.msg, path));
    /* An unwritable place. */
    assert_int_equal(store_open("/proc/ares-no-such/x", NULL, &s, &e), XE_IO);
    assert_null(s);
}

/* ------------------------------------------------------------------ crash atomicity */

typedef struct crashctx {
    uint64_t i;
} crashctx;

static int crash_txn(void *ctx, store_txn *t, xerr *err)
{
    crashctx *c = ctx;
    unsigned char v[8];
    char row[512];
    be64_put(v, c->i);
    memset(row, (int)(c->i & 0xff), sizeof row);
    memcpy(row, v, 8);
    uint64_t off;
    int rc;
    if ((rc = store_state_put(t, STORE_STATE, 1, (int64_t)c->i - 1000, "row", 3, row, sizeof row, err)) < 0 ||
        (rc = store_log_append(t, "in", v, 8, &off, err)) < 0 ||
        (rc = store_kv_put(t, STORE_META, "counter", v, 8, err)) < 0)
        return rc;
    return 0;
}

static int crash_child(const char *dir, int fd)
{
    store *s = NULL;
    xerr e = {0};
    store_opts o = {.map_size = 1 << 20}; /* growth happens under fire too */
    if (store_open(dir, &o, &s, &e) != 0) return 1;
    crashctx c = {0};
    store_txn *t;
    if (store_begin(s, 0, &t, &e) != 0) return 1;
    sbuf b;
    sbuf_init(&b);
    if (store_kv_get(t, STORE_META, "counter", &b, &e) == 0) c.i = be64_get((unsigned char *)b.p);
    store_abort(t);
    for (int signalled = 0;; signalled = 1) {
        c.i++;
        if (store_write(s, crash_txn, &c, &e) != 0) return 2;
        if (!signalled && write(fd, "x", 1) != 1) return 3;
    }
}

typedef struct lastrow {
    int64_t we;
    uint64_t val;
    int64_t n;
} lastrow;

static int last_row(void *ctx, int64_t we, const void *key, size_t klen, const void *val, size_t vlen)
{
    lastrow *l = ctx;
    (void)key, (void)klen;
    assert_int_equal(vlen, 512);
    l->we = we;
    l->val = be64_get(val);
    l->n++;
    return 0;
}

static void test_crash_atomicity(void **state)
{
    fixture *f = *state;
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    store_opts o = {.map_size = 1 << 20};
    open_with_log(f, &o, "in");
    xerr e = {0};
    store_txn *t;
    store_close(f->s);
    f->s = NULL;

    uint64_t prev = 0;
    for (int round = 0; round < 5; round++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            _exit(crash_child(f->dir, p[1]));
        }
        close(p[1]);
        char x;
        assert_int_equal(read(p[0], &x, 1), 1); /* it committed at least once */
        close(p[0]);
        struct timespec ts = {0, (long)(5 + rand() % 150) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        f->s = open_ok(f->dir, &o);
        t = begin(f->s, 0);
        sbuf b;
        sbuf_init(&b);
        assert_int_equal(store_kv_get(t, STORE_META, "counter", &b, &e), 0);
        assert_int_equal(b.len, 8);
        uint64_t counter = be64_get((unsigned char *)b.p);
        assert_true(counter > prev);
        lastrow l = {0};
        assert_int_equal(store_state_scan(t, STORE_STATE, 1, INT64_MIN, INT64_MAX, last_row, &l, &e), 0);
        assert_int_equal(l.n, (int64_t)counter); /* one row per committed txn, no more */
        assert_true(l.we == (int64_t)counter - 1000);
        assert_int_equal(l.val, counter);
        uint64_t end;
        assert_int_equal(store_log_end(t, "in", &end, &e), 0);
        assert_int_equal(end, counter);
        commit(t);
        sbuf_fini(&b);
        store_close(f->s);
        f->s = NULL;
        prev = counter;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_close_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_background_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_discards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_put, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_logs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_bulk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_full_with_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_readers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_upgrade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_atomicity, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
