# tests/drill.mk - the crash-and-restart drill (docs/RUNBOOK.md), included
# from GNUmakefile.
#
#   make drill       DRILL_CYCLES=5 crash cycles + a final clean run
#   make ci-drill    2 cycles, shorter load; must finish well under 60 s
#   make ci-drill-sandbox  ci-drill with every worker under bubblewrap
#   make drill-asan  ci-drill built with ASan+UBSan (build-asan/)
#
# Variables: DRILL_CYCLES, DRILL_LOAD_MS (load per generation before the
# supervisor is killed), DRILL_RATE (requests/s), DRILL_SEED (kill
# timing and victims; random when empty), DRILL_DIR (keep the ledger,
# exec log and state directory there instead of a temporary directory
# removed on success), DRILL_TIMEOUT (outer guard, seconds).
# The drill exits non-zero if anything is lost, re-run or left behind.

.PHONY: ci-drill ci-drill-sandbox drill-asan

DRILL_CYCLES  ?= 5
DRILL_LOAD_MS ?= 800
DRILL_RATE    ?= 2000
DRILL_SEED    ?=
DRILL_DIR     ?=
DRILL_TIMEOUT ?= 600
DRILL_SRC     := $(sort $(wildcard tests/drill/*.c))
DRILL_BIN     := $(BUILD)/drill/drill

$(DRILL_BIN): $(DRILL_SRC) tests/drill/drill.h tests/lib/lineread.h \
		tests/lib/rmtree.h $(LIB)
	@mkdir -p $(@D)
	$(COMPILE) -Itests/drill -o $@ $(DRILL_SRC) $(LIB) \
		$(XLDFLAGS) $(LDLIBS_BSD)

drill: $(DRILL_BIN) $(BUILD)/fixtures/echo
	timeout -k 10 $(DRILL_TIMEOUT) $(DRILL_BIN) --cycles $(DRILL_CYCLES) \
		--load-ms $(DRILL_LOAD_MS) --rate $(DRILL_RATE) \
		--fixture $(BUILD)/fixtures/echo \
		$(if $(DRILL_SEED),--seed $(DRILL_SEED)) \
		$(if $(DRILL_DIR),--dir $(DRILL_DIR) --keep)

ci-drill:
	$(MAKE) drill DRILL_CYCLES=2 DRILL_LOAD_MS=500 DRILL_TIMEOUT=60

# The same with every worker under bubblewrap (provider sandbox).
ci-drill-sandbox: $(INIT_BIN)
	SIPC_TEST_PROVIDER=sandbox SIPC_INIT=$(abspath $(INIT_BIN)) \
		$(MAKE) ci-drill

drill-asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g" \
		SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		ci-drill
