/*
 * node_main.c: ares-node, one member of an Ares cluster.
 *
 *   ares-node --name NAME --domain DOMAIN --listen HOST:PORT --data DIR
 *             [--join HOST:PORT[,HOST:PORT...]] [--coordinator] [--slots N] [--speed X]
 *             [--secret-file FILE] [--heartbeat-ms N] [--dead-ms N]
 *             [--link-delay-ms N] [-v]
 *
 * Everything it does is in node.c (with node_*.c and standby.c) and
 * coord.c; this file reads options and maps the outcome to an exit status: 0
 * after SIGINT/SIGTERM, 1 when the node could not start (the reason is
 * logged), 2 for bad usage.  Logs go to stderr, one line each, with a UTC
 * timestamp and the node's name.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/net.h"

static void usage(FILE *f)
{
    fputs("Usage: ares-node --name NAME --domain DOMAIN --listen HOST:PORT --data DIR\n"
          "                 [--join HOST:PORT[,...]] [--coordinator] [--slots N] [--speed X]\n"
          "                 [--throttle X]\n"
          "                 [--secret-file FILE] [--heartbeat-ms N] [--dead-ms N]\n"
          "                 [--link-delay-ms N] [-v]\n"
          "One member of an Ares cluster (see docs/operations.md).\n"
          "\n"
          "  --name NAME          this node's name, unique in the cluster\n"
          "  --domain DOMAIN      its failure domain (rack, zone, power feed)\n"
          "  --listen HOST:PORT   where nodes and clients reach it; HOST defaults to\n"
          "                       127.0.0.1 (loopback); 0.0.0.0 for every interface;\n"
          "                       port 0 picks a free port\n"
          "  --data DIR           its LMDB environment (streams, state, catalog)\n"
          "  --join HOST:PORT,...  the coordinator to register with; with several\n"
          "                       addresses (the active and its standbys) the one\n"
          "                       that answers as the coordinator\n"
          "  --coordinator        keep the catalog, place queries, serve ares-sql --connect;\n"
          "                       with --join: a standby coordinator that keeps a copy\n"
          "                       of the catalog and takes over when the active's\n"
          "                       domain fails (runs no tasks until then)\n"
          "  --slots N            tasks it accepts (default 16)\n"
          "  --speed X            the capacity placement is told, in CPUs (default: measured:\n"
          "                       the node's CPU cgroup quota, v2 cpu.max or v1\n"
          "                       cpu.cfs_quota_us, else the CPUs it may run on)\n"
          "  --throttle X         tests: below 1 the node sleeps (1/X - 1) times the time\n"
          "                       each batch took, so it runs X times as fast (it hands\n"
          "                       its CPU to others: not a real slow machine)\n"
          "  --secret-file FILE   the shared cluster secret (required; mode 0600)\n"
          "  --heartbeat-ms N     heartbeat period on an idle connection (default 100)\n"
          "  --dead-ms N          a node silent this long is declared dead and its\n"
          "                       connections closed (default 800; more than twice\n"
          "                       --heartbeat-ms); the coordinator shows it SUSPECT\n"
          "                       after half as long.  Use the same values on every node\n"
          "  --link-delay-ms N    tests: hold frames to nodes of other domains N ms\n"
          "  -v, --verbose        debug log lines too\n",
          f);
}

int main(int argc, char **argv)
{
    base_huge_heap(64); /* before anything allocates: see base.h */
    enum { O_NAME = 256, O_DOMAIN, O_LISTEN, O_DATA, O_JOIN, O_COORD, O_SLOTS, O_SPEED, O_THROTTLE, O_SECRET, O_DELAY,
           O_HEARTBEAT, O_DEAD };
    static const struct option longs[] = {
        {"name", required_argument, NULL, O_NAME},     {"domain", required_argument, NULL, O_DOMAIN},
        {"listen", required_argument, NULL, O_LISTEN}, {"data", required_argument, NULL, O_DATA},
        {"join", required_argument, NULL, O_JOIN},     {"coordinator", no_argument, NULL, O_COORD},
        {"slots", required_argument, NULL, O_SLOTS},   {"speed", required_argument, NULL, O_SPEED},
        {"throttle", required_argument, NULL, O_THROTTLE},
        {"secret-file", required_argument, NULL, O_SECRET},
        {"link-delay-ms", required_argument, NULL, O_DELAY},
        {"heartbeat-ms", required_argument, NULL, O_HEARTBEAT},
        {"dead-ms", required_argument, NULL, O_DEAD},
        {"verbose", no_argument, NULL, 'v'},           {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    node_config c;
    memset(&c, 0, sizeof c);
    int opt, li = 0;
    char *end;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":vh", longs, &li)) != -1) {
        switch (opt) {
        case O_NAME: c.name = optarg; break;
        case O_DOMAIN: c.domain = optarg; break;
        case O_LISTEN: c.listen = optarg; break;
        case O_DATA: c.data_dir = optarg; break;
        case O_JOIN: c.join = optarg; break;
        case O_COORD: c.coordinator = 1; break;
        case O_SLOTS:
            c.slots = (int)strtol(optarg, &end, 10);
            if (*end || c.slots < 1 || c.slots > 100000) goto bad_value;
            break;
        case O_SPEED:
            c.speed = strtod(optarg, &end);
            if (*end || !(c.speed >= 0.001) || c.speed > 1000) goto bad_value;
            break;
        case O_THROTTLE:
            c.throttle = strtod(optarg, &end);
            if (*end || !(c.throttle > 0) || c.throttle > 1) goto bad_value;
            break;
        case O_SECRET: c.secret_file = optarg; break;
        case O_DELAY: {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 60000) goto bad_value;
            c.link_delay_ms = (unsigned)v;
            break;
        }
        case O_HEARTBEAT:
        case O_DEAD: {
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 10 || v > 600000) {
                fprintf(stderr, "ares-node: --%s needs milliseconds from 10 to 600000, not '%s'\n",
                        longs[li].name, optarg);
                return 2;
            }
            *(opt == O_HEARTBEAT ? &c.heartbeat_ms : &c.dead_ms) = (unsigned)v;
            break;
        }
        case 'v': c.verbose = 1; break;
        case 'h': usage(stdout); return 0;
        case ':': fprintf(stderr, "ares-node: %s needs an argument\n", argv[optind - 1]); return 2;
        default: fprintf(stderr, "ares-node: unknown option %s\n", argv[optind - 1]); return 2;
        }
        continue;
    bad_value:
        fprintf(stderr, "ares-node: bad value '%s' for --%s\n", optarg, longs[li].name);
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "ares-node: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!c.name || !c.listen || !c.data_dir) {
        fprintf(stderr, "ares-node: --name, --listen and --data are required\n");
        usage(stderr);
        return 2;
    }
    unsigned hb = c.heartbeat_ms ? c.heartbeat_ms : NET_DEFAULT_HEARTBEAT_MS;
    unsigned dead = c.dead_ms ? c.dead_ms : NET_DEFAULT_DEAD_MS;
    if (dead <= 2 * hb) {
        fprintf(stderr,
                "ares-node: --dead-ms (%u) must be more than twice --heartbeat-ms (%u): a peer\n"
                "           must be able to miss a heartbeat without being declared dead\n",
                dead, hb);
        return 2;
    }
    xerr err;
    xerr_clear(&err);
    node_rejoin rj;
    int rc;
    while ((rc = node_run(&c, &rj, &err)) == NODE_RUN_REJOIN) {
        /* deposed: the same node, data and address, now a standby of the
         * coordinator that deposed it */
        c.coordinator = 1;
        c.join = rj.join;
        c.listen = rj.listen;
        xerr_clear(&err);
    }
    if (rc < 0) {
        fprintf(stderr, "ares-node: %s: %s\n", c.name, err.msg[0] ? err.msg : xerr_name(err.code));
        return 1;
    }
    return 0;
}
