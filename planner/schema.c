/*
 * schema.c: a row's columns, by name and type (plan_schema).
 *
 * The one vocabulary both halves of the planner use: planner.c builds each
 * operator's output schema, and bind.c resolves a column name against the
 * schemas of a scope.  It calls nothing else of the planner, so that
 * planner.c calls bind.c and both call this file, and no file of the
 * planner calls back into one that calls it.
 */
#include "planner/internal.h"

#include <stdlib.h>
#include <string.h>

int plan_schema_find(const plan_schema *s, const char *name)
{
    for (int i = 0; i < s->ncols; i++)
        if (!strcmp(s->cols[i].name, name)) return i;
    return -1;
}

void plan_schema_fini(plan_schema *s)
{
    if (!s) return;
    for (int i = 0; i < s->ncols; i++) free(s->cols[i].name);
    free(s->cols);
    s->cols = NULL;
    s->ncols = 0;
}

int schema_add(plan_schema *s, const char *name, sql_type t)
{
    plan_column *c = realloc(s->cols, (size_t)(s->ncols + 1) * sizeof *c);
    if (!c) return XE_NOMEM;
    s->cols = c;
    if (!(c[s->ncols].name = strdup(name))) return XE_NOMEM;
    c[s->ncols].type = t;
    s->ncols++;
    return 0;
}

int plan_schema_copy(plan_schema *dst, const plan_schema *src)
{
    dst->ncols = 0;
    dst->cols = NULL;
    for (int i = 0; i < src->ncols; i++)
        if (schema_add(dst, src->cols[i].name, src->cols[i].type)) {
            plan_schema_fini(dst);
            return XE_NOMEM;
        }
    return 0;
}
