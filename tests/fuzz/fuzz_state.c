/*
 * libFuzzer target for what a replica and a node accept from their peers
 * about state: engine_replica_apply (the delta header, the kept result rows,
 * the storage change records of store_state_apply) and deploy_plan_get (the
 * DEPLOY plan, version 3 with ft mode and replicas).
 *
 * Input: one control byte, then the payload.
 *   bit 0  the payload is a DEPLOY plan (else a state delta);
 *   bit 1  (delta) fix up the header: version 2 and a rows length that fits,
 *          so the fuzzer reaches the change records.
 * Nothing may crash; a delta that applies must leave the replica readable:
 * the task's entries are snapshotted and the snapshot applied again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/node.h"
#include "exec/exec.h"

static engine *eng;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t ctl = data[0];
    data++;
    size--;
    xerr err;
    if (ctl & 1) {
        deploy_plan d;
        if (deploy_plan_get(data, size, &d, &err) == 0) {
            for (int t = 0; t < d.ntasks; t++)
                if (d.assign[t] >= d.nnodes) abort();
            for (int i = 0; i < d.ntasks * d.R; i++)
                if (d.rassign[i] != 0xffff && d.rassign[i] >= d.nnodes) abort();
            free(d.assign);
            free(d.rassign);
        }
        return 0;
    }
    if (!eng) {
        engine_opts o = {0};
        o.memory = 1;
        if (engine_open(&o, &eng, &err)) abort();
    }
    uint8_t *buf = malloc(size + 30);
    if (!buf) return 0;
    memcpy(buf, data, size);
    size_t n = size;
    if ((ctl & 2) && n >= 30) {
        buf[0] = 2;
        uint32_t no = be32_get(buf + 26);
        if (no > n - 30) be32_put(buf + 26, (uint32_t)(n - 30) / 2);
    }
    uint64_t pos[ENGINE_MAX_SRC];
    int npos = 0;
    (void)engine_replica_apply(eng, 4097, 1, buf, n, pos, &npos, &err);
    if (engine_commit(eng, &err)) abort(); /* a refused delta must not poison the epoch */
    free(buf);
    return 0;
}
