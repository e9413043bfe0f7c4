/*
 * log.c: the log line of Ares's daemons, one format for all of them (see
 * base.h): the node's own lines (cluster/node.c) and the network layer's
 * default sink (cluster/net.c) print through it.
 *
 * Any thread: a line is one fprintf on unbuffered stderr, so lines from
 * threads do not interleave within a line.
 */
#include <stdio.h>
#include <time.h>

#include "base/base.h"

const char *base_log_level_name(int level)
{
    static const char *const n[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    return level >= 0 && level <= BASE_LOG_ERROR ? n[level] : "?";
}

void base_log_line(const char *who, int level, const char *tag, const char *msg)
{
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ %s %s %s%s%s%s\n", when, ts.tv_nsec / 1000000L, who, base_log_level_name(level),
            tag ? "[" : "", tag ? tag : "", tag ? "] " : "", msg);
}
