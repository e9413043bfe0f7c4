#!/bin/sh
# t_ft_derived.sh with KILL=coord: the coordinator's domain (rack-a, with
# the homes of both derived streams) is SIGKILLed; a standby in rack-b takes
# over with no record of what was sent into them, and the homes drop what
# its redeployed sinks send again.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
KILL=coord exec sh "$(dirname "$0")/t_ft_derived.sh"
