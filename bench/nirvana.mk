# Nirvana placement simulator: `make bench-nirvana` builds and runs it.
# It needs only the placement and base libraries (no `deps`, no cluster).
BENCHES += nirvana_sim

$(BUILD)/bench/nirvana_sim: $(BUILD)/bench/nirvana_sim.o $(call link_libs,placement)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

bench-nirvana: $(BUILD)/bench/nirvana_sim
	./$(BUILD)/bench/nirvana_sim
