/*
 * verify.c: the integrity check of an existing data file at open.  env.c's
 * store_open calls verify_environment before LMDB opens the environment;
 * this file calls nothing else of the module (it is the bottom layer).
 *
 * LMDB trusts its file: a page cut off or overwritten can make it read past
 * the map (SIGBUS), trip an assertion, or return garbage.  Before the engine
 * touches an existing environment, a child process walks every page of
 * every database, read-only and without the lock file; if the child dies or
 * LMDB reports damage, the directory is refused with a clear error instead
 * of a crash.  The walk reads the whole file once (about a second per GB).
 */
#include "storage/internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

int verify_environment(const char *dir, xerr *err)
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
