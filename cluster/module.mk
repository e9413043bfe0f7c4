# cluster: wire protocol, authentication and the libuv connection layer.
# For now it needs only base (+ libuv, libcrypto via PKGS); the daemon,
# coordinator and distributed execution will add exec/planner/storage.
cluster_SRCS := cluster/wire.c cluster/auth.c cluster/net.c
cluster_USES := base
UNIT_TESTS += test_cluster:cluster,base
FUZZ_TARGETS += fuzz_wire:cluster,base
