/*
 * log.c: the stream logs of storage.h (store_log_*).  Each log is a named
 * database "log:<stream>" of be64 offsets; its registry entry in meta holds
 * its offset floor.  A transaction caches what it looked up of a log
 * (txlog), so appends skip the lookups.
 *
 * Invariants:
 *  - A log exists iff its registry key "store.log:<stream>" is in meta; the
 *    value is the offset floor (the next offset survives trimming the log
 *    empty).  Its named database "log:<stream>" is opened once and the handle
 *    is kept until store_close, also after a drop (the dropped database is
 *    emptied, not deleted, so no handle is ever closed under a reader).
 *  - A handle opened here (store_log_create) goes on t->created and becomes
 *    shared only when env.c commits the txn (env.c's invariants say how a
 *    reader never sees the new snapshot without the handle).
 *  - At open (log_open_all, called by env.c) dropped logs' databases are
 *    deleted and every registered log is opened once.
 */
#include "storage/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------------------------ at open (env.c's store_open) */

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

int log_open_all(store *s, MDB_txn *txn, MDB_dbi main, xerr *err)
{
    int rc;
    if ((rc = reap_dropped_logs(s, txn, main, err)) < 0) return rc;

    /* Open every registered log once. */
    MDB_cursor *c;
    if ((rc = mdb_cursor_open(txn, s->meta, &c)) != 0) return lmdb_err(s, NULL, err, rc, "open");
    size_t plen = sizeof META_LOG - 1;
    MDB_val k = {plen, META_LOG}, v;
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
