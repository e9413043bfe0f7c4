/*
 * state.c: window state of storage.h (store_state_*), in the state and
 * replica databases, keyed (be32 task, be64 window end ^ sign, key bytes)
 * so that a cursor walks one task's windows in time order; the write path
 * allocates nothing (keys are built in the txn's key buffer).  While a
 * recorder is set on a txn (store_txn_record) every change to STORE_STATE
 * is also appended to it as a self-describing record, which
 * store_state_apply replays on a replica.  A snapshot of one task is made
 * of the same records; a copy puts a task's entries under another task id.
 */
#include "storage/internal.h"

#include <string.h>

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

sbuf *store_txn_recording(const store_txn *t) { return t ? t->rec : NULL; }

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
