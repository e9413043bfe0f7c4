/*
 * coord_stmt.c: a client's statements.  A QUERY frame is parsed into a
 * `job` that runs its statements in order (job_run), each to the end before
 * the next; a statement that waits for nodes (a broadcast, a DEPLOY, a
 * forwarded INSERT) returns 1 and its pend continues the job when it
 * finishes (job_step_done), and the first error ends the job.  run_stmt
 * decides what each statement does in a cluster: CREATE STREAM picks the
 * homes and shadows of the stream and its partitions, SET is applied and
 * recorded, INSERT goes to the stream's home, and the rest goes to
 * coord_query.c, coord_show.c, coord_rebalance.c or this node's engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

static void job_run(node *n, cs *s);
static void job_fail(node *n, cs *s, int rc, const char *msg);

/* A job's broadcast finished: go on with the client's next statement. */
void job_step_done(node *n, pend *p)
{
    if (!p->client) return;
    if (p->rc) {
        job_fail(n, p->client, p->rc, p->msg);
        return;
    }
    csess *ss = p->client->sess;
    if (ss && ss->job) {
        if (ss->job_again) ss->job_again = 0;
        else ss->job_i++;
        job_run(n, p->client);
    }
}

/* Run a statement on every other node as a step of s's job: 1 while they
 * run it, 0 when there was nobody to ask.  p->done is set only when p waits,
 * so that finishing at once does not advance the job twice. */
static int job_broadcast(node *n, cs *s, uint64_t req, const char *sql, xerr *err)
{
    pend *p = pend_new(n, PK_BROADCAST);
    if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
    p->client = s;
    p->creq = req;
    int rc = coord_broadcast_sql(n, p, sql);
    if (rc == 1) p->done = job_step_done;
    return rc;
}

/* CREATE STREAM on every other node: the home node gets the statement as
 * written, the others without its source (same return values as above). */
static int job_broadcast_stream(node *n, cs *s, uint64_t req, const cstream *c, xerr *err)
{
    if (!c->lite) return job_broadcast(n, s, req, c->sql, err);
    pend *p = pend_new(n, PK_BROADCAST);
    if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
    p->client = s;
    p->creq = req;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!coord_alive(x)) continue;
        wire_msg m = {.type = WIRE_QUERY};
        m.u.query.req_id = p->id;
        m.u.query.sql = wire_str_of(stream_sql_for(c, x->name));
        if (cs_send_msg(x->link, &m) == 0) pend_wait_for(p, x);
    }
    if (p->nwait == 0) {
        pend_finish(n, p);
        return 0;
    }
    p->done = job_step_done;
    return 1;
}

static void insert_reply(node *n, pend *p) { job_step_done(n, p); }

/* An INSERT run here into a stream whose log has a copy: the copy has it. */
static void insert_durable(node *n, uint64_t id)
{
    for (pend *p = n->co ? n->co->pends : NULL; p; p = p->next)
        if (p->id == id && p->kind == PK_FWD_INSERT) {
            pend_finish(n, p);
            return;
        }
}

/* CREATE STREAM ... WITH (home = 'NODE[,NODE...]'): partition p's home is
 * the list's (p mod its length)-th node, the coordinator itself or a live
 * member that runs tasks; anything else is refused, naming the candidates. */
static int named_home(node *n, const ast_option *ho, int p, const char **home, xerr *err)
{
    int len = 1;
    for (const char *c = ho->value; *c; c++) len += *c == ',';
    const char *w = ho->value;
    for (int k = p % len; k > 0; k--) w = strchr(w, ',') + 1;
    while (*w == ' ') w++;
    size_t wl = strcspn(w, ", ");
    if (strlen(n->cfg.name) == wl && !strncmp(n->cfg.name, w, wl)) {
        *home = n->cfg.name;
        return 0;
    }
    for (int i = 0; i < n->npeers; i++)
        if (coord_worker(n->peers[i]) && strlen(n->peers[i]->name) == wl && !strncmp(n->peers[i]->name, w, wl)) {
            *home = n->peers[i]->name;
            return 0;
        }
    sbuf names;
    sbuf_init(&names);
    sbuf_printf(&names, "%s", n->cfg.name);
    for (int i = 0; i < n->npeers; i++)
        if (coord_worker(n->peers[i])) sbuf_printf(&names, ", %s", n->peers[i]->name);
    int rc = xerr_at(err, XE_INVAL, ho->line, ho->col, "home '%.*s' is not a live node that runs tasks (those are: %.*s)",
                     (int)wl, w, (int)names.len, names.p ? names.p : "");
    sbuf_fini(&names);
    return rc;
}

/* The cstreams of partitions 1 .. np-1 of stream `name`, at their homes,
 * each with a shadow in another domain, in the catalog.  The stream's own
 * CREATE makes them at every node. */
static int add_partitions(node *n, const char *name, const char *const *home, int np, xerr *err)
{
    coord *co = n->co;
    for (int p = 1; p < np; p++) {
        cstream *v = realloc(co->streams, (size_t)(co->nstreams + 1) * sizeof *v);
        if (!v) return xerr_set(err, XE_NOMEM, "out of memory");
        co->streams = v;
        cstream *c = &co->streams[co->nstreams];
        memset(c, 0, sizeof *c);
        char pn[300];
        engine_partition_name(name, p, pn, sizeof pn);
        c->name = strdup(pn);
        c->home = strdup(home[p]);
        c->sql = strdup("");
        c->part = p;
        if (!c->name || !c->home || !c->sql) return xerr_set(err, XE_NOMEM, "out of memory");
        co->nstreams++;
        /* each partition's candidates from another start: equals spread */
        const char *sh = pick_shadow(n, home[p], co->rr_home + p, home + p + 1, np - p - 1);
        if (sh && !(*(co->shadow_log ? &c->lshadow : &c->shadow) = strdup(sh))) return xerr_set(err, XE_NOMEM, "out of memory");
        int rc = persist_stream(n, c, err);
        if (rc) return rc;
        node_log(n, NET_LOG_INFO, "stream %s: home node %s%s%s", pn, home[p], sh ? (co->shadow_log ? ", its log copied to " : ", shadow ") : "",
                 sh ? sh : "");
    }
    return 0;
}

/* CREATE STREAM: the home and shadow of the stream and its partitions,
 * then the statement on every node.  derived: a CREATE STREAM AS's stream
 * (coord_derive.c). */
static int create_stream(node *n, cs *s, uint64_t req, const ast_stmt *st, int derived, xerr *err)
{
    coord *co = n->co;
    int rc;
    if (stream_find(co, st->name)) return coord_exec_local(n, s, req, st, err);
    const ast_option *src = ast_option_get(st->with, "source");
    if (src && !strncmp(src->value, "file://", 7))
        /* no node reads a file: its bytes are on the client's machine */
        return xerr_at(err, XE_INVAL, src->line, src->col,
                       "source '%s': a cluster reads socket sources only (tcp://HOST:PORT or unix:///path, at the "
                       "stream's home); to load a file, ares-sql --connect ... --ingest %s --end < FILE",
                       src->value, st->name);
    /* the home: WITH (home = 'NODE'), else round-robin over the live
     * nodes, this one included; each partition's likewise */
    const char *home = n->cfg.name, *phome[PLAN_MAX_PARTITIONS];
    const ast_option *ho = ast_option_get(st->with, "home"), *po = ast_option_get(st->with, "partitions");
    int np = po ? atoi(po->value) : 1;
    if (np < 1 || np > PLAN_MAX_PARTITIONS) np = 1; /* the engine refuses it below */
    for (int p = 0; p < np; p++) {
        phome[p] = n->cfg.name;
        if (ho) {
            if ((rc = named_home(n, ho, p, &phome[p], err))) return rc;
            continue;
        }
        int nn = 1;
        for (int i = 0; i < n->npeers; i++) nn += coord_worker(n->peers[i]);
        int pick = co->rr_home++ % nn;
        for (int i = 0, k = 1; i < n->npeers && pick; i++)
            if (coord_worker(n->peers[i]) && k++ == pick) phome[p] = n->peers[i]->name;
    }
    home = phome[0];
    char *lite = strip_source(st->text);
    if (lite && strcmp(home, n->cfg.name)) {
        ast_stmt *ls = NULL;
        rc = parse_one(lite, strlen(lite), &ls, err);
        if (!rc) rc = coord_exec_local(n, s, req, ls, err);
        ast_stmt_free(ls);
    } else
        rc = coord_exec_local(n, s, req, st, err);
    if (rc) {
        free(lite);
        return rc;
    }
    cstream *v = realloc(co->streams, (size_t)(co->nstreams + 1) * sizeof *v);
    if (!v) {
        free(lite);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    co->streams = v;
    cstream *cst = &co->streams[co->nstreams];
    cst->name = strdup(st->name);
    cst->home = strdup(home);
    cst->sql = strdup(st->text);
    cst->lite = lite;
    cst->shadow = cst->lshadow = NULL;
    cst->dirty = 0;
    cst->part = 0;
    cst->derived = derived;
    cst->table = st->kind == ST_CREATE_TABLE;
    if (!cst->name || !cst->home || !cst->sql) return xerr_set(err, XE_NOMEM, "out of memory");
    co->nstreams++;
    const char *sh = pick_shadow(n, home, co->rr_home, phome + 1, np - 1);
    int by_log = !derived && (lite || co->shadow_log); /* a derived stream's shadow gets every DERIVE */
    if (sh && !(*(by_log ? &cst->lshadow : &cst->shadow) = strdup(sh))) return xerr_set(err, XE_NOMEM, "out of memory");
    rc = persist_stream(n, cst, err);
    if (rc) return rc;
    node_log(n, NET_LOG_INFO, "stream %s: home node %s%s%s%s", st->name, home,
             lite ? " (it alone reads the stream's source)" : "", sh ? (by_log ? ", its log copied to " : ", shadow ") : "",
             sh ? sh : "");
    if ((rc = add_partitions(n, st->name, phome, np, err))) return rc;
    cst = stream_find(co, st->name); /* add_partitions moved the array */
    rc = job_broadcast_stream(n, s, req, cst, err);
    if (rc >= 0 && sh) send_logshadow(n, cst, NULL); /* after the CREATE: the same connection */
    for (int p = 1; rc >= 0 && p < np; p++) {
        cstream *pc = partition_find(co, st->name, p);
        if (pc && pc->lshadow) send_logshadow(n, pc, NULL);
    }
    return rc;
}

/* DROP STREAM refuses a stream another query reads, naming it (its own
 * query, for a derived stream, goes with it). */
static int drop_check(node *n, const ast_stmt *st, xerr *err)
{
    for (cquery *q = n->co->queries; q; q = q->next) {
        if (q->ended || !q->dag || (q->target && !strcmp(q->target, st->name))) continue;
        for (int o = 0; o < q->dag->nops; o++) {
            const char *sn = q->dag->ops[o].kind == PO_SOURCE ? q->dag->ops[o].stream : NULL;
            if (sn && (!strcmp(sn, st->name) || (!strncmp(sn, st->name, strlen(st->name)) && sn[strlen(st->name)] == '#')))
                return xerr_at(err, XE_PLAN, st->line, st->col, "stream '%s' is read by %s%s%s; drop that first",
                               st->name, q->push ? "a push query" : "query '", q->push ? "" : q->name, q->push ? "" : "'");
        }
    }
    return 0;
}

/* CREATE STREAM name AS SELECT on a cluster, in two steps of the job:
 * the stream, made on every node from the SELECT's columns (checked by
 * this node's engine as an embedded one would), then, once every node has
 * it, its query under the stream's name, writing it (coord_derive.c). */
static int create_stream_as(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    coord *co = n->co;
    cstream *c = stream_find(co, st->name);
    cquery *w = query_find(co, st->name);
    int rc;
    if (c && c->derived && !w) {
        /* the second step: its query */
        sbuf q;
        sbuf_init(&q);
        sbuf_adds(&q, "CREATE QUERY ");
        ast_print_ident(st->name, &q);
        int nopt = 0;
        for (int i = 0; st->with && i < st->with->n; i++) {
            const ast_option *o = &st->with->v[i];
            if (!strcasecmp(o->key, "timestamp") || !strcasecmp(o->key, "retention")) continue;
            sbuf_adds(&q, nopt++ ? ", " : " WITH (");
            sbuf_printf(&q, "%s = '", o->key);
            for (const char *v = o->value; *v; v++) {
                if (*v == '\'') sbuf_addc(&q, '\'');
                sbuf_addc(&q, *v);
            }
            sbuf_addc(&q, '\'');
        }
        if (nopt) sbuf_addc(&q, ')');
        sbuf_adds(&q, " AS ");
        ast_stmt *qs = NULL;
        if (ast_print_select(st->select, &q) || !q.p) rc = xerr_set(err, XE_NOMEM, "out of memory");
        else rc = parse_one(q.p, q.len, &qs, err);
        if (!rc) {
            qs->line = st->line;
            qs->col = st->col;
            rc = coord_create_query(n, s, req, qs, 0, st->name, err);
        }
        if (rc < 0)
            snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                     " (stream '%s' was made without its query: DROP STREAM %s)", st->name, st->name);
        ast_stmt_free(qs);
        sbuf_fini(&q);
        return rc;
    }
    if (c || w) {
        if (c && st->if_not_exists) {
            char msg[400];
            snprintf(msg, sizeof msg, "stream '%s' already exists, skipping", st->name);
            coord_notice_to(s, req, msg);
            return 0;
        }
        return xerr_at(err, XE_EXISTS, st->line, st->col, c ? "stream '%s' already exists"
                       : "a query is called '%s' (the query of a derived stream takes the stream's name)", st->name);
    }
    sbuf text;
    sbuf_init(&text);
    ast_stmt *cs_ = NULL;
    if (!(rc = engine_writer_check(n->eng, st, &text, err)) && !(rc = parse_one(text.p, text.len, &cs_, err)))
        rc = create_stream(n, s, req, cs_, 1, err);
    ast_stmt_free(cs_);
    sbuf_fini(&text);
    if (rc >= 0) s->sess->job_again = 1; /* then its query */
    return rc;
}

/* A statement run at a stream's home, which answers the client (an INSERT,
 * a pull query: its rows pass through, on_answer's PK_FWD_INSERT). */
static int to_home(node *n, cs *s, uint64_t req, const cstream *cst, const ast_stmt *st, xerr *err)
{
    peer *home = node_peer(n, cst->home, strlen(cst->home));
    if (!home || !coord_alive(home))
        return xerr_set(err, XE_IO, "%s '%s' lives on node %s, which is not alive", cst->table ? "table" : "stream",
                        cst->name, cst->home);
    pend *p = pend_new(n, PK_FWD_INSERT);
    if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
    p->client = s;
    p->creq = req;
    p->home = home;
    p->done = insert_reply;
    p->line = st->line;
    p->col = st->col;
    wire_msg m = {.type = WIRE_QUERY};
    m.u.query.req_id = p->id;
    m.u.query.sql = wire_str_of(st->text);
    int rc = cs_send_msg(home->link, &m);
    if (rc) {
        pend_unlink(n, p);
        pend_free(p);
        return xerr_set(err, rc, "cannot reach node %s", home->name);
    }
    return 1;
}

/* A bare SELECT of one table without EMIT CHANGES (exec/push.c's rule): a
 * pull query, answered by the table's home from its rows. */
static cstream *pull_table(coord *co, const ast_stmt *st)
{
    const char *from = engine_pull_source(st->select);
    cstream *c = from ? stream_find(co, from) : NULL;
    return c && c->table ? c : NULL;
}

/* SUBSCRIBE t of a table: its changelog from now on, as SELECT * FROM t
 * EMIT CHANGES (a push query), as an embedded engine does. */
static int subscribe_table(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    ast_stmt *sel = NULL;
    int rc = engine_subscribe_stmt(st, &sel, err);
    if (!rc) rc = coord_create_query(n, s, req, sel, 1, NULL, err);
    ast_stmt_free(sel);
    return rc;
}

/* Returns 0 (done), 1 (waiting for nodes) or an error. */
static int run_stmt(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    coord *co = n->co;
    int rc;
    switch (st->kind) {
    case ST_CREATE_STREAM: return create_stream(n, s, req, st, 0, err);
    case ST_DROP_STREAM: {
        if ((rc = drop_check(n, st, err))) return rc;
        cquery *w = stream_find(co, st->name) && stream_find(co, st->name)->derived ? query_find(co, st->name) : NULL;
        if (w) {
            /* a derived stream goes with its query, first */
            node_log(n, NET_LOG_INFO, "query %u (%s) dropped with its stream", w->qid, w->name);
            cq_drop(n, w);
        }
        if ((rc = coord_exec_local(n, s, req, st, err))) return rc;
        /* the stream, then its partitions */
        for (int p = 0; p < PLAN_MAX_PARTITIONS; p++) {
            cstream *cst = partition_find(co, st->name, p);
            if (!cst) {
                if (p) break;
                return 0;
            }
            char key[600];
            snprintf(key, sizeof key, "stream/%s", cst->name);
            cat_del(n, key, err);
            free(cst->name);
            free(cst->home);
            free(cst->sql);
            free(cst->lite);
            free(cst->shadow);
            free(cst->lshadow);
            *cst = co->streams[--co->nstreams];
        }
        return job_broadcast(n, s, req, st->text, err);
    }
    case ST_SET: {
        if ((rc = check_cluster_setting(co, st, 0, err))) return rc;
        if ((rc = coord_exec_local(n, s, req, st, err))) return rc;
        check_cluster_setting(co, st, 1, err);
        char key[300];
        snprintf(key, sizeof key, "set/%s", st->set_key);
        if ((rc = cat_put(n, key, st->text, strlen(st->text), err))) return rc;
        int i;
        for (i = 0; i < co->nsets && strcmp(co->set_keys[i], st->set_key); i++) {}
        if (i == co->nsets) {
            char **k = realloc(co->set_keys, (size_t)(i + 1) * sizeof *k);
            if (k) co->set_keys = k;
            char **v = realloc(co->set_sql, (size_t)(i + 1) * sizeof *v);
            if (v) co->set_sql = v;
            if (!k || !v) return xerr_set(err, XE_NOMEM, "out of memory");
            co->set_keys[i] = strdup(st->set_key);
            co->set_sql[i] = NULL;
            co->nsets++;
        }
        free(co->set_sql[i]);
        co->set_sql[i] = strdup(st->text);
        return job_broadcast(n, s, req, st->text, err);
    }
    case ST_CREATE_QUERY: return coord_create_query(n, s, req, st, 0, NULL, err);
    case ST_CREATE_STREAM_AS: return create_stream_as(n, s, req, st, err);
    case ST_INSERT_SELECT:
        /* its target keeps its own watermark, so a new coordinator could not
         * tell the rows its log has (coord_derive.c); not built yet */
        return xerr_at(err, XE_PLAN, st->line, st->col, "INSERT INTO ... SELECT is not supported on a cluster yet (an "
                       "embedded engine runs it; CREATE STREAM ... AS SELECT makes a derived stream on a cluster)");
    case ST_CREATE_TABLE: return create_stream(n, s, req, st, 0, err);
    case ST_CREATE_TABLE_AS:
        /* ares-sql --connect refuses it first (cli/client.c); a client of
         * its own would otherwise reach the coordinator's own engine */
        return xerr_at(err, XE_PLAN, st->line, st->col,
                       "CREATE TABLE ... AS SELECT is not supported on a cluster yet (an embedded engine runs it)");
    case ST_SELECT: {
        cstream *t = pull_table(co, st);
        if (t && strcmp(t->home, n->cfg.name)) return to_home(n, s, req, t, st, err);
        if (t) return coord_exec_local(n, s, req, st, err);
        return coord_create_query(n, s, req, st, 1, NULL, err);
    }
    case ST_DROP_QUERY: return coord_drop_query(n, s, req, st, err);
    case ST_ALTER_QUERY_REBALANCE: return alter_rebalance(n, s, req, st, err);
    case ST_SUBSCRIBE: {
        cquery *q = query_find(co, st->name);
        const cstream *tc = q ? NULL : stream_find(co, st->name);
        if (tc && tc->table) return subscribe_table(n, s, req, st, err);
        if (!q) return xerr_at(err, XE_NAME, st->line, st->col, "no query '%s'", st->name);
        csub *x = calloc(1, sizeof *x);
        if (!x) return xerr_set(err, XE_NOMEM, "out of memory");
        x->to = s;
        x->req = req;
        x->next = q->subs;
        q->subs = x;
        cq_begin(q, s, req);
        cs_result(s, req, 0, RES_NAME, 0, q->name, strlen(q->name));
        node_log(n, NET_LOG_INFO, "a client subscribed to %s", q->name);
        return 0;
    }
    case ST_SHOW:
        if (st->show == SHOW_NODES) return coord_show_nodes(n, s, req);
        if (st->show == SHOW_STREAMS) return coord_show_streams(n, s, req, st, err);
        if (st->show == SHOW_QUERIES) return coord_show_queries(n, s, req, st, err);
        return coord_exec_local(n, s, req, st, err);
    case ST_EXPLAIN:
        if (st->explain_placement && st->name) {
            cquery *q = query_find(co, st->name);
            if (q) return coord_explain_placement(n, s, req, q, st->explain_json);
        }
        return coord_exec_local(n, s, req, st, err);
    case ST_INSERT: {
        cstream *cst = stream_find(co, st->name);
        if (cst && cst->shadow) insert_to_shadow(n, cst, st);
        if (!cst || !strcmp(cst->home, n->cfg.name)) {
            if ((rc = coord_exec_local(n, s, req, st, err)) || !cst || !shadow_guarded(n, cst->name)) return rc;
            /* the home is here and its log has a copy: done once the copy has the rows */
            pend *p = pend_new(n, PK_FWD_INSERT);
            if (!p) return xerr_set(err, XE_NOMEM, "out of memory");
            p->client = s;
            p->creq = req;
            p->done = insert_reply;
            shadow_call_later(n, cst->name, insert_durable, p->id);
            shadow_ship_soon(n, cst->name);
            return 1;
        }
        return to_home(n, s, req, cst, st, err);
    }
    default: return coord_exec_local(n, s, req, st, err);
    }
}

void job_free(csess *ss)
{
    parse_result_free(ss->job);
    ss->job = NULL;
}

static void job_fail(node *n, cs *s, int rc, const char *msg)
{
    (void)n;
    csess *ss = s->sess;
    if (!ss || !ss->job) return;
    cs_error(s, ss->job_req, rc, msg && msg[0] ? msg : xerr_name(rc));
    job_free(ss);
}

/* The same for an error of this node's own: with its position in the SQL. */
static void job_fail_at(node *n, cs *s, int rc, const xerr *err)
{
    char msg[sizeof err->msg + 40];
    wire_error_text(err, rc, msg, sizeof msg);
    job_fail(n, s, rc, msg);
}

static void job_run(node *n, cs *s)
{
    csess *ss = s->sess;
    while (ss->job && ss->job_i < ss->job->nstmts) {
        xerr err;
        xerr_clear(&err);
        int rc = run_stmt(n, s, ss->job_req, ss->job->stmts[ss->job_i], &err);
        if (rc == 1) return;
        if (rc < 0) {
            ss->job_again = 0;
            job_fail_at(n, s, rc, &err);
            return;
        }
        if (ss->job_again) ss->job_again = 0;
        else ss->job_i++;
    }
    if (!ss->job) return;
    unsigned char z[24] = {0};
    cs_result(s, ss->job_req, WIRE_F_LAST, RES_DONE, 0, z, sizeof z);
    job_free(ss);
}

void job_start(node *n, cs *s, const wire_msg *m)
{
    csess *ss = s->sess;
    uint64_t req = m->u.query.req_id;
    if (ss->job) {
        cs_error(s, req, XE_BUSY, "a statement is still running on this connection");
        return;
    }
    parse_result *r = NULL;
    parse_sql(m->u.query.sql.p, m->u.query.sql.n, &r);
    if (!r || r->nerrors) {
        xerr e;
        if (r) xerr_at(&e, XE_SYNTAX, r->errors[0].line, r->errors[0].col, "%s", r->errors[0].msg);
        else xerr_set(&e, XE_NOMEM, "out of memory");
        char msg[sizeof e.msg + 40];
        wire_error_text(&e, e.code, msg, sizeof msg);
        cs_error(s, req, e.code, msg);
        parse_result_free(r);
        return;
    }
    ss->job = r;
    ss->job_i = 0;
    ss->job_req = req;
    job_run(n, s);
}
