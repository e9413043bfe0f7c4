/*
 * Unit tests for the coordinator's decisions (cluster/coord_*.c), without a
 * loop, sockets or LMDB: a coordinator node with hand-made members (their
 * connections are bare `cs` structs marked ready), and the I/O below the
 * coordinator replaced with -Wl,--wrap= (cluster/module.mk): catalog writes
 * (engine_host_put/del/scan), frames (cs_send, cs_send_msg), the tick timer
 * (node_tick_in) and deployment on this node (node_deploy/undeploy).  The
 * wrappers record what the coordinator did; the tests check:
 *   - catalog changes: SET checked before it is applied, records written
 *     to our LMDB and to a live standby only, the stream record's format;
 *   - failure grouping: deaths within the settle time are one event, with
 *     the shorter settle for a closed connection; a standby's death or a
 *     second report of a dead node is no event;
 *   - redeploy or promote: a displaced stateful task goes to its live
 *     replica's node (ft = replica) even where the game prefers another;
 *     without a replica to take over the game decides; a query that lost
 *     tasks is redeployed under a new id, and one whose source lost its
 *     stream's home is not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

/* ------------------------------------------------------------ the wrapped I/O */

#define LOGN 64
static struct { char key[128], val[512]; } puts_[LOGN];
static int nputs;
static char dels[LOGN][128];
static int ndels;
static struct { cs *to; int type; } sends[LOGN];
static int nsends;
static uint32_t deployed[LOGN], undeployed[LOGN];
static int ndeployed, nundeployed;

static void log_reset(void) { nputs = ndels = nsends = ndeployed = nundeployed = 0; }

int __wrap_engine_host_put(engine *e, const char *key, const void *v, size_t n, xerr *err);
int __wrap_engine_host_put(engine *e, const char *key, const void *v, size_t n, xerr *err)
{
    (void)e, (void)err;
    if (nputs < LOGN) {
        snprintf(puts_[nputs].key, sizeof puts_[nputs].key, "%s", key);
        snprintf(puts_[nputs].val, sizeof puts_[nputs].val, "%.*s", (int)n, (const char *)v);
        nputs++;
    }
    return 0;
}

int __wrap_engine_host_del(engine *e, const char *key, xerr *err);
int __wrap_engine_host_del(engine *e, const char *key, xerr *err)
{
    (void)e, (void)err;
    if (ndels < LOGN) snprintf(dels[ndels++], sizeof dels[0], "%s", key);
    return 0;
}

/* An empty catalog: coord_start starts from its defaults. */
int __wrap_engine_host_scan(engine *e, const char *prefix, int (*fn)(void *, const char *, const void *, size_t),
                            void *ctx, xerr *err);
int __wrap_engine_host_scan(engine *e, const char *prefix, int (*fn)(void *, const char *, const void *, size_t),
                            void *ctx, xerr *err)
{
    (void)e, (void)prefix, (void)fn, (void)ctx, (void)err;
    return 0;
}

int __wrap_cs_send(cs *d, uint8_t type, uint16_t flags, const void *p, size_t len);
int __wrap_cs_send(cs *d, uint8_t type, uint16_t flags, const void *p, size_t len)
{
    (void)flags, (void)p, (void)len;
    if (nsends < LOGN) sends[nsends].to = d, sends[nsends++].type = type;
    return 0;
}

int __wrap_cs_send_msg(cs *d, const wire_msg *m);
int __wrap_cs_send_msg(cs *d, const wire_msg *m) { return __wrap_cs_send(d, m->type, m->flags, NULL, 0); }

/* The failure event's timer: the test says when it must be moved. */
void __wrap_node_tick_in(node *n, unsigned ms);
void __wrap_node_tick_in(node *n, unsigned ms)
{
    (void)n;
    check_expected(ms);
}

int __wrap_node_deploy(node *n, uint32_t qid, const void *plan, size_t len, const exec_out *out, xerr *err);
int __wrap_node_deploy(node *n, uint32_t qid, const void *plan, size_t len, const exec_out *out, xerr *err)
{
    (void)n, (void)plan, (void)len, (void)out, (void)err;
    if (ndeployed < LOGN) deployed[ndeployed++] = qid;
    return 0;
}

int __wrap_node_undeploy(node *n, uint32_t qid, int keep_state, xerr *err);
int __wrap_node_undeploy(node *n, uint32_t qid, int keep_state, xerr *err)
{
    (void)n, (void)keep_state, (void)err;
    if (nundeployed < LOGN) undeployed[nundeployed++] = qid;
    return 0;
}

/* No sink deployed here: no watermark, no inputs. */
int __wrap_engine_deployed_sink_wm(engine *e, uint32_t qid, int64_t *wm, xerr *err);
int __wrap_engine_deployed_sink_wm(engine *e, uint32_t qid, int64_t *wm, xerr *err)
{
    (void)e, (void)qid, (void)wm, (void)err;
    return XE_NOTFOUND;
}

int __wrap_engine_deployed_sink_inputs(engine *e, uint32_t qid, const int64_t **wm, int *n, xerr *err);
int __wrap_engine_deployed_sink_inputs(engine *e, uint32_t qid, const int64_t **wm, int *n, xerr *err)
{
    (void)e, (void)qid, (void)wm, (void)n, (void)err;
    return XE_NOTFOUND;
}

int __wrap_engine_deployed_sink_time(engine *e, uint32_t qid, int64_t *t, xerr *err);
int __wrap_engine_deployed_sink_time(engine *e, uint32_t qid, int64_t *t, xerr *err)
{
    (void)e, (void)qid, (void)t, (void)err;
    return XE_NOTFOUND;
}

/* ------------------------------------------------------------ a coordinator and its members */

#define MAXP 10
typedef struct world {
    node n;
    peer pe[MAXP];
    peer *pp[MAXP];
    cs link[MAXP];
    plan_op ops[3];
    plan_dag dag;
} world;

/* A member that joined: name, domain, speed (CPUs), 8 slots, up. */
static void add_member(world *w, const char *name, const char *dom, double speed)
{
    int i = w->n.npeers++;
    peer *p = &w->pe[i];
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->domain, sizeof p->domain, "%s", dom);
    snprintf(p->addr, sizeof p->addr, "127.0.0.1:%d", 7000 + i);
    p->slots = 8;
    p->speed_milli = (uint32_t)(speed * 1000);
    p->state = WIRE_MEMBER_UP;
    w->link[i] = (cs){.n = &w->n, .kind = CS_NODE, .ready = 1, .peer = p};
    p->link = &w->link[i];
    w->pp[i] = p;
}

static int setup(void **state)
{
    world *w = calloc(1, sizeof *w);
    if (!w) return -1;
    w->n.cfg = (node_config){.name = "c", .domain = "a", .slots = 8, .speed = 1};
    snprintf(w->n.addr, sizeof w->n.addr, "127.0.0.1:7999");
    w->n.peers = w->pp;
    xerr err;
    log_reset();
    if (coord_start(&w->n, &err)) return -1;
    log_reset();
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    for (cquery *q = w->n.co ? w->n.co->queries : NULL; q; q = q->next) q->dag = NULL; /* the test's own */
    coord_stop(&w->n);
    free(w);
    return 0;
}

static void add_stream(world *w, const char *name, const char *home)
{
    coord *co = w->n.co;
    co->streams = realloc(co->streams, (size_t)(co->nstreams + 1) * sizeof *co->streams);
    assert_non_null(co->streams);
    cstream *c = &co->streams[co->nstreams++];
    memset(c, 0, sizeof *c);
    c->name = strdup(name);
    c->home = strdup(home);
    c->sql = strdup("");
}

/* SOURCE of stream s (1 task) -> AGGREGATE (1) -> SINK (1): tasks 0, 1, 2,
 * running on src, agg and here, the aggregate's replica on rep. */
static cquery *add_query(world *w, const char *src, const char *agg, const char *rep, engine_ft ft)
{
    plan_op *ops = w->ops;
    memset(ops, 0, 3 * sizeof *ops);
    ops[0] = (plan_op){.id = 0, .kind = PO_SOURCE, .parallelism = 1, .stream = "s"};
    ops[1] = (plan_op){.id = 1, .kind = PO_AGGREGATE, .parallelism = 1, .ninputs = 1, .inputs = {0},
                       .in_edge = {EDGE_HASH}};
    ops[2] = (plan_op){.id = 2, .kind = PO_SINK, .parallelism = 1, .ninputs = 1, .inputs = {1},
                       .in_edge = {EDGE_HASH}};
    w->dag = (plan_dag){.nops = 3, .ops = ops, .sink = 2, .stateful = 1};
    coord *co = w->n.co;
    cquery *q = calloc(1, sizeof *q);
    assert_non_null(q);
    xerr err;
    sbuf_init(&q->plan);
    sbuf_init(&q->enc);
    sbuf_init(&q->backlog);
    assert_int_equal(cq_from_plan(q, &w->dag, &err), 0);
    q->qid = q->origin = co->next_qid++;
    q->name = strdup("q");
    q->sql = strdup("CREATE QUERY q AS SELECT 1 FROM s");
    q->co_node = &w->n;
    q->dag = &w->dag;
    q->ft = ft;
    q->ckpt_ms = co->ckpt_ms;
    q->strategy = co->placement;
    const char *at[3] = {src, agg, "c"};
    for (int t = 0; t < 3; t++) q->tnode[t] = strdup(at[t]);
    q->nrep = 1;
    q->rnode = calloc(3, sizeof *q->rnode);
    assert_non_null(q->rnode);
    q->rnode[1] = rep ? strdup(rep) : NULL;
    cq_link(co, q);
    return q;
}

static peer *member(world *w, const char *name) { return node_peer(&w->n, name, strlen(name)); }

/* ------------------------------------------------------------ catalog changes */

static ast_stmt *parse(const char *sql)
{
    ast_stmt *st = NULL;
    xerr err;
    assert_int_equal(parse_one(sql, strlen(sql), &st, &err), 0);
    return st;
}

/* SET is checked first (apply = 0 changes nothing), refused when out of
 * range, and applied only when asked. */
static void test_set_checked_then_applied(void **state)
{
    world *w = *state;
    coord *co = w->n.co;
    xerr err;
    assert_int_equal(co->replicas, 1);
    ast_stmt *st = parse("SET replicas = 3;");
    assert_int_equal(check_cluster_setting(co, st, 0, &err), 0);
    assert_int_equal(co->replicas, 1);
    assert_int_equal(check_cluster_setting(co, st, 1, &err), 0);
    assert_int_equal(co->replicas, 3);
    ast_stmt_free(st);
    st = parse("SET replicas = 9;");
    assert_int_equal(check_cluster_setting(co, st, 1, &err), XE_INVAL);
    assert_int_equal(co->replicas, 3);
    ast_stmt_free(st);
    st = parse("SET placement = 'round-robin';");
    assert_int_equal(check_cluster_setting(co, st, 1, &err), 0);
    assert_int_equal(co->placement, NIRVANA_ROUND_ROBIN);
    ast_stmt_free(st);
    st = parse("SET shadow = 'log';");
    assert_int_equal(check_cluster_setting(co, st, 1, &err), 0);
    assert_int_equal(co->shadow_log, 1);
    ast_stmt_free(st);
    st = parse("SET ft = 'sometimes';");
    assert_int_equal(check_cluster_setting(co, st, 1, &err), XE_INVAL);
    assert_int_equal(co->ft, ENGINE_FT_REPLICA);
    ast_stmt_free(st);
}

/* A catalog write goes to our LMDB and to each live standby, not to the
 * other members; a dead standby gets nothing. */
static void test_catalog_write_reaches_live_standbys(void **state)
{
    world *w = *state;
    add_member(w, "n1", "b", 1);
    add_member(w, "sb", "b", 1);
    add_member(w, "sb2", "c", 1);
    member(w, "sb")->standby = 1;
    member(w, "sb2")->standby = 1;
    member(w, "sb2")->state = WIRE_MEMBER_DEAD;
    xerr err;
    assert_int_equal(cat_put(&w->n, "set/x", "SET x = 1;", 10, &err), 0);
    assert_int_equal(nputs, 1);
    assert_string_equal(puts_[0].key, "set/x");
    assert_string_equal(puts_[0].val, "SET x = 1;");
    assert_int_equal(nsends, 1);
    assert_ptr_equal(sends[0].to, member(w, "sb")->link);
    assert_int_equal(sends[0].type, WIRE_CATALOG);
    assert_int_equal(cat_del(&w->n, "set/x", &err), 0);
    assert_int_equal(ndels, 1);
    assert_string_equal(dels[0], "set/x");
    assert_int_equal(nsends, 2);
    assert_ptr_equal(sends[1].to, member(w, "sb")->link);
}

/* "stream/<name>" = home TAB shadow TAB lshadow LF the CREATE text; "s#0"
 * names the stream itself. */
static void test_stream_record_and_lookup(void **state)
{
    world *w = *state;
    add_stream(w, "s", "n1");
    add_stream(w, "s#1", "n2");
    cstream *c = stream_find(w->n.co, "S");
    assert_non_null(c);
    c->shadow = strdup("n3");
    free(c->sql);
    c->sql = strdup("CREATE STREAM s (a INT);");
    xerr err;
    assert_int_equal(persist_stream(&w->n, c, &err), 0);
    assert_int_equal(nputs, 1);
    assert_string_equal(puts_[0].key, "stream/s");
    assert_string_equal(puts_[0].val, "n1\tn3\t\nCREATE STREAM s (a INT);");
    assert_ptr_equal(stream_find(w->n.co, "s#0"), c);
    assert_ptr_equal(partition_find(w->n.co, "s", 0), c);
    assert_string_equal(partition_find(w->n.co, "s", 1)->home, "n2");
    assert_null(partition_find(w->n.co, "s", 2));
}

/* A stream's shadow: a live worker outside the home's domain, the one with
 * the most capacity; none when every live node shares the home's domain. */
static void test_shadow_outside_the_home_domain(void **state)
{
    world *w = *state;
    add_member(w, "n1", "a", 4); /* the home's domain: never */
    add_member(w, "n2", "b", 1);
    add_member(w, "n3", "b", 2);
    add_member(w, "sb", "c", 8); /* a standby: never */
    member(w, "sb")->standby = 1;
    const char *sh = pick_shadow(&w->n, "c", 0, NULL, 0);
    assert_non_null(sh);
    assert_string_equal(sh, "n3");
    member(w, "n3")->state = WIRE_MEMBER_DEAD;
    assert_string_equal(pick_shadow(&w->n, "c", 0, NULL, 0), "n2");
    member(w, "n2")->state = WIRE_MEMBER_DEAD;
    assert_null(pick_shadow(&w->n, "c", 0, NULL, 0));
    /* the home on a member: this node is a candidate too */
    member(w, "n1")->state = WIRE_MEMBER_DEAD;
    assert_string_equal(pick_shadow(&w->n, "n2", 0, NULL, 0), "c");
}

/* Of equal nodes, the shadow is one that is no home or shadow yet: a home
 * that shadowed another partition too would do twice the ingest.  A node of
 * a fiftieth of the capacity is no better for being idle. */
static void test_shadow_avoids_the_other_homes(void **state)
{
    world *w = *state;
    add_member(w, "n1", "a", 1);
    add_member(w, "n3", "b", 1);
    add_member(w, "n4", "b", 1);
    add_member(w, "n5", "b", 0.02);
    add_member(w, "n6", "c", 1);
    add_member(w, "n7", "c", 1);
    add_member(w, "n8", "c", 0.02);
    /* partition 0 at n1, partitions 1 and 2 to come at n4 and n7 */
    const char *more[2] = {"n4", "n7"};
    for (int start = 0; start < 9; start++) {
        const char *sh = pick_shadow(&w->n, "n1", start, more, 2);
        assert_non_null(sh);
        assert_true(!strcmp(sh, "n3") || !strcmp(sh, "n6"));
    }
    /* once n3 shadows a stream, n6 is the one */
    add_stream(w, "t", "n4");
    stream_find(w->n.co, "t")->shadow = strdup("n3");
    for (int start = 0; start < 9; start++) assert_string_equal(pick_shadow(&w->n, "n1", start, more, 2), "n6");
    /* the coordinator (c, in domain a) forwards every stream's input: not
     * while a node of the same capacity elsewhere is free */
    const char *more2[2] = {"n1", "n7"};
    for (int start = 0; start < 9; start++) assert_string_equal(pick_shadow(&w->n, "n4", start, more2, 2), "n6");
}

/* ------------------------------------------------------------ failure grouping */

/* The deaths within the settle time of the first are one failure event:
 * the first sets it (and moves the tick to its end), the others join it. */
static void test_deaths_of_a_domain_are_one_event(void **state)
{
    world *w = *state;
    add_member(w, "n1", "b", 1);
    add_member(w, "n2", "b", 1);
    add_member(w, "n3", "c", 1);
    coord *co = w->n.co;
    assert_int_equal(co->recover_at, 0);
    expect_value(__wrap_node_tick_in, ms, 151); /* silent: FT_SETTLE_MS */
    member_lost(&w->n, member(w, "n1"), 0);
    int64_t at = co->recover_at;
    assert_true(at > 0);
    int64_t now = (int64_t)(clock_mono_ns() / 1000000);
    assert_true(at > now && at <= now + 150);
    member_lost(&w->n, member(w, "n2"), 0); /* no second event: no tick_in expected */
    assert_int_equal(co->recover_at, at);
    assert_string_equal(co->dead_names.p, "n1,n2");
    assert_int_equal(member(w, "n1")->state, WIRE_MEMBER_DEAD);
    assert_int_equal(member(w, "n3")->state, WIRE_MEMBER_UP);
    /* a dead node reported again joins nothing */
    member_lost(&w->n, member(w, "n1"), 1);
    assert_string_equal(co->dead_names.p, "n1,n2");
}

/* A closed connection (a crashed process) settles sooner than a silence. */
static void test_closed_connection_settles_sooner(void **state)
{
    world *w = *state;
    add_member(w, "n1", "b", 1);
    expect_value(__wrap_node_tick_in, ms, 51); /* FT_SETTLE_CLOSED_MS */
    member_lost(&w->n, member(w, "n1"), 1);
    int64_t now = (int64_t)(clock_mono_ns() / 1000000);
    assert_true(w->n.co->recover_at > 0 && w->n.co->recover_at <= now + 50);
}

/* A standby's death is no failure event: nothing is re-placed. */
static void test_standby_death_is_no_event(void **state)
{
    world *w = *state;
    add_member(w, "sb", "b", 1);
    member(w, "sb")->standby = 1;
    member_lost(&w->n, member(w, "sb"), 1); /* no tick_in expected */
    assert_int_equal(w->n.co->recover_at, 0);
    assert_int_equal(member(w, "sb")->state, WIRE_MEMBER_DEAD);
    assert_true(w->n.co->members_dirty);
}

/* ------------------------------------------------------------ redeploy or promote */

/* Members for the re-placement tests: the aggregate runs on n1 (domain b),
 * its replica on n2 (domain c, slow); n3 (domain c) is fast and idle. */
static void members_for_replacement(world *w)
{
    add_member(w, "n1", "b", 1);
    add_member(w, "n2", "c", 0.05);
    add_member(w, "n3", "c", 4);
    add_stream(w, "s", "c");
}

/* ft = replica: the displaced aggregate goes to its replica's node, which
 * holds its state, whatever the game preferred; the others stay. */
static void test_displaced_task_promoted_to_its_replica(void **state)
{
    world *w = *state;
    members_for_replacement(w);
    cquery *q = add_query(w, "c", "n1", "n2", ENGINE_FT_REPLICA);
    member(w, "n1")->state = WIRE_MEMBER_DEAD;
    replace_after_death(&w->n, "n1");
    assert_string_equal(q->tnode[1], "n2");
    assert_int_equal(q->lost[1], 1);
    assert_string_not_equal(q->rnode[1], "n2"); /* a new replica, off the primary's node */
    assert_string_equal(q->tnode[0], "c");
    assert_string_equal(q->tnode[2], "c");
    assert_int_equal(q->lost[0] + q->lost[2], 0);
}

/* ft = upstream: no replica takes over, so the game places it, and it does
 * not choose the slow node the replica was on. */
static void test_displaced_task_placed_by_the_game(void **state)
{
    world *w = *state;
    members_for_replacement(w);
    cquery *q = add_query(w, "c", "n1", "n2", ENGINE_FT_UPSTREAM);
    member(w, "n1")->state = WIRE_MEMBER_DEAD;
    replace_after_death(&w->n, "n1");
    assert_int_equal(q->lost[1], 1);
    assert_string_not_equal(q->tnode[1], "n1");
    assert_string_not_equal(q->tnode[1], "n2");
}

/* A query that lost tasks is redeployed under a new id: undeployed keeping
 * its state, its record moved to the new id, deployed here and everywhere. */
static void test_lost_tasks_redeployed_under_a_new_id(void **state)
{
    world *w = *state;
    members_for_replacement(w);
    cquery *q = add_query(w, "c", "n1", "n2", ENGINE_FT_REPLICA);
    uint32_t old = q->qid;
    member(w, "n1")->state = WIRE_MEMBER_DEAD;
    replace_after_death(&w->n, "n1");
    log_reset();
    ft_recover(&w->n);
    assert_int_equal(q->prev, old);
    assert_int_equal(q->qid, old + 1);
    assert_int_equal(w->n.co->next_qid, old + 2);
    assert_int_equal(q->lost[1], 0);
    assert_int_equal(nundeployed, 1);
    assert_int_equal(undeployed[0], old);
    assert_int_equal(ndeployed, 1);
    assert_int_equal(deployed[0], q->qid);
    char key[32];
    snprintf(key, sizeof key, "q/%010u", old);
    assert_int_equal(ndels, 1);
    assert_string_equal(dels[0], key);
    snprintf(key, sizeof key, "q/%010u", q->qid);
    int recorded = 0;
    for (int i = 0; i < nputs; i++) recorded |= !strcmp(puts_[i].key, key);
    assert_true(recorded);
    /* UNDEPLOY and DEPLOY to each live member (n2, n3) */
    int undeploys = 0, deploys = 0;
    for (int i = 0; i < nsends; i++) {
        undeploys += sends[i].type == WIRE_UNDEPLOY;
        deploys += sends[i].type == WIRE_DEPLOY;
        assert_ptr_not_equal(sends[i].to, member(w, "n1")->link);
    }
    assert_int_equal(undeploys, 2);
    assert_int_equal(deploys, 2);
}

/* A source task that lost its node while its stream's home stayed there
 * (no shadow took over) cannot be recovered: the query is left as is. */
static void test_source_without_its_stream_not_redeployed(void **state)
{
    world *w = *state;
    add_member(w, "n1", "b", 1);
    add_member(w, "n2", "c", 1);
    add_stream(w, "s", "n1");
    cquery *q = add_query(w, "n1", "n2", "c", ENGINE_FT_REPLICA);
    uint32_t old = q->qid;
    member(w, "n1")->state = WIRE_MEMBER_DEAD;
    replace_after_death(&w->n, "n1");
    assert_int_equal(q->lost[0], 1);
    log_reset();
    ft_recover(&w->n);
    assert_int_equal(q->qid, old);
    assert_int_equal(q->prev, 0);
    assert_int_equal(ndeployed + nundeployed + ndels, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_checked_then_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_catalog_write_reaches_live_standbys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_record_and_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shadow_outside_the_home_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shadow_avoids_the_other_homes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deaths_of_a_domain_are_one_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_connection_settles_sooner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_standby_death_is_no_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_displaced_task_promoted_to_its_replica, setup, teardown),
        cmocka_unit_test_setup_teardown(test_displaced_task_placed_by_the_game, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_tasks_redeployed_under_a_new_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_without_its_stream_not_redeployed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
