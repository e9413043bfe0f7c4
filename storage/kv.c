/*
 * kv.c: the catalog and meta records of storage.h (store_kv_*): names to
 * bytes, in the catalog and meta databases opened by env.c.  Meta keys
 * starting with "store." are the module's own (the format version, log.c's
 * registry): put and del refuse them and scan skips them.
 */
#include "storage/internal.h"

#include <string.h>

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
