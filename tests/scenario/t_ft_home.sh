#!/bin/sh
# Fault tolerance when the failure domain that dies holds the stream's home
# node (issue 7): the stream's shadow, in another domain, got the same input
# in the same order and holds the same log; it becomes the home, the query's
# source tasks move there, the ingest that was running goes on (the shadow
# answers it) and the replay runs from its log.  t_ft_domain.sh with
# KILL=home; the output must equal the no-failure run, row for row.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
KILL=home exec sh "$(dirname "$0")/t_ft_domain.sh"
