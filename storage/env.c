/*
 * env.c: the LMDB environment behind storage.h.  One environment per
 * engine, opened once with every named database it needs; handles are cached
 * for the life of the store.  Writes come from one thread at a time (LMDB's
 * writer lock serialises them); read transactions may run on any thread.
 *
 * This file holds what the other files stand on (internal.h has the
 * layers): errors, map growth, transactions, sync, open and close, stats.  The
 * catalog and meta records are kv.c's, stream logs log.c's, window state
 * state.c's, and the integrity walk at open verify.c's.
 *
 * Invariants:
 *  - Every LMDB transaction of this process is counted in s->active, under
 *    s->mu.  mdb_env_set_mapsize() runs only with s->mu held and s->active == 0,
 *    because LMDB forbids resizing the map while this process has a
 *    transaction open.  Growth is asked for when a write hits MDB_MAP_FULL
 *    (the whole transaction is then lost and must be redone) and done by
 *    whoever ends the last open transaction, or at the next write begin; a
 *    write begin also grows ahead of need when the map is three quarters used.
 *  - A handle opened in a write transaction becomes shared only once that
 *    transaction commits (LMDB closes it on abort).  Such a commit runs with
 *    s->mu held and read transactions begin under s->mu, so a reader sees
 *    either the old snapshot or the new handle, never the snapshot alone.
 *    (log.c's store_log_create puts a new handle on t->created.)
 */
#include "storage/internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define DEFAULT_MAP (256 * MIB)
#define DEFAULT_MAP_MAX ((size_t)64 << 30)
#define DEFAULT_STREAMS 128
#define CORE_DBS 4          /* catalog, meta, state, replica */

/* ------------------------------------------------------------------ errors */

static const char *errtext(int rc)
{
    return rc > 0 ? strerror(rc) : mdb_strerror(rc);
}

/* Map an LMDB or errno code to an XE_ code and message; in a write txn it
 * also marks the txn failed, since LMDB refuses it after most errors. */
int lmdb_err(store *s, store_txn *t, xerr *err, int rc, const char *what)
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

int check_txn(store_txn *t, int write, xerr *err)
{
    if (!t) return xerr_set(err, XE_INVAL, "storage: no transaction");
    if (write && !t->write) return xerr_set(err, XE_INVAL, "storage %s: write in a read-only transaction", t->s->dir);
    if (t->failed)
        return xerr_set(err, t->failed, "storage %s: the transaction already failed; abort it", t->s->dir);
    return 0;
}

/* Copy a value out of LMDB's memory into a caller's buffer. */
int copy_out(sbuf *out, const MDB_val *v, xerr *err)
{
    sbuf_reset(out);
    if (sbuf_add(out, v->mv_data, v->mv_size) < 0)
        return xerr_set(err, XE_NOMEM, "storage: out of memory copying a %zu-byte value", v->mv_size);
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

int open_db(store *s, MDB_txn *txn, const char *name, int create, MDB_dbi *dbi, xerr *err)
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

    /* The logs: the one call from this file into log.c (internal.h says why). */
    return log_open_all(s, txn, main, err);
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
