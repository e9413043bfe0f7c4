#!/bin/sh
# t_ft_home.sh with SET shadow = 'log': the stream's home copies its log to
# its shadow (LOGSHIP) instead of the coordinator feeding both, and its
# queries read only what the copy holds.  The home's domain is killed under
# steady input; the copy takes over, the client's ingest resumes there from
# the copied decoder state (RES_RESEND), and the output must equal the
# no-failure run, row for row.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
KILL=home SHADOW=log exec sh "$(dirname "$0")/t_ft_domain.sh"
