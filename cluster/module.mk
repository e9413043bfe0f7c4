# cluster: wire protocol, authentication, the libuv connection layer, the
# ares-node runtime (node_base.c, node.c, node_conn.c, node_task.c, node_home.c, standby.c),
# the coordinator (coord.c and coord_*.c, catchup.c, place.c, measure.c, report.c) and the
# client library that ares-sql --connect uses (client.c, client_ingest.c).
cluster_SRCS := cluster/wire.c cluster/auth.c cluster/net.c cluster/node_base.c cluster/node.c cluster/node_conn.c cluster/node_task.c cluster/node_home.c cluster/standby.c cluster/channel.c cluster/shadow.c cluster/catchup.c \
                cluster/coord_catalog.c cluster/coord_nodes.c cluster/coord_derive.c cluster/coord_out.c cluster/coord_place.c \
                cluster/coord_query.c cluster/coord_ingest.c cluster/coord_fail.c cluster/coord_rebalance.c cluster/coord_show.c \
                cluster/coord_stmt.c cluster/coord_start.c cluster/coord.c \
                cluster/place.c cluster/measure.c cluster/report.c cluster/client.c cluster/client_ingest.c cluster/node_main.c
cluster_USES := exec base
BINS += ares-node:cluster
UNIT_TESTS += test_cluster:cluster test_wire:cluster test_channel:cluster test_place:cluster
# backpressure: node_conn.c's overflow and its release, the net layer wrapped (tests/unit/test_conn.c)
UNIT_TESTS += test_conn:cluster
$(BUILD)/tests/test_conn: LDFLAGS += $(foreach f,net_send net_pause net_resume,-Wl,--wrap=$(f))
# the coordinator's decisions, with the I/O below it wrapped (tests/unit/test_coord.c)
UNIT_TESTS += test_coord:cluster
$(BUILD)/tests/test_coord: LDFLAGS += $(foreach f,engine_host_put engine_host_del engine_host_scan cs_send cs_send_msg \
    node_tick_in node_deploy node_undeploy engine_deployed_sink_wm engine_deployed_sink_inputs \
    engine_deployed_sink_time,-Wl,--wrap=$(f))
FUZZ_TARGETS += fuzz_wire:cluster fuzz_state:cluster
