# bench/bench.mk - `make bench` (included by GNUmakefile; see bench/README.md).
#
#   make bench                 build everything, run bench/run.sh (~5 min)
#   make bench BENCH_QUICK=1   short smoke run (~30 s), e.g. for CI
#   make bench BENCH_ONLY="containment spawn_cost"
#                              only those parts (names: bench/README.md)
#   make bench-build           build the bench programs only
#
# The baselines need nothing but libc.  The sipc part needs libsipc.a and
# the fixtures: they are built by a sub-make that may fail without
# stopping the baselines; run.sh then says so and exits non-zero after
# printing the baselines.

BENCH_DIR   := $(BUILD)/bench
BENCH_OPT   ?= -O2
BENCH_QUICK ?= 0
BENCH_ONLY  ?=
BENCH_BASE  := $(BENCH_DIR)/raw_pingpong $(BENCH_DIR)/raw_pipelined \
	       $(BENCH_DIR)/raw_batched \
	       $(BENCH_DIR)/raw_scale $(BENCH_DIR)/raw_spawn_contained \
	       $(BENCH_DIR)/newline_proto
BENCH_SIPC  := $(BENCH_DIR)/sipc_bench

.PHONY: bench bench-build bench-sipc bench-sipc-try

# Baselines: one C file each, libc and pthreads only.
$(BENCH_BASE): $(BENCH_DIR)/%: bench/%.c bench/bench.h bench/spawn_contained.h
	@mkdir -p $(@D)
	$(COMPILE) $(BENCH_OPT) -o $@ $< $(XLDFLAGS)

$(BENCH_SIPC): bench/sipc_bench.c bench/sipc_accept.c bench/sipc_contain.c \
		bench/sipc_cost.c bench/sipc_sandbox.c bench/sipc_hardening.c \
		bench/sipc_cancel.c \
		bench/sipc_recycle.c bench/sipc_figures.c bench/sipc_spawn_contained.c \
		bench/sipc_syscalls.c bench/spawn_contained.h bench/sipc_fdpass.c \
		bench/sipc_bench.h \
		bench/sipc_load.h bench/bench.h include/sipc.h \
		src/provider/provider.h $(LIB)
	@mkdir -p $(@D)
	$(COMPILE) $(BENCH_OPT) -o $@ $(filter %.c,$^) $(LIB) \
		$(XLDFLAGS) $(LDLIBS_BSD)

# The containment section and spawn_cost (its rule is beside the
# library's: it uses internal headers) start workers under sipc-init.
bench-sipc: $(LIB) $(FIX_BIN) $(INIT_BIN) $(BENCH_SIPC) \
	$(BENCH_DIR)/spawn_cost $(CONVERT_BIN) $(EXEC_BIN) $(DOCS)

# Build the sipc part in a sub-make; a failure leaves a marker and a log
# for run.sh instead of stopping the baselines.
bench-sipc-try:
	@mkdir -p $(BENCH_DIR)
	@rm -f $(BENCH_DIR)/sipc-build.failed
	@if $(MAKE) --no-print-directory bench-sipc \
		> $(BENCH_DIR)/sipc-build.log 2>&1; then :; else \
		touch $(BENCH_DIR)/sipc-build.failed; \
		echo "bench: libsipc.a / fixtures / sipc_bench failed to build;" \
		     "see $(BENCH_DIR)/sipc-build.log" >&2; \
		tail -n 15 $(BENCH_DIR)/sipc-build.log >&2; fi

bench-build: $(BENCH_BASE) bench-sipc-try

bench: bench-build
	@BENCH_BIN=$(BENCH_DIR) SIPC_FIXTURES=$(BUILD)/fixtures \
		BENCH_INIT=$(INIT_BIN) BENCH_QUICK=$(BENCH_QUICK) \
		BENCH_CONVERT=$(CONVERT_BIN) BENCH_EXEC=$(abspath $(EXEC_BIN)) \
		BENCH_ONLY="$(BENCH_ONLY)" sh bench/run.sh

# spawn_cost's recipe is in GNUmakefile; the header it shares is here.
$(BENCH_DIR)/spawn_cost: bench/bench.h
