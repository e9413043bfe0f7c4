# cli: the ares-sql binary (its main is in cli/main.c).
cli_SRCS := cli/main.c cli/run.c cli/script.c cli/help.c cli/output.c cli/shell.c cli/client.c cli/remote.c
cli_USES := cluster exec
BINS += ares-sql:cli
UNIT_TESTS += test_cli:cli
