/*
 * cpu.c: how much CPU this process may use, in CPUs.
 *
 * A node's capacity is what Nirvana's processing term divides by.  On a
 * machine of its own that is the CPUs the process may run on (its affinity
 * mask); inside a CPU cgroup with a hard quota it is the quota: the kernel's
 * CFS bandwidth control lets the group run `quota` microseconds in every
 * `period`, so quota / period CPUs, whatever the machine has.  The smallest
 * of the two wins, and a quota anywhere up the hierarchy counts (a parent's
 * quota caps its children).
 *
 * Both cgroup layouts are read:
 *   v2 (unified):  /proc/self/cgroup has "0::/path";  <mount>/path/cpu.max
 *                  holds "max 100000" or "25000 100000";
 *   v1:            a line "N:cpu,cpuacct:/path" (or "N:cpu:/path");
 *                  <mount>/path/cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us.
 * The mount points come from /proc/self/mountinfo, so a hierarchy mounted
 * anywhere is found.  Nothing here is cached: a quota changed while the
 * process runs is seen by the next call.
 */
#include "base/base.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 if a comma-separated list (a mount's options, a /proc/self/cgroup
 * line's controllers) names the cpu controller. */
static int names_cpu(const char *list)
{
    char buf[512], *save = NULL;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, "cpu")) return 1;
    return 0;
}

/* The mount point of the cgroup hierarchy that has the cpu controller (v1),
 * or of the unified one (v2, want_v2).  0 if found. */
static int cg_mount(int want_v2, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return -1;
    char line[1024];
    int rc = -1;
    while (rc && fgets(line, sizeof line, f)) {
        /* id parent maj:min root mountpoint options... - fstype source superopts */
        char *dash = strstr(line, " - ");
        if (!dash) continue;
        char mnt[512], fstype[64], super[512] = "";
        if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1) continue;
        if (sscanf(dash + 3, "%63s %*s %511s", fstype, super) < 1) continue;
        if (want_v2 && !strcmp(fstype, "cgroup2")) rc = 0;
        /* superopts list the controllers: rw,cpu,cpuacct */
        if (!want_v2 && !strcmp(fstype, "cgroup") && names_cpu(super)) rc = 0;
        if (!rc) snprintf(out, cap, "%s", mnt);
    }
    fclose(f);
    return rc;
}

/* This process's path in the v1 cpu hierarchy or the v2 one. */
static int cg_path(int v2, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[1024];
    int rc = -1;
    while (rc && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = 0;
        const char *ctl = c1 + 1, *path = c2 + 1;
        if (v2 && !strcmp(line, "0") && !*ctl) rc = 0;
        if (!v2 && names_cpu(ctl)) rc = 0;
        if (!rc) snprintf(out, cap, "%s", path);
    }
    fclose(f);
    return rc;
}

static int read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    return 0;
}

/* The smallest quota (in CPUs) from dir up to the mount point; 0 if none. */
static double cg_quota(int v2, const char *mnt, const char *path, char *how, size_t hcap)
{
    char dir[1024], file[2048], buf[128];
    double best = 0;
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        double q = 0;
        long quota = -1, period = 0;
        if (v2) {
            snprintf(file, sizeof file, "%.512s%.1023s/cpu.max", mnt, dir);
            if (!read_text(file, buf, sizeof buf) && strncmp(buf, "max", 3) &&
                sscanf(buf, "%ld %ld", &quota, &period) == 2 && quota > 0 && period > 0)
                q = (double)quota / (double)period;
        } else {
            snprintf(file, sizeof file, "%.512s%.1023s/cpu.cfs_quota_us", mnt, dir);
            if (!read_text(file, buf, sizeof buf) && sscanf(buf, "%ld", &quota) == 1 && quota > 0) {
                snprintf(file, sizeof file, "%.512s%.1023s/cpu.cfs_period_us", mnt, dir);
                if (!read_text(file, buf, sizeof buf) && sscanf(buf, "%ld", &period) == 1 && period > 0)
                    q = (double)quota / (double)period;
            }
        }
        if (q > 0 && (best == 0 || q < best)) {
            best = q;
            if (how)
                snprintf(how, hcap, "cgroup %s %.200s: quota %ld us every %ld us", v2 ? "v2" : "v1",
                         dir[0] ? dir : "/", quota, period);
        }
        if (!dir[0]) break; /* the mount's root was the last */
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0; /* "/a/b" -> "/a" -> "" (the root) */
        else dir[0] = 0;
    }
    return best;
}

double base_cpu_capacity(char *how, size_t cap)
{
    cpu_set_t set;
    int ncpu = 0;
    if (!sched_getaffinity(0, sizeof set, &set)) ncpu = CPU_COUNT(&set);
    if (ncpu <= 0) ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu <= 0) ncpu = 1;
    if (how) snprintf(how, cap, "%d CPU%s, no CPU quota", ncpu, ncpu == 1 ? "" : "s");
    double best = 0;
    char mnt[512], path[1024], h[256] = "";
    for (int v2 = 0; v2 <= 1; v2++) {
        if (cg_mount(v2, mnt, sizeof mnt) || cg_path(v2, path, sizeof path)) continue;
        if (!strcmp(path, "/")) path[0] = 0;
        double q = cg_quota(v2, mnt, path, h, sizeof h);
        if (q > 0 && (best == 0 || q < best)) {
            best = q;
            if (how) snprintf(how, cap, "%s", h);
        }
    }
    if (best > 0 && best < ncpu) return best;
    return ncpu;
}
