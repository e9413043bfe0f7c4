/*
 * storage.c: the LMDB environment behind storage.h.  One environment per
 * engine, opened once with every named database it needs; handles are cached
 * for the life of the store.  Writes come from one thread at a time (LMDB's
 * writer lock serialises them); read transactions may run on any thread.
 *
 * Invariants:
 *  - Every LMDB transaction of this process is counted in s->active, under
 *    s->mu.  mdb_env_set_mapsize() runs only with s->mu held and s->active == 0,
 *    because LMDB forbids resizing the map while this process has a
 *    transaction open.  Growth is asked for when a write hits MDB_MAP_FULL
 *    (the whole transaction is then lost and must be redone) and done by
 *    whoever ends the last open transaction, or at the next write begin; a
 *    write begin also grows ahead of need when the map is three quarters used.
 *  - A log exists iff its registry key "store.log:<stream>" is in meta; the
 *    value is the offset floor (the next offset survives trimming the log
 *    empty).  Its named database "log:<stream>" is opened once and the handle
 *    is kept until store_close, also after a drop (the dropped database is
 *    emptied, not deleted, so no handle is ever closed under a reader).
 *  - A handle opened in a write transaction becomes shared only once that
 *    transaction commits (LMDB closes it on abort).  Such a commit runs with
 *    s->mu held and read transactions begin under s->mu, so a reader sees
 *    either the old snapshot or the new handle, never the snapshot alone.
 *  - Values and keys handed to callers are LMDB's memory, valid only during a
 *    get's copy or a callback; nothing borrowed outlives the call.
 */
#include "storage/storage.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define DEFAULT_MAP (256 * MIB)
#define DEFAULT_MAP_MAX ((size_t)64 << 30)
#define DEFAULT_STREAMS 128
#define CORE_DBS 4          /* catalog, meta, state, replica */
#define KEY_MAX 512         /* >= mdb_env_get_maxkeysize() (511) */
#define TXLOG_SLOTS 4       /* logs a transaction remembers without lookups */

#define META_VERSION "store.version"
#define META_LOG "store.log:"   /* + stream: be64 offset floor */
#define META_RESERVED "store."

/* Log records split in two (format version 3).  LMDB keeps a value of more
 * than about half a page in overflow pages of its own, one page header
 * (LOG_PAGE_HDR bytes) for the run, the last page padded: a record just
 * over what whole pages hold wastes nearly a page, which is written and
 * synced all the same.  Such a record is stored as a head of whole pages
 * under be64(offset) and its tail, at most LOG_TAIL_MAX bytes, under
 * be64(offset) || LOG_TAIL: a small node that shares a leaf page with other
 * records' tails.  A slice of the engine benchmark (4,269 bytes) then takes
 * one page and a tenth of a leaf instead of two pages.  Readers join the
 * two; offsets stay one per record. */
#define LOG_TAIL 0x01
enum { LOG_PAGE_HDR = 16, LOG_TAIL_MAX = 1024 };

/* A log's named database handle.  Entries live until store_close. */
typedef struct logent {
    struct logent *next;
    MDB_dbi dbi;
    char name[]; /* the stream name, without "log:" */
} logent;

struct store {
    MDB_env *env;
    MDB_dbi catalog, meta, state, replica;
    char *dir;
    int lockfd;
    size_t map_max;
    size_t pagesize;
    int maxkey;

    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t grown; /* signalled when a requested growth is done */
    int active;         /* LMDB transactions open in this process */
    size_t grow_to;     /* map size asked for by a MAP_FULL, 0 = none */
    logent *logs;       /* committed log handles */
    store_txn *spare;   /* one txn struct kept for reuse */

    /* The background sync (store_sync_start): a thread that runs fdatasync
     * on the data file when asked, one at a time. */
    pthread_mutex_t smu;  /* guards the fields below */
    pthread_cond_t scv;   /* a request, the end of a sync, or quit */
    pthread_t syncer;
    int syncer_up;        /* the thread was started */
    int sync_busy;        /* a sync was asked for and has not finished */
    int sync_errno;       /* of the last background sync that failed, until reported */
    int sync_quit;
};

/* What a transaction knows about one log, so appends skip the lookups. */
typedef struct txlog {
    const char *name; /* points into a logent */
    MDB_dbi dbi;
    uint64_t floor;   /* from the registry */
    uint64_t next;    /* next offset, valid when next_known */
    int next_known;
} txlog;

struct store_txn {
    store *s;
    MDB_txn *txn;
    int write;
    int failed;       /* first XE_ code after which LMDB refuses the txn */
    int map_full;     /* the failure was MDB_MAP_FULL: growing helps */
    size_t bytes;     /* bytes written, to size growth */
    logent *created;  /* handles opened here, shared on commit */
    unsigned nlogs, log_rr;
    txlog logs[TXLOG_SLOTS];
    sbuf *rec;        /* store_txn_record: changes to STORE_STATE are copied here */
    unsigned char kbuf[KEY_MAX]; /* last: not cleared at begin */
};

/* ------------------------------------------------------------------ errors */

static const char *errtext(int rc)
{
    return rc > 0 ? strerror(rc) : mdb_strerror(rc);
}

/* Map an LMDB or errno code to an XE_ code and message; in a write txn it
 * also marks the txn failed, since LMDB refuses it after most errors. */
static int lmdb_err(store *s, store_txn *t, xerr *err, int rc, const char *what)
{
    int code;
    switch (rc) {
    case MDB_MAP_FULL:
        if (t) t->map_full = 1;
        code = xerr_set(err, XE_FULL, "storage %s: map full during %s; the transaction is lost and "
                        "must be redone (store_commit grows the map)", s->dir, what);
        break;
    case MDB_TXN_FULL:
        code = xerr_set(err, XE_FULL, "storage %s: transaction too large during %s; commit more often",
                        s->dir, what);
        break;
    case MDB_DBS_FULL:
        code = xerr_set(err, XE_FULL, "storage %s: too many stream logs during %s; raise max_streams",
                        s->dir, what);
        break;
    case MDB_READERS_FULL:
        code = xerr_set(err, XE_BUSY, "storage %s: too many concurrent readers during %s", s->dir, what);
        break;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_BAD_DBI:
        code = xerr_set(err, XE_CORRUPT, "storage %s: corrupt data during %s: %s", s->dir, what,
                        errtext(rc));
        break;
    case MDB_BAD_VALSIZE:
        code = xerr_set(err, XE_INVAL, "storage %s: key or value size not allowed during %s", s->dir, what);
        break;
    case MDB_VERSION_MISMATCH:
        code = xerr_set(err, XE_VERSION, "storage %s: %s during %s", s->dir, errtext(rc), what);
        break;
    case ENOMEM:
        code = xerr_set(err, XE_NOMEM, "storage %s: out of memory during %s", s->dir, what);
        break;
    default: {
        char full[1200];
        if (rc > 0 && disk_full(s->dir, rc, full, sizeof full))
            code = xerr_set(err, XE_IO, "storage %s: %s failed: %s; what was committed before is intact: "
                            "free space there (or move the data directory) and start again", s->dir, what, full);
        else
            code = xerr_set(err, XE_IO, "storage %s: %s failed: %s", s->dir, what, errtext(rc));
        break;
    }
    }
    /* MDB_DBS_FULL is refused before anything changes: the txn goes on. */
    if (t && t->write && !t->failed && rc != MDB_DBS_FULL) t->failed = code;
    return code;
}

static int check_txn(store_txn *t, int write, xerr *err)
{
    if (!t) return xerr_set(err, XE_INVAL, "storage: no transaction");
    if (write && !t->write) return xerr_set(err, XE_INVAL, "storage %s: write in a read-only transaction", t->s->dir);
    if (t->failed)
        return xerr_set(err, t->failed, "storage %s: the transaction already failed; abort it", t->s->dir);
    return 0;
}

/* ------------------------------------------------------------------ map growth */

static size_t page_round_up(size_t n, size_t pg)
{
    return (n + pg - 1) / pg * pg;
}

/* Current map size and bytes in use (high-water mark of pages). */
static void map_usage(store *s, size_t *map, size_t *used)
{
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    *map = info.me_mapsize;
    *used = ((size_t)info.me_last_pgno + 1) * s->pagesize;
}

/* With s->mu held and no transaction open: apply a requested growth, and grow
 * ahead of need when the map is 3/4 used.  A failed growth is dropped (the map
 * stays as it was) so that nothing waits for it; the next MAP_FULL asks again
 * and reports it. */
static void grow_locked(store *s)
{
    if (s->active != 0) return;
    size_t map, used;
    map_usage(s, &map, &used);
    size_t target = s->grow_to;
    if (used / 3 > map / 4 && map < s->map_max) target = target > map * 2 ? target : map * 2;
    if (target > s->map_max) target = s->map_max;
    if (target > map) mdb_env_set_mapsize(s->env, target);
    if (s->grow_to) {
        s->grow_to = 0;
        pthread_cond_broadcast(&s->grown);
    }
}

/* After a MAP_FULL (the txn is already ended): ask for a bigger map, grow now
 * if nothing else is open.  Returns XE_FULL with a message; *grown says whether
 * a retry can succeed now. */
static int map_full(store *s, size_t txn_bytes, int *grown, xerr *err)
{
    *grown = 0;
    pthread_mutex_lock(&s->mu);
    size_t map, used;
    map_usage(s, &map, &used);
    if (map >= s->map_max) {
        pthread_mutex_unlock(&s->mu);
        return xerr_set(err, XE_FULL, "storage %s: map full at its maximum of %zu MiB (map_max); "
                        "trim stream logs or raise map_max", s->dir, map / MIB);
    }
    size_t target = map * 2;
    while (target < used + 2 * txn_bytes + MIB && target < s->map_max) target *= 2;
    if (target > s->map_max) target = s->map_max;
    if (target > s->grow_to) s->grow_to = target;
    int others = s->active;
    grow_locked(s);
    map_usage(s, &map, &used);
    pthread_mutex_unlock(&s->mu);
    if (map >= target) {
        *grown = 1;
        return xerr_set(err, XE_FULL, "storage %s: map was full; grown to %zu MiB, redo the transaction",
                        s->dir, map / MIB);
    }
    if (others)
        return xerr_set(err, XE_FULL, "storage %s: map full at %zu MiB; it grows to %zu MiB once the %d "
                        "open transaction(s) end, then redo the transaction", s->dir, map / MIB,
                        target / MIB, others);
    return xerr_set(err, XE_FULL, "storage %s: map full at %zu MiB and could not grow to %zu MiB",
                    s->dir, map / MIB, target / MIB);
}

/* ------------------------------------------------------------------ transactions */

/* ms milliseconds from now, for pthread_cond_timedwait. */
static struct timespec deadline(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += ms % 1000 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* One LMDB txn fewer; the last one out applies a pending growth. */
static void active_dec_locked(store *s)
{
    s->active--;
    if (s->active == 0 && s->grow_to) grow_locked(s);
}

static void txn_release(store_txn *t)
{
    store *s = t->s;
    for (logent *e = t->created, *n; e; e = n) {
        n = e->next;
        free(e);
    }
    pthread_mutex_lock(&s->mu);
    active_dec_locked(s);
    if (!s->spare) {
        s->spare = t;
        t = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    free(t);
}

int store_begin(store *s, int write, store_txn **out, xerr *err)
{
    *out = NULL;
    pthread_mutex_lock(&s->mu);
    /* A pending growth waits for every open txn to end; hold new ones back a
     * little so that a stream of overlapping readers cannot starve it.  The
     * wait is bounded: the thread may itself hold one of the open txns. */
    if (s->grow_to && s->active) {
        struct timespec until = deadline(200);
        while (s->grow_to && s->active && pthread_cond_timedwait(&s->grown, &s->mu, &until) == 0) {}
    }
    store_txn *t = s->spare;
    s->spare = NULL;
    if (write) grow_locked(s);
    s->active++;
    MDB_txn *txn = NULL;
    int rc = 0;
    /* A reader begins under the mutex so that it cannot slip between a commit
     * that opened a log and the publication of that log's handle.  A writer
     * may wait for LMDB's writer lock, so it begins outside. */
    if (!write) rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    pthread_mutex_unlock(&s->mu);
    if (write) rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (!t) t = malloc(sizeof *t);
    if (!t) {
        if (!rc) mdb_txn_abort(txn);
        rc = ENOMEM;
    }
    if (t) {
        /* Everything but the key buffer. */
        memset(t, 0, offsetof(store_txn, kbuf));
        t->s = s;
        t->txn = txn;
        t->write = write;
    }
    if (rc) {
        int code = lmdb_err(s, NULL, err, rc, "begin");
        if (t) txn_release(t);
        else {
            pthread_mutex_lock(&s->mu);
            active_dec_locked(s);
            pthread_mutex_unlock(&s->mu);
        }
        return code;
    }
    *out = t;
    return 0;
}

void store_abort(store_txn *t)
{
    if (!t) return;
    mdb_txn_abort(t->txn);
    txn_release(t);
}

/* Commit, or end a failed txn; *grown tells store_write whether to retry. */
static int commit(store_txn *t, int *grown, xerr *err)
{
    store *s = t->s;
    *grown = 0;
    if (t->failed) {
        int full = t->map_full, code = t->failed;
        size_t bytes = t->bytes;
        store_abort(t);
        if (full) return map_full(s, bytes, grown, err);
        return xerr_set(err, code, "storage %s: transaction aborted after an earlier error", s->dir);
    }
    if (!t->write) {
        store_abort(t);
        return 0;
    }
    int rc;
    if (t->created) {
        pthread_mutex_lock(&s->mu);
        rc = mdb_txn_commit(t->txn);
        if (!rc) {
            logent *e = t->created;
            while (e) {
                logent *n = e->next;
                e->next = s->logs;
                s->logs = e;
                e = n;
            }
            t->created = NULL;
        }
        pthread_mutex_unlock(&s->mu);
    } else {
        rc = mdb_txn_commit(t->txn);
    }
    size_t bytes = t->bytes;
    txn_release(t); /* mdb_txn_commit ended the LMDB txn, also on failure */
    if (rc == MDB_MAP_FULL) return map_full(s, bytes, grown, err);
    if (rc) return lmdb_err(s, NULL, err, rc, "commit");
    return 0;
}

size_t store_txn_bytes(const store_txn *t) { return t ? t->bytes : 0; }

int store_commit(store_txn *t, xerr *err)
{
    if (!t) return xerr_set(err, XE_INVAL, "storage: no transaction");
    int grown;
    return commit(t, &grown, err);
}

/* Wait (bounded) until no growth is pending; returns the map size then. */
static size_t wait_growth(store *s, long ms)
{
    struct timespec until = deadline(ms);
    size_t map, used;
    pthread_mutex_lock(&s->mu);
    while (s->grow_to && pthread_cond_timedwait(&s->grown, &s->mu, &until) == 0) {}
    map_usage(s, &map, &used);
    pthread_mutex_unlock(&s->mu);
    return map;
}

int store_write(store *s, store_write_fn fn, void *ctx, xerr *err)
{
    for (int attempt = 0;; attempt++) {
        store_txn *t;
        int grown = 0;
        int rc = store_begin(s, 1, &t, err);
        if (rc < 0) return rc;
        size_t before, used;
        map_usage(s, &before, &used); /* stable: no growth while t is open */
        rc = fn(ctx, t, err);
        if (rc < 0 && !t->map_full) {
            store_abort(t);
            return rc;
        }
        /* A map-full fn failure left t failed: commit aborts it and grows. */
        rc = commit(t, &grown, err);
        if (rc == 0) return 0;
        if (rc != XE_FULL || attempt >= 64) return rc;
        /* Not grown: other transactions were open and the growth waits for
         * them to end.  Readers are short; give them half a second. */
        if (!grown && wait_growth(s, 500) <= before) return rc;
    }
}

static void *syncer_main(void *arg)
{
    store *s = arg;
    int fd = -1;
    mdb_env_get_fd(s->env, &fd);
    pthread_mutex_lock(&s->smu);
    for (;;) {
        while (!s->sync_busy && !s->sync_quit) pthread_cond_wait(&s->scv, &s->smu);
        if (!s->sync_busy) break; /* quit, nothing asked for */
        pthread_mutex_unlock(&s->smu);
        int rc = fdatasync(fd) ? errno : 0;
        pthread_mutex_lock(&s->smu);
        if (rc && !s->sync_errno) s->sync_errno = rc;
        s->sync_busy = 0;
        pthread_cond_broadcast(&s->scv);
    }
    pthread_mutex_unlock(&s->smu);
    return NULL;
}

/* Wait for the background sync, if one runs; its error, once. */
static int sync_wait(store *s, xerr *err)
{
    if (!s->syncer_up) return 0;
    pthread_mutex_lock(&s->smu);
    while (s->sync_busy) pthread_cond_wait(&s->scv, &s->smu);
    int e = s->sync_errno;
    s->sync_errno = 0;
    pthread_mutex_unlock(&s->smu);
    char full[1200];
    if (e && disk_full(s->dir, e, full, sizeof full))
        return xerr_set(err, XE_IO, "storage %s: syncing to disk: %s", s->dir, full);
    return e ? xerr_set(err, XE_IO, "storage %s: syncing to disk: %s", s->dir, strerror(e)) : 0;
}

int store_sync(store *s, xerr *err)
{
    int rc = sync_wait(s, err);
    if (rc) return rc;
    rc = mdb_env_sync(s->env, 1);
    return rc ? lmdb_err(s, NULL, err, rc, "sync") : 0;
}

int store_sync_start(store *s, xerr *err)
{
    int rc = sync_wait(s, err);
    if (rc) return rc;
    if (!s->syncer_up) {
        if ((rc = pthread_create(&s->syncer, NULL, syncer_main, s)))
            return store_sync(s, err); /* no thread: sync here */
        s->syncer_up = 1;
    }
    pthread_mutex_lock(&s->smu);
    s->sync_busy = 1;
    pthread_cond_broadcast(&s->scv);
    pthread_mutex_unlock(&s->smu);
    return 0;
}

/* ------------------------------------------------------------------ catalog and meta */

static MDB_dbi kv_dbi(store *s, store_kv db)
{
    return db == STORE_META ? s->meta : s->catalog;
}

static int kv_key(store_txn *t, const char *key, MDB_val *k, xerr *err)
{
    size_t n = strlen(key);
    if (n == 0 || n > (size_t)t->s->maxkey)
        return xerr_set(err, XE_INVAL, "storage: key length %zu outside 1..%d", n, t->s->maxkey);
    k->mv_data = (void *)key;
    k->mv_size = n;
    return 0;
}

static int reserved(store_kv db, const char *key)
{
    return db == STORE_META && strncmp(key, META_RESERVED, sizeof META_RESERVED - 1) == 0;
}

int store_kv_put(store_txn *t, store_kv db, const char *key, const void *val, size_t n, xerr *err)
{
    MDB_val k, v = {n, (void *)val};
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = kv_key(t, key, &k, err)) < 0) return rc;
    if (reserved(db, key))
        return xerr_set(err, XE_INVAL, "storage: meta keys starting with '%s' are reserved", META_RESERVED);
    rc = mdb_put(t->txn, kv_dbi(t->s, db), &k, &v, 0);
    if (rc) return lmdb_err(t->s, t, err, rc, "put");
    t->bytes += k.mv_size + n;
    return 0;
}

/* Copy a value out of LMDB's memory into a caller's buffer. */
static int copy_out(sbuf *out, const MDB_val *v, xerr *err)
{
    sbuf_reset(out);
    if (sbuf_add(out, v->mv_data, v->mv_size) < 0)
        return xerr_set(err, XE_NOMEM, "storage: out of memory copying a %zu-byte value", v->mv_size);
    return 0;
}

int store_kv_get(store_txn *t, store_kv db, const char *key, sbuf *out, xerr *err)
{
    MDB_val k, v;
    int rc = check_txn(t, 0, err);
    if (rc < 0 || (rc = kv_key(t, key, &k, err)) < 0) return rc;
    rc = mdb_get(t->txn, kv_dbi(t->s, db), &k, &v);
    if (rc == MDB_NOTFOUND) return XE_NOTFOUND;
    if (rc) return lmdb_err(t->s, t, err, rc, "get");
    return copy_out(out, &v, err);
}

int store_kv_del(store_txn *t, store_kv db, const char *key, xerr *err)
{
    MDB_val k;
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = kv_key(t, key, &k, err)) < 0) return rc;
    if (reserved(db, key))
        return xerr_set(err, XE_INVAL, "storage: meta keys starting with '%s' are reserved", META_RESERVED);
    rc = mdb_del(t->txn, kv_dbi(t->s, db), &k, NULL);
    if (rc && rc != MDB_NOTFOUND) return lmdb_err(t->s, t, err, rc, "delete");
    return 0;
}

int store_kv_scan(store_txn *t, store_kv db, const char *prefix, store_kv_fn fn, void *ctx, xerr *err)
{
    int rc = check_txn(t, 0, err);
    if (rc < 0) return rc;
    size_t plen = strlen(prefix);
    if (plen > (size_t)t->s->maxkey) return 0;
    MDB_cursor *c;
    rc = mdb_cursor_open(t->txn, kv_dbi(t->s, db), &c);
    if (rc) return lmdb_err(t->s, t, err, rc, "cursor");
    MDB_val k = {plen, (void *)prefix}, v;
    char name[KEY_MAX + 1];
    int ret = 0;
    for (rc = mdb_cursor_get(c, &k, &v, plen ? MDB_SET_RANGE : MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0) break;
        if (k.mv_size > KEY_MAX) {
            ret = xerr_set(err, XE_CORRUPT, "storage %s: oversized key", t->s->dir);
            break;
        }
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = '\0';
        if (reserved(db, name)) continue;
        if ((ret = fn(ctx, name, v.mv_data, v.mv_size)) != 0) break;
    }
    if (rc && rc != MDB_NOTFOUND) ret = lmdb_err(t->s, t, err, rc, "scan");
    mdb_cursor_close(c);
    return ret;
}

/* ------------------------------------------------------------------ stream logs */

static int log_name_ok(store *s, const char *stream, xerr *err)
{
    size_t n = strlen(stream);
    if (n == 0 || n + sizeof META_LOG > (size_t)s->maxkey)
        return xerr_set(err, XE_INVAL, "storage: stream name length %zu outside 1..%zu", n,
                        (size_t)s->maxkey - sizeof META_LOG);
    return 0;
}

/* "store.log:<stream>" in t->kbuf. */
static MDB_val registry_key(store_txn *t, const char *stream)
{
    size_t p = sizeof META_LOG - 1, n = strlen(stream);
    memcpy(t->kbuf, META_LOG, p);
    memcpy(t->kbuf + p, stream, n);
    return (MDB_val){p + n, t->kbuf};
}

/* The log's handle: opened in this txn, or shared. */
static const logent *find_logent(store_txn *t, const char *stream)
{
    for (const logent *e = t->created; e; e = e->next)
        if (strcmp(e->name, stream) == 0) return e;
    store *s = t->s;
    const logent *found = NULL;
    pthread_mutex_lock(&s->mu);
    for (const logent *e = s->logs; e && !found; e = e->next)
        if (strcmp(e->name, stream) == 0) found = e;
    pthread_mutex_unlock(&s->mu);
    return found;
}

static void forget_log(store_txn *t, const char *stream)
{
    for (unsigned i = 0; i < t->nlogs; i++)
        if (strcmp(t->logs[i].name, stream) == 0) {
            t->logs[i] = t->logs[--t->nlogs];
            return;
        }
}

/* Find an existing log for this txn (cached after the first lookup). */
static int log_ref(store_txn *t, const char *stream, txlog **out, xerr *err)
{
    for (unsigned i = 0; i < t->nlogs; i++)
        if (strcmp(t->logs[i].name, stream) == 0) {
            *out = &t->logs[i];
            return 0;
        }
    store *s = t->s;
    int rc = log_name_ok(s, stream, err);
    if (rc < 0) return rc;
    MDB_val k = registry_key(t, stream), v;
    rc = mdb_get(t->txn, s->meta, &k, &v);
    if (rc == MDB_NOTFOUND) return xerr_set(err, XE_NOTFOUND, "storage: no log for stream '%s'", stream);
    if (rc) return lmdb_err(s, t, err, rc, "log lookup");
    if (v.mv_size != 8) return xerr_set(err, XE_CORRUPT, "storage %s: bad registry entry for log '%s'", s->dir, stream);
    const logent *e = find_logent(t, stream);
    if (!e) return xerr_set(err, XE_CORRUPT, "storage %s: log '%s' is registered but has no database", s->dir, stream);
    unsigned slot = t->nlogs < TXLOG_SLOTS ? t->nlogs++ : t->log_rr++ % TXLOG_SLOTS;
    t->logs[slot] = (txlog){.name = e->name, .dbi = e->dbi, .floor = be64_get(v.mv_data)};
    *out = &t->logs[slot];
    return 0;
}

/* A log key: be64(offset) for a record or its head, 9 bytes with LOG_TAIL
 * for its tail; 0 for anything else. */
static int log_key_ok(const MDB_val *k)
{
    return k->mv_size == 8 || (k->mv_size == 9 && ((const unsigned char *)k->mv_data)[8] == LOG_TAIL);
}

static int log_is_tail(const MDB_val *k, uint64_t off)
{
    return k->mv_size == 9 && ((const unsigned char *)k->mv_data)[8] == LOG_TAIL && be64_get(k->mv_data) == off;
}

/* Next offset: one past the last record, but never below the floor. */
static int log_next(store_txn *t, txlog *l, xerr *err)
{
    if (l->next_known) return 0;
    MDB_cursor *c;
    int rc = mdb_cursor_open(t->txn, l->dbi, &c);
    if (rc) return lmdb_err(t->s, t, err, rc, "cursor");
    MDB_val k, v;
    uint64_t next = 0;
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    if (rc == 0 && !log_key_ok(&k)) rc = MDB_CORRUPTED;
    if (rc == 0) next = be64_get(k.mv_data) + 1;
    mdb_cursor_close(c);
    if (rc && rc != MDB_NOTFOUND) return lmdb_err(t->s, t, err, rc, "log end");
    l->next = next > l->floor ? next : l->floor;
    l->next_known = 1;
    return 0;
}

static int put_floor(store_txn *t, const char *stream, uint64_t floor, xerr *err)
{
    unsigned char b[8];
    be64_put(b, floor);
    MDB_val k = registry_key(t, stream), v = {8, b};
    int rc = mdb_put(t->txn, t->s->meta, &k, &v, 0);
    return rc ? lmdb_err(t->s, t, err, rc, "log registry") : 0;
}

/* Check the txn, find the log, open a cursor on it (caller closes it). */
static int log_cursor(store_txn *t, int write, const char *stream, txlog **l, MDB_cursor **c, xerr *err)
{
    int rc = check_txn(t, write, err);
    if (rc < 0 || (rc = log_ref(t, stream, l, err)) < 0) return rc;
    rc = mdb_cursor_open(t->txn, (*l)->dbi, c);
    return rc ? lmdb_err(t->s, t, err, rc, "cursor") : 0;
}

int store_log_create(store_txn *t, const char *stream, xerr *err)
{
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = log_name_ok(t->s, stream, err)) < 0) return rc;
    store *s = t->s;
    MDB_val k = registry_key(t, stream), v;
    rc = mdb_get(t->txn, s->meta, &k, &v);
    if (rc == 0) return 0;
    if (rc != MDB_NOTFOUND) return lmdb_err(s, t, err, rc, "log lookup");
    if (!find_logent(t, stream)) {
        size_t n = strlen(stream);
        logent *e = malloc(sizeof *e + n + 1);
        if (!e) return xerr_set(err, XE_NOMEM, "storage: out of memory");
        memcpy(e->name, stream, n + 1);
        char dbname[KEY_MAX];
        snprintf(dbname, sizeof dbname, "log:%s", stream);
        rc = mdb_dbi_open(t->txn, dbname, MDB_CREATE, &e->dbi);
        if (rc) {
            free(e);
            return lmdb_err(s, t, err, rc, "log create");
        }
        e->next = t->created;
        t->created = e;
    }
    forget_log(t, stream);
    return put_floor(t, stream, 0, err);
}

int store_log_drop(store_txn *t, const char *stream, xerr *err)
{
    int rc = check_txn(t, 1, err);
    if (rc < 0) return rc;
    txlog *l;
    rc = log_ref(t, stream, &l, err);
    if (rc == XE_NOTFOUND) return 0;
    if (rc < 0) return rc;
    /* Empty the database but keep it and its handle: closing a handle is not
     * safe while other threads may read, and LMDB closes it at drop time even
     * if this txn later aborts. */
    rc = mdb_drop(t->txn, l->dbi, 0);
    if (rc) return lmdb_err(t->s, t, err, rc, "log drop");
    forget_log(t, stream);
    MDB_val k = registry_key(t, stream);
    rc = mdb_del(t->txn, t->s->meta, &k, NULL);
    return rc ? lmdb_err(t->s, t, err, rc, "log registry") : 0;
}

int store_log_append(store_txn *t, const char *stream, const void *rec, size_t n, uint64_t *offset, xerr *err)
{
    txlog *l;
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = log_ref(t, stream, &l, err)) < 0 || (rc = log_next(t, l, err)) < 0) return rc;
    /* split when the bytes past the last whole page are few (LOG_TAIL) */
    size_t ps = t->s->pagesize, head = n;
    if (n + LOG_PAGE_HDR > ps) {
        size_t whole = (n + LOG_PAGE_HDR) / ps * ps - LOG_PAGE_HDR;
        if (whole < n && n - whole <= LOG_TAIL_MAX) head = whole;
    }
    unsigned char kb[9];
    be64_put(kb, l->next);
    kb[8] = LOG_TAIL;
    MDB_val k = {8, kb}, v = {head, (void *)rec};
    rc = mdb_put(t->txn, l->dbi, &k, &v, MDB_APPEND);
    if (!rc && head < n) {
        MDB_val tk = {9, kb}, tv = {n - head, (char *)rec + head};
        rc = mdb_put(t->txn, l->dbi, &tk, &tv, MDB_APPEND);
    }
    if (rc) return lmdb_err(t->s, t, err, rc, "log append");
    t->bytes += n + 8 + (head < n ? 9 : 0);
    if (offset) *offset = l->next;
    l->next++;
    return 0;
}

int store_log_put(store_txn *t, const char *stream, uint64_t offset, const void *rec, size_t n, xerr *err)
{
    txlog *l;
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = log_ref(t, stream, &l, err)) < 0 || (rc = log_next(t, l, err)) < 0) return rc;
    if (offset < l->next) return 1; /* held already */
    /* an empty log starts where the copied one is */
    if (offset > l->next && (rc = store_log_skip(t, stream, offset, err)) < 0)
        return rc == XE_INVAL ? xerr_set(err, XE_INVAL, "log of '%s': record %llu would leave a gap after %llu", stream,
                                         (unsigned long long)offset, (unsigned long long)l->next)
                              : rc;
    return store_log_append(t, stream, rec, n, NULL, err);
}

int store_log_skip(store_txn *t, const char *stream, uint64_t at, xerr *err)
{
    txlog *l;
    uint64_t begin;
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = log_ref(t, stream, &l, err)) < 0 || (rc = log_next(t, l, err)) < 0 ||
        (rc = store_log_begin(t, stream, &begin, err)) < 0)
        return rc;
    if (begin != l->next)
        return xerr_set(err, XE_INVAL, "log of '%s' holds records: it cannot skip to %llu", stream,
                        (unsigned long long)at);
    if (at <= l->next) return 0;
    l->floor = l->next = at;
    return put_floor(t, stream, at, err);
}

int store_log_end(store_txn *t, const char *stream, uint64_t *end, xerr *err)
{
    txlog *l;
    int rc = check_txn(t, 0, err);
    if (rc < 0 || (rc = log_ref(t, stream, &l, err)) < 0 || (rc = log_next(t, l, err)) < 0) return rc;
    *end = l->next;
    return 0;
}

int store_log_begin(store_txn *t, const char *stream, uint64_t *begin, xerr *err)
{
    txlog *l;
    MDB_cursor *c;
    int rc = log_cursor(t, 0, stream, &l, &c, err);
    if (rc < 0) return rc;
    MDB_val k, v;
    rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    if (rc == 0 && k.mv_size != 8) rc = MDB_CORRUPTED;
    if (rc == 0) *begin = be64_get(k.mv_data);
    mdb_cursor_close(c);
    if (rc == MDB_NOTFOUND) return store_log_end(t, stream, begin, err);
    return rc ? lmdb_err(t->s, t, err, rc, "log begin") : 0;
}

int store_log_read(store_txn *t, const char *stream, uint64_t from, size_t max, store_log_fn fn, void *ctx,
                   xerr *err)
{
    txlog *l;
    MDB_cursor *c;
    int rc = log_cursor(t, 0, stream, &l, &c, err);
    if (rc < 0) return rc;
    unsigned char kb[8];
    be64_put(kb, from);
    MDB_val k = {8, kb}, v;
    size_t count = 0;
    int ret = 0;
    unsigned char *joined = NULL; /* a split record, head and tail */
    size_t cap = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8) { /* a tail without its head */
            rc = MDB_CORRUPTED;
            break;
        }
        uint64_t off = be64_get(k.mv_data);
        const void *p = v.mv_data;
        size_t n = v.mv_size;
        /* the record's tail, if any, is the next key; if that is another
         * record, the cursor goes back, so that the loop's MDB_NEXT (after
         * fn, whose writes may move what LMDB lent) finds it again */
        int last = 0;
        if ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == MDB_NOTFOUND) last = 1;
        else if (rc) break;
        else if (log_is_tail(&k, off)) {
            if (n + v.mv_size > cap) {
                unsigned char *b = realloc(joined, n + v.mv_size);
                if (!b) {
                    ret = xerr_set(err, XE_NOMEM, "out of memory");
                    break;
                }
                joined = b;
                cap = n + v.mv_size;
            }
            memcpy(joined, p, n);
            memcpy(joined + n, v.mv_data, v.mv_size);
            p = joined;
            n += v.mv_size;
        } else if ((rc = mdb_cursor_get(c, &k, &v, MDB_PREV)) != 0)
            break;
        rc = 0;
        if ((ret = fn(ctx, off, p, n)) != 0) break;
        if (max && ++count >= max) break;
        if (last) {
            rc = MDB_NOTFOUND;
            break;
        }
    }
    if (!ret && rc && rc != MDB_NOTFOUND) ret = lmdb_err(t->s, t, err, rc, "log read");
    free(joined);
    mdb_cursor_close(c);
    return ret;
}

int store_log_trim(store_txn *t, const char *stream, uint64_t before, xerr *err)
{
    txlog *l;
    MDB_cursor *c;
    int rc = log_cursor(t, 1, stream, &l, &c, err);
    if (rc < 0) return rc;
    if ((rc = log_next(t, l, err)) < 0) {
        mdb_cursor_close(c);
        return rc;
    }
    MDB_val k, v;
    /* After mdb_cursor_del the cursor already sits on the next record, and
     * MDB_NEXT returns that one rather than skipping it. */
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (!log_key_ok(&k)) { /* a record's tail goes with it: it has its offset */
            rc = MDB_CORRUPTED;
            break;
        }
        if (be64_get(k.mv_data) >= before) break;
        if ((rc = mdb_cursor_del(c, 0)) != 0) break;
    }
    mdb_cursor_close(c);
    if (rc && rc != MDB_NOTFOUND) return lmdb_err(t->s, t, err, rc, "log trim");
    /* Keep the next offset even when the log is now empty. */
    uint64_t floor = before < l->next ? before : l->next;
    if (floor <= l->floor) return 0;
    l->floor = floor;
    return put_floor(t, stream, floor, err);
}

/* ------------------------------------------------------------------ window state */

#define SIGN ((uint64_t)1 << 63)
#define STATE_HDR 12
enum { REC_PUT = 'P', REC_DEL = 'D', REC_RANGE = 'R' };
static int rec_entry(sbuf *b, int kind, const MDB_val *k, const MDB_val *v);
static int rec_range(sbuf *b, uint32_t task, uint64_t lo, uint64_t hi);

static MDB_dbi state_dbi(store *s, store_state_db db)
{
    return db == STORE_REPLICA ? s->replica : s->state;
}

static void state_hdr(unsigned char *b, uint32_t task, uint64_t wenc)
{
    be32_put(b, task);
    be64_put(b + 4, wenc);
}

/* (task, window end, key) in t->kbuf: no allocation on the write path. */
static int state_key(store_txn *t, uint32_t task, int64_t window_end, const void *key, size_t klen, MDB_val *k,
                     xerr *err)
{
    if (klen + STATE_HDR > (size_t)t->s->maxkey)
        return xerr_set(err, XE_INVAL, "storage: state key of %zu bytes is longer than %d", klen,
                        t->s->maxkey - STATE_HDR);
    state_hdr(t->kbuf, task, (uint64_t)window_end ^ SIGN);
    if (klen) memcpy(t->kbuf + STATE_HDR, key, klen);
    *k = (MDB_val){klen + STATE_HDR, t->kbuf};
    return 0;
}

int store_state_put(store_txn *t, store_state_db db, uint32_t task, int64_t window_end, const void *key,
                    size_t klen, const void *val, size_t vlen, xerr *err)
{
    MDB_val k, v = {vlen, (void *)val};
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = state_key(t, task, window_end, key, klen, &k, err)) < 0) return rc;
    rc = mdb_put(t->txn, state_dbi(t->s, db), &k, &v, 0);
    if (rc) return lmdb_err(t->s, t, err, rc, "state put");
    t->bytes += k.mv_size + vlen;
    if (t->rec && db == STORE_STATE && rec_entry(t->rec, REC_PUT, &k, &v)) return xerr_set(err, XE_NOMEM, "out of memory");
    return 0;
}

int store_state_get(store_txn *t, store_state_db db, uint32_t task, int64_t window_end, const void *key,
                    size_t klen, sbuf *out, xerr *err)
{
    MDB_val k, v;
    int rc = check_txn(t, 0, err);
    if (rc < 0 || (rc = state_key(t, task, window_end, key, klen, &k, err)) < 0) return rc;
    rc = mdb_get(t->txn, state_dbi(t->s, db), &k, &v);
    if (rc == MDB_NOTFOUND) return XE_NOTFOUND;
    if (rc) return lmdb_err(t->s, t, err, rc, "state get");
    return copy_out(out, &v, err);
}

int store_state_del(store_txn *t, store_state_db db, uint32_t task, int64_t window_end, const void *key,
                    size_t klen, xerr *err)
{
    MDB_val k;
    int rc = check_txn(t, 1, err);
    if (rc < 0 || (rc = state_key(t, task, window_end, key, klen, &k, err)) < 0) return rc;
    rc = mdb_del(t->txn, state_dbi(t->s, db), &k, NULL);
    if (rc && rc != MDB_NOTFOUND) return lmdb_err(t->s, t, err, rc, "state delete");
    if (t->rec && db == STORE_STATE && rec_entry(t->rec, REC_DEL, &k, NULL)) return xerr_set(err, XE_NOMEM, "out of memory");
    return 0;
}

/* Walk the entries of task with lo <= encoded window end < hi (no upper bound
 * when !has_hi), calling fn, or deleting each entry when fn is NULL. */
static int state_range(store_txn *t, store_state_db db, uint32_t task, uint64_t lo, uint64_t hi, int has_hi,
                       store_state_fn fn, void *ctx, xerr *err)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(t->txn, state_dbi(t->s, db), &c);
    if (rc) return lmdb_err(t->s, t, err, rc, "cursor");
    unsigned char start[STATE_HDR];
    state_hdr(start, task, lo);
    MDB_val k = {STATE_HDR, start}, v;
    int ret = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        const unsigned char *kp = k.mv_data;
        if (k.mv_size < STATE_HDR || be32_get(kp) != task) break;
        uint64_t wenc = be64_get(kp + 4);
        if (has_hi && wenc >= hi) break;
        if (!fn) {
            /* The cursor moves to the next entry; MDB_NEXT returns it. */
            if ((rc = mdb_cursor_del(c, 0)) != 0) break;
            continue;
        }
        ret = fn(ctx, (int64_t)(wenc ^ SIGN), kp + STATE_HDR, k.mv_size - STATE_HDR, v.mv_data, v.mv_size);
        if (ret) break;
    }
    if (rc && rc != MDB_NOTFOUND) ret = lmdb_err(t->s, t, err, rc, fn ? "state scan" : "state delete");
    mdb_cursor_close(c);
    return ret;
}

int store_state_scan(store_txn *t, store_state_db db, uint32_t task, int64_t lo, int64_t hi, store_state_fn fn,
                     void *ctx, xerr *err)
{
    int rc = check_txn(t, 0, err);
    if (rc < 0 || lo >= hi) return rc;
    return state_range(t, db, task, (uint64_t)lo ^ SIGN, (uint64_t)hi ^ SIGN, 1, fn, ctx, err);
}

int store_state_scan_at(store_txn *t, store_state_db db, uint32_t task, int64_t window_end, const void *from,
                        size_t flen, store_state_fn fn, void *ctx, xerr *err)
{
    MDB_val k, v;
    int rc = check_txn(t, 0, err);
    if (rc < 0 || (rc = state_key(t, task, window_end, from, flen, &k, err)) < 0) return rc;
    MDB_cursor *c;
    if ((rc = mdb_cursor_open(t->txn, state_dbi(t->s, db), &c))) return lmdb_err(t->s, t, err, rc, "cursor");
    unsigned char hdr[STATE_HDR];
    state_hdr(hdr, task, (uint64_t)window_end ^ SIGN);
    int ret = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < STATE_HDR || memcmp(k.mv_data, hdr, STATE_HDR)) break;
        const unsigned char *kp = k.mv_data;
        if ((ret = fn(ctx, window_end, kp + STATE_HDR, k.mv_size - STATE_HDR, v.mv_data, v.mv_size))) break;
    }
    if (rc && rc != MDB_NOTFOUND) ret = lmdb_err(t->s, t, err, rc, "state scan");
    mdb_cursor_close(c);
    return ret;
}

int store_state_delete_range(store_txn *t, store_state_db db, uint32_t task, int64_t lo, int64_t hi, xerr *err)
{
    int rc = check_txn(t, 1, err);
    if (rc < 0 || lo >= hi) return rc;
    if (t->rec && db == STORE_STATE && rec_range(t->rec, task, (uint64_t)lo ^ SIGN, (uint64_t)hi ^ SIGN))
        return xerr_set(err, XE_NOMEM, "out of memory");
    return state_range(t, db, task, (uint64_t)lo ^ SIGN, (uint64_t)hi ^ SIGN, 1, NULL, NULL, err);
}

int store_state_drop_task(store_txn *t, store_state_db db, uint32_t task, xerr *err)
{
    int rc = check_txn(t, 1, err);
    if (rc < 0) return rc;
    if (t->rec && db == STORE_STATE && rec_range(t->rec, task, 0, UINT64_MAX)) return xerr_set(err, XE_NOMEM, "out of memory");
    return state_range(t, db, task, 0, 0, 0, NULL, NULL, err);
}

/* ------------------------------------------------------------------ replication records */

void store_txn_record(store_txn *t, sbuf *rec)
{
    if (t) t->rec = rec;
}

/* 'P' or 'D', then the whole LMDB key (task, window end, key bytes) and for
 * a put the value. */
static int rec_entry(sbuf *b, int kind, const MDB_val *k, const MDB_val *v)
{
    unsigned char h[7];
    h[0] = (unsigned char)kind;
    be16_put(h + 1, (uint16_t)k->mv_size);
    be32_put(h + 3, v ? (uint32_t)v->mv_size : 0);
    if (sbuf_add(b, h, sizeof h) || sbuf_add(b, k->mv_data, k->mv_size)) return XE_NOMEM;
    return v && v->mv_size ? sbuf_add(b, v->mv_data, v->mv_size) : 0;
}

/* 'R': a range of one task's windows deleted (hi UINT64_MAX: all of them). */
static int rec_range(sbuf *b, uint32_t task, uint64_t lo, uint64_t hi)
{
    unsigned char h[21];
    h[0] = REC_RANGE;
    be32_put(h + 1, task);
    be64_put(h + 5, lo);
    be64_put(h + 13, hi);
    return sbuf_add(b, h, sizeof h);
}

size_t store_rec_size(const void *rec, size_t n)
{
    const unsigned char *p = rec;
    size_t sz = 0;
    if (n >= 21 && *p == REC_RANGE) sz = 21;
    else if (n >= 7 && (*p == REC_PUT || *p == REC_DEL)) sz = 7 + be16_get(p + 1) + (*p == REC_PUT ? be32_get(p + 3) : 0);
    return sz && sz <= n ? sz : n;
}

int store_state_apply(store_txn *t, store_state_db db, const void *rec, size_t n, xerr *err)
{
    int rc = check_txn(t, 1, err);
    if (rc < 0) return rc;
    const unsigned char *p = rec, *end = p + n;
    /* all of it is checked first: a malformed run changes nothing */
    while (p < end) {
        size_t kl = end - p >= 7 ? be16_get(p + 1) : 0;
        if (*p == REC_RANGE ? end - p < 21
                            : end - p < 7 || (*p != REC_PUT && *p != REC_DEL) || kl < STATE_HDR ||
                                  kl > (size_t)t->s->maxkey || (size_t)(end - p - 7) < kl + (*p == REC_PUT ? be32_get(p + 3) : 0))
            goto bad;
        p += store_rec_size(p, (size_t)(end - p));
    }
    p = rec;
    MDB_dbi dbi = state_dbi(t->s, db);
    while (p < end) {
        if (*p == REC_RANGE) {
            if (end - p < 21) goto bad;
            uint64_t lo = be64_get(p + 5), hi = be64_get(p + 13);
            rc = state_range(t, db, be32_get(p + 1), lo, hi, hi != UINT64_MAX, NULL, NULL, err);
            if (rc) return rc;
            p += 21;
            continue;
        }
        if (end - p < 7 || (*p != REC_PUT && *p != REC_DEL)) goto bad;
        size_t kl = be16_get(p + 1), vl = be32_get(p + 3);
        if (kl < STATE_HDR || kl > (size_t)t->s->maxkey || (size_t)(end - p - 7) < kl + (*p == REC_PUT ? vl : 0)) goto bad;
        MDB_val k = {kl, (void *)(p + 7)}, v = {vl, (void *)(p + 7 + kl)};
        if (*p == REC_PUT) {
            if ((rc = mdb_put(t->txn, dbi, &k, &v, 0))) return lmdb_err(t->s, t, err, rc, "state put");
            t->bytes += kl + vl;
            p += 7 + kl + vl;
        } else {
            if ((rc = mdb_del(t->txn, dbi, &k, NULL)) && rc != MDB_NOTFOUND) return lmdb_err(t->s, t, err, rc, "state delete");
            p += 7 + kl;
        }
    }
    return 0;
bad:
    return xerr_set(err, XE_CORRUPT, "storage: a state change record at byte %zu of %zu is malformed",
                    (size_t)(p - (const unsigned char *)rec), n);
}

typedef struct copy_ctx {
    store_txn *t;
    store_state_db to;
    uint32_t task;
    sbuf *out;
    xerr *err;
    int rc;
} copy_ctx;

static int copy_one(void *ctx, int64_t wend, const void *key, size_t klen, const void *val, size_t vlen)
{
    copy_ctx *c = ctx;
    if (c->out) {
        unsigned char h[STATE_HDR];
        state_hdr(h, c->task, (uint64_t)wend ^ SIGN);
        sbuf *b = c->out;
        unsigned char r[7];
        r[0] = REC_PUT;
        be16_put(r + 1, (uint16_t)(klen + STATE_HDR));
        be32_put(r + 3, (uint32_t)vlen);
        if (sbuf_add(b, r, 7) || sbuf_add(b, h, STATE_HDR) || sbuf_add(b, key, klen) || sbuf_add(b, val, vlen))
            c->rc = xerr_set(c->err, XE_NOMEM, "out of memory");
    } else
        c->rc = store_state_put(c->t, c->to, c->task, wend, key, klen, val, vlen, c->err);
    return c->rc ? 1 : 0;
}

int store_state_copy(store_txn *t, store_state_db from, uint32_t from_task, store_state_db to, uint32_t to_task,
                     xerr *err)
{
    int rc = check_txn(t, 1, err);
    if (rc < 0) return rc;
    copy_ctx c = {t, to, to_task, NULL, err, 0};
    rc = state_range(t, from, from_task, 0, 0, 0, copy_one, &c, err);
    return c.rc ? c.rc : rc;
}

int store_state_snapshot(store_txn *t, store_state_db db, uint32_t task, sbuf *out, xerr *err)
{
    int rc = check_txn(t, 0, err);
    if (rc < 0) return rc;
    if (rec_range(out, task, 0, UINT64_MAX)) return xerr_set(err, XE_NOMEM, "out of memory");
    copy_ctx c = {t, db, task, out, err, 0};
    rc = state_range(t, db, task, 0, 0, 0, copy_one, &c, err);
    return c.rc ? c.rc : rc;
}

/* ------------------------------------------------------------------ open and close */

static int mkdir_p(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return ENAMETOOLONG;
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) return errno;
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return errno;
    return 0;
}

/* An existing data directory, or a file of it, that group or others may
 * read (made by an older version, or by hand): said, not changed. */
static void warn_open_modes(const char *dir, const store_opts *o)
{
    static const char *files[] = {"", "data.mdb", "lock.mdb", "store.lock"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[4200], msg[8800];
        snprintf(path, sizeof path, "%s%s%s", dir, *files[i] ? "/" : "", files[i]);
        struct stat st;
        if (stat(path, &st) != 0 || !(st.st_mode & (S_IRWXG | S_IRWXO))) continue;
        if (!(*files[i] ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode))) continue; /* open says what is wrong */
        snprintf(msg, sizeof msg, "storage %s: %s %s has mode %04o, open to group or others, who can read the "
                 "stream logs and the state; chmod %s %s", dir, *files[i] ? "file" : "the data directory", path,
                 (unsigned)(st.st_mode & 07777), *files[i] ? "600" : "700", path);
        if (o->warn) o->warn(o->warn_ctx, msg);
        else fprintf(stderr, "ares: %s\n", msg);
    }
}

static int open_db(store *s, MDB_txn *txn, const char *name, int create, MDB_dbi *dbi, xerr *err)
{
    int rc = mdb_dbi_open(txn, name, create ? MDB_CREATE : 0, dbi);
    if (rc == MDB_NOTFOUND)
        return xerr_set(err, XE_CORRUPT, "storage %s: database '%s' is missing; not an Ares data directory "
                        "or damaged", s->dir, name);
    if (rc == MDB_INCOMPATIBLE)
        return xerr_set(err, XE_CORRUPT, "storage %s: '%s' is not a database; not an Ares data directory",
                        s->dir, name);
    return rc ? lmdb_err(s, NULL, err, rc, "open database") : 0;
}

/* Delete the emptied databases of dropped logs ("log:<stream>" in the main
 * database without a registry key).  Only at open, before any reader exists,
 * is closing their handles safe; this frees their max_streams slots. */
static int reap_dropped_logs(store *s, MDB_txn *txn, MDB_dbi main, xerr *err)
{
    MDB_cursor *c;
    sbuf names; /* NUL-separated; the main db cannot change under the cursor */
    sbuf_init(&names);
    int rc = mdb_cursor_open(txn, main, &c);
    if (rc) return lmdb_err(s, NULL, err, rc, "open");
    MDB_val k = {4, "log:"}, v;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 4 || memcmp(k.mv_data, "log:", 4) != 0) break;
        if (k.mv_size > KEY_MAX || memchr(k.mv_data, '\0', k.mv_size)) continue;
        if (sbuf_add(&names, k.mv_data, k.mv_size) < 0 || sbuf_addc(&names, '\0') < 0) rc = ENOMEM;
        if (rc) break;
    }
    mdb_cursor_close(c);
    int ret = rc && rc != MDB_NOTFOUND ? lmdb_err(s, NULL, err, rc, "open") : 0;
    for (size_t at = 0; !ret && at < names.len; at += strlen(names.p + at) + 1) {
        const char *dbname = names.p + at;
        unsigned char reg[KEY_MAX + 16];
        size_t n = strlen(dbname + 4);
        memcpy(reg, META_LOG, sizeof META_LOG - 1);
        memcpy(reg + sizeof META_LOG - 1, dbname + 4, n);
        MDB_val rk = {sizeof META_LOG - 1 + n, reg};
        MDB_dbi dbi;
        rc = mdb_get(txn, s->meta, &rk, &v);
        if (rc == 0) continue;
        if (rc == MDB_NOTFOUND && (rc = mdb_dbi_open(txn, dbname, 0, &dbi)) == 0) rc = mdb_drop(txn, dbi, 1);
        if (rc) ret = lmdb_err(s, NULL, err, rc, "delete a dropped log");
    }
    sbuf_fini(&names);
    return ret;
}

/* Create the databases of a new environment, or check an existing one and
 * open its logs; runs in the write txn of store_open. */
static int open_dbs(store *s, MDB_txn *txn, xerr *err)
{
    MDB_dbi main;
    MDB_stat st;
    int rc = mdb_dbi_open(txn, NULL, 0, &main);
    if (!rc) rc = mdb_stat(txn, main, &st);
    if (rc) return lmdb_err(s, NULL, err, rc, "open");
    int fresh = st.ms_entries == 0;
    if ((rc = open_db(s, txn, "meta", fresh, &s->meta, err)) < 0) return rc;

    unsigned char vb[4];
    MDB_val k = {sizeof META_VERSION - 1, META_VERSION}, v = {4, vb};
    if (fresh) {
        be32_put(vb, STORE_FORMAT_VERSION);
        if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0) return lmdb_err(s, NULL, err, rc, "create");
    } else {
        rc = mdb_get(txn, s->meta, &k, &v);
        if (rc == MDB_NOTFOUND || (!rc && v.mv_size != 4))
            return xerr_set(err, XE_CORRUPT, "storage %s: no format version in meta; not an Ares data "
                            "directory or damaged", s->dir);
        if (rc) return lmdb_err(s, NULL, err, rc, "open");
        uint32_t ver = be32_get(v.mv_data);
        if (ver == 2) { /* version 3 only adds split log records: upgraded, so older builds refuse it */
            be32_put(vb, STORE_FORMAT_VERSION);
            v = (MDB_val){4, vb};
            if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0) return lmdb_err(s, NULL, err, rc, "open");
        } else if (ver != STORE_FORMAT_VERSION)
            return xerr_set(err, XE_VERSION, "storage %s: data directory has storage format version %u, "
                            "this build reads version %d; use a matching build or a new directory",
                            s->dir, ver, STORE_FORMAT_VERSION);
    }
    if ((rc = open_db(s, txn, "catalog", fresh, &s->catalog, err)) < 0 ||
        (rc = open_db(s, txn, "state", fresh, &s->state, err)) < 0 ||
        (rc = open_db(s, txn, "replica", fresh, &s->replica, err)) < 0)
        return rc;

    if ((rc = reap_dropped_logs(s, txn, main, err)) < 0) return rc;

    /* Open every registered log once. */
    MDB_cursor *c;
    if ((rc = mdb_cursor_open(txn, s->meta, &c)) != 0) return lmdb_err(s, NULL, err, rc, "open");
    size_t plen = sizeof META_LOG - 1;
    k = (MDB_val){plen, META_LOG};
    int ret = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0 && ret == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size <= plen || memcmp(k.mv_data, META_LOG, plen) != 0) break;
        size_t n = k.mv_size - plen;
        logent *e = malloc(sizeof *e + n + 1);
        if (!e) {
            ret = xerr_set(err, XE_NOMEM, "storage: out of memory");
            break;
        }
        memcpy(e->name, (char *)k.mv_data + plen, n);
        e->name[n] = '\0';
        char dbname[KEY_MAX + 8];
        snprintf(dbname, sizeof dbname, "log:%s", e->name);
        if ((ret = open_db(s, txn, dbname, 0, &e->dbi, err)) < 0) {
            free(e);
            break;
        }
        e->next = s->logs;
        s->logs = e;
    }
    if (!ret && rc && rc != MDB_NOTFOUND) ret = lmdb_err(s, NULL, err, rc, "open");
    mdb_cursor_close(c);
    return ret;
}

/* ------------------------------------------------------------------ integrity at open */

/* LMDB trusts its file: a page cut off or overwritten can make it read past
 * the map (SIGBUS), trip an assertion, or return garbage.  Before the engine
 * touches an existing environment, a child process walks every page of
 * every database, read-only and without the lock file; if the child dies or
 * LMDB reports damage, the directory is refused with a clear error instead
 * of a crash.  The walk reads the whole file once (about a second per GB). */
static int walk_db(MDB_txn *txn, MDB_dbi dbi)
{
    MDB_cursor *c;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, dbi, &c);
    if (rc) return rc;
    unsigned long long sum = 0;
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
        /* touch every byte so that pages past the end fault here, in the child */
        for (size_t i = 0; i < v.mv_size; i += 512) sum += ((const unsigned char *)v.mv_data)[i];
        for (size_t i = 0; i < k.mv_size; i += 64) sum += ((const unsigned char *)k.mv_data)[i];
    }
    mdb_cursor_close(c);
    (void)sum;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int verify_child(const char *dir)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi main_dbi;
    if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 4096)) return 2;
    /* no lock file: the parent holds store.lock and has not opened the environment yet */
    if (mdb_env_open(env, dir, MDB_NOLOCK | MDB_NOTLS, 0600)) return 3; /* the parent's open says why */
    if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) || mdb_dbi_open(txn, NULL, 0, &main_dbi)) return 1;
    MDB_cursor *c;
    MDB_val k, v;
    if (mdb_cursor_open(txn, main_dbi, &c)) return 1;
    int rc;
    char name[512];
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
        if (k.mv_size == 0 || k.mv_size >= sizeof name) continue;
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = 0;
        MDB_dbi dbi;
        if (mdb_dbi_open(txn, name, 0, &dbi)) continue; /* not a named database */
        if (walk_db(txn, dbi)) return 1;
    }
    if (rc != MDB_NOTFOUND) return 1;
    mdb_cursor_close(c);
    if (walk_db(txn, 0)) return 1; /* the free list (FREE_DBI): commits read it */
    mdb_txn_abort(txn);
    /* A trial write at both ends of every database, then abort: writes touch
     * branch pages and the free list in ways a read walk does not.  Nothing
     * reaches the file. */
    if (mdb_txn_begin(env, NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &main_dbi) ||
        mdb_cursor_open(txn, main_dbi, &c))
        return 1;
    MDB_dbi dbis[256];
    int ndbis = 0;
    while (ndbis < 256 && (rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
        if (k.mv_size == 0 || k.mv_size >= sizeof name) continue;
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = 0;
        if (mdb_dbi_open(txn, name, 0, &dbis[ndbis]) == 0) ndbis++;
    }
    mdb_cursor_close(c);
    static const unsigned char lo[1] = {0}, hi[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
    unsigned char val[64] = {0};
    for (int i = 0; i < ndbis; i++) {
        MDB_val a = {sizeof lo, (void *)lo}, b = {sizeof hi, (void *)hi}, d = {sizeof val, val};
        if ((rc = mdb_put(txn, dbis[i], &a, &d, 0)) && rc != MDB_MAP_FULL) return 1;
        if ((rc = mdb_put(txn, dbis[i], &b, &d, 0)) && rc != MDB_MAP_FULL) return 1;
    }
    mdb_txn_abort(txn);
    return 0;
}

static int verify_environment(const char *dir, xerr *err)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(path, &st) != 0 || st.st_size == 0) return 0; /* a new directory */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 0; /* cannot check: go on, as LMDB alone would */
    if (pid == 0) _exit(verify_child(dir));
    /* A damaged page can also send a walk round in circles: give it a
     * deadline that grows with the file (5 s + 1 s per 64 MB). */
    int status = 0;
    uint64_t deadline = clock_mono_ns() + (5000ull + (uint64_t)st.st_size / (64u << 20) * 1000ull) * 1000000ull;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return 0;
        if (clock_mono_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return xerr_set(err, XE_CORRUPT, "storage %s: data.mdb is damaged: reading its pages did not finish "
                                             "(a loop in its page tree); restore the directory from a copy",
                            dir);
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    if (WIFSIGNALED(status))
        return xerr_set(err, XE_CORRUPT, "storage %s: data.mdb is damaged: reading its pages failed (signal %d); "
                                         "restore the directory from a copy",
                        dir, WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
        return xerr_set(err, XE_CORRUPT, "storage %s: data.mdb is damaged: LMDB found a bad page; restore the "
                                         "directory from a copy",
                        dir);
    return 0;
}

/* LMDB aborts the process after an assertion; it only gets there on a page
 * the open-time walk could not catch.  Say what happened and exit with an
 * error status instead: nothing uncommitted reaches the file. */
static void on_lmdb_assert(MDB_env *env, const char *msg)
{
    const char *path = NULL;
    mdb_env_get_path(env, &path);
    fprintf(stderr, "error: storage %s is damaged (LMDB: %s); restore the directory from a copy\n",
            path ? path : "?", msg);
    _exit(1);
}

int store_open(const char *dir, const store_opts *opts, store **out, xerr *err)
{
    *out = NULL;
    store_opts o = opts ? *opts : (store_opts){0};
    store *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = strdup(dir))) {
        free(s);
        return xerr_set(err, XE_NOMEM, "storage: out of memory");
    }
    s->lockfd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->grown, NULL);
    pthread_mutex_init(&s->smu, NULL);
    pthread_cond_init(&s->scv, NULL);
    long pg = sysconf(_SC_PAGESIZE);
    s->pagesize = pg > 0 ? (size_t)pg : 4096;
    size_t map = page_round_up(o.map_size ? o.map_size : DEFAULT_MAP, s->pagesize);
    s->map_max = (o.map_max ? o.map_max : DEFAULT_MAP_MAX) / s->pagesize * s->pagesize;
    if (s->map_max < map) s->map_max = map;
    int streams = o.max_streams > 0 ? o.max_streams : DEFAULT_STREAMS;

    int rc, code;
    MDB_txn *txn = NULL;
    if ((rc = mkdir_p(dir)) != 0) {
        code = xerr_set(err, XE_IO, "storage %s: cannot create the data directory: %s", dir, strerror(rc));
        goto fail;
    }
    warn_open_modes(dir, &o);
    /* One engine per directory: LMDB allows several processes, but map growth
     * and log offsets assume this process is the only writer, and opening an
     * environment twice in one process breaks LMDB's locks. */
    char lockpath[4096];
    snprintf(lockpath, sizeof lockpath, "%s/store.lock", dir);
    s->lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lockfd < 0) {
        code = xerr_set(err, XE_IO, "storage %s: cannot open %s: %s", dir, lockpath, strerror(errno));
        goto fail;
    }
    if (flock(s->lockfd, LOCK_EX | LOCK_NB) != 0) {
        code = errno == EWOULDBLOCK
                   ? xerr_set(err, XE_BUSY, "storage %s: the data directory is in use by another engine", dir)
                   : xerr_set(err, XE_IO, "storage %s: cannot lock %s: %s", dir, lockpath, strerror(errno));
        goto fail;
    }

    if ((rc = mdb_env_create(&s->env)) != 0 || (rc = mdb_env_set_maxdbs(s->env, CORE_DBS + streams)) != 0 ||
        (rc = mdb_env_set_mapsize(s->env, map)) != 0) {
        code = lmdb_err(s, NULL, err, rc, "create the environment");
        goto fail;
    }
    /* MDB_NOSYNC: commits reach the OS page cache (safe against kill -9) and
     * store_sync() flushes them once per epoch.  Not MDB_WRITEMAP, so a crash
     * cannot leave a torn page in the file.  MDB_NORDAHEAD: a fault on the
     * map reads its page, not the readahead window; a process whose memory
     * is capped below its data otherwise re-reads the same pages without end
     * (docs/architecture.md, "Memory"). */
    mdb_env_set_assert(s->env, on_lmdb_assert);
    if ((code = verify_environment(dir, err)) < 0) goto fail;
    rc = mdb_env_open(s->env, dir, MDB_NOTLS | MDB_NOSYNC | MDB_NORDAHEAD, 0600);
    if (rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) {
        code = xerr_set(err, XE_CORRUPT, "storage %s: data.mdb is not an LMDB environment or is corrupt (%s)",
                        dir, errtext(rc));
        goto fail;
    }
    if (rc == MDB_VERSION_MISMATCH) {
        code = xerr_set(err, XE_VERSION, "storage %s: written by an incompatible LMDB version (%s)", dir,
                        errtext(rc));
        goto fail;
    }
    if (rc) {
        code = lmdb_err(s, NULL, err, rc, "open the environment");
        goto fail;
    }
    MDB_stat ms;
    if (mdb_env_stat(s->env, &ms) == 0) s->pagesize = ms.ms_psize;
    s->maxkey = mdb_env_get_maxkeysize(s->env);
    if (s->maxkey > KEY_MAX) s->maxkey = KEY_MAX;
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0) {
        code = lmdb_err(s, NULL, err, rc, "open");
        goto fail;
    }
    if ((code = open_dbs(s, txn, err)) < 0) goto fail;
    rc = mdb_txn_commit(txn);
    txn = NULL;
    if (rc) {
        code = lmdb_err(s, NULL, err, rc, "open");
        goto fail;
    }
    *out = s;
    return 0;

fail:
    if (txn) mdb_txn_abort(txn);
    store_close(s);
    return code;
}

void store_close(store *s)
{
    if (!s) return;
    assert(s->active == 0);
    if (s->syncer_up) { /* the last sync finishes: what was committed is on disk */
        pthread_mutex_lock(&s->smu);
        s->sync_quit = 1;
        pthread_cond_broadcast(&s->scv);
        pthread_mutex_unlock(&s->smu);
        pthread_join(s->syncer, NULL);
        if (s->sync_errno) fprintf(stderr, "ares: %s: syncing to disk: %s\n", s->dir, strerror(s->sync_errno));
    }
    if (s->env) mdb_env_close(s->env);
    for (logent *e = s->logs, *n; e; e = n) {
        n = e->next;
        free(e);
    }
    free(s->spare);
    if (s->lockfd >= 0) close(s->lockfd);
    pthread_cond_destroy(&s->grown);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->scv);
    pthread_mutex_destroy(&s->smu);
    free(s->dir);
    free(s);
}

const char *store_dir(const store *s)
{
    return s->dir;
}

int store_get_stats(store *s, store_stats *st, xerr *err)
{
    MDB_envinfo info;
    MDB_stat ms;
    int rc = mdb_env_info(s->env, &info);
    if (!rc) rc = mdb_env_stat(s->env, &ms);
    if (rc) return lmdb_err(s, NULL, err, rc, "stats");
    st->map_size = info.me_mapsize;
    st->used_bytes = ((size_t)info.me_last_pgno + 1) * ms.ms_psize;
    st->last_txn = info.me_last_txnid;
    return 0;
}
