#!/bin/sh
# t_ft_coord.sh with the stream's home on the coordinator itself: rack-a
# takes the coordinator and the home at once; the standby takes over and the
# home's shadow (which got every chunk, quietly) answers the resumed ingest.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
PADS=0 exec sh "$(dirname "$0")/t_ft_coord.sh"
