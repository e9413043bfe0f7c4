# Scenario-test tools (tests/tools/): gen_stream, the seeded stream generator
# that t_oracle.sh, t_crash.sh and the engine benchmark use.  It links
# nothing of Ares, so the scenario tests can also build it by hand.
TEST_TOOLS := $(BUILD)/tests/gen_stream

$(BUILD)/tests/gen_stream: $(BUILD)/tests/tools/gen_stream.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

scenario: $(TEST_TOOLS)
