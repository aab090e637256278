# tests/extra.mk - chaos soak and fuzzing (included from GNUmakefile).
#
#   make soak       SOAK_SECONDS=60 SOAK_SEED=<random>: tests/soak/soak.c
#   make ci-soak    the same for 15 s
#   make ci-soak-sandbox  the same with SOAK_PROVIDER=sandbox (bubblewrap)
#   make fuzz       FUZZ_SECONDS=60 per target, libFuzzer (clang)
#   make ci-fuzz    10 s per target
#
# Fuzz targets compile the library sources they need directly with clang
# (coverage instrumentation + ASan + UBSan) into $(BUILD)/fuzz/.  A run
# reads the seed corpus in tests/fuzz/corpus/<target>/ and writes what it
# finds to $(BUILD)/fuzz/corpus/<target>/ (the repo's corpus stays as it
# is); a crash leaves its input in $(BUILD)/fuzz/ and fails the target.

.PHONY: ci-soak ci-soak-sandbox ci-fuzz fuzz-build fuzz-seeds

SOAK_SECONDS ?= 60
SOAK_SEED    ?=
SOAK_PROVIDER ?= local
SOAK_BIN     := $(BUILD)/soak/soak

$(SOAK_BIN): tests/soak/soak.c tests/soak/check.c tests/soak/soak.h \
		tests/lib/proccount.c tests/lib/proccount.h $(LIB)
	@mkdir -p $(@D)
	$(COMPILE) -Itests/soak -Itests/lib -o $@ tests/soak/soak.c \
		tests/soak/check.c tests/lib/proccount.c $(LIB) $(XLDFLAGS) \
		$(LDLIBS_BSD)

# The watchdog inside the soak fails a hang after 10 s; the outer
# timeout only guards against a soak that cannot even run its watchdog.
# SOAK_PROVIDER=sandbox runs every worker under bubblewrap.
soak: $(SOAK_BIN) $(BUILD)/fixtures/echo $(INIT_BIN)
	timeout -k 10 $$(( $(SOAK_SECONDS) + 180 )) $(SOAK_BIN) \
		--seconds $(SOAK_SECONDS) $(if $(SOAK_SEED),--seed $(SOAK_SEED)) \
		--provider $(SOAK_PROVIDER) \
		$(if $(filter-out local,$(SOAK_PROVIDER)),--init $(abspath $(INIT_BIN))) \
		--worker $(BUILD)/fixtures/echo

ci-soak:
	$(MAKE) soak SOAK_SECONDS=15

ci-soak-sandbox:
	$(MAKE) soak SOAK_SECONDS=15 SOAK_PROVIDER=sandbox

# ---------------------------------------------------------------- fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-pthread -Iinclude -Isrc
FUZZ_TARGETS := fuzz_frame fuzz_config fuzz_journal
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%)
FUZZ_GEN     := $(BUILD)/fuzz/seedgen

# Library sources each target needs (compiled with clang, not libsipc.a).
FUZZ_SRC_fuzz_frame   := src/wire/frame.c src/wire/crc32c.c src/wire/error.c \
	src/base/names.c
FUZZ_SRC_fuzz_config  := src/base/config.c src/base/config_load.c \
	src/wire/error.c src/base/names.c
FUZZ_SRC_fuzz_journal := src/base/clock.c src/journal/append.c src/journal/dir.c \
	src/journal/read.c src/journal/record.c src/journal/state.c src/os/ident.c \
	src/wire/crc32c.c src/wire/error.c src/base/names.c

$(BUILD)/fuzz/%: tests/fuzz/%.c $(wildcard src/*/*.h) $(wildcard include/*.h) \
		$(LIB_SRC) | $(PLATFORM_OK)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SRC_$*) $(LDLIBS_BSD)

fuzz-build: $(FUZZ_BIN)

# The seed corpora are committed; this regenerates them from the
# library's own encoders (after a format change).
$(FUZZ_GEN): tests/fuzz/seedgen.c $(LIB)
	@mkdir -p $(@D)
	$(COMPILE) -o $@ $< $(LIB) $(XLDFLAGS) $(LDLIBS_BSD)

fuzz-seeds: $(FUZZ_GEN)
	$(FUZZ_GEN) tests/fuzz/corpus

# Each target: its own working directory (crash files land there), the
# repo corpus as read-only seeds, one line of figures from libFuzzer's
# final stats.
define fuzz_run
	@set -e; for t in $(FUZZ_TARGETS); do \
		d=$(abspath $(BUILD))/fuzz; mkdir -p $$d/corpus/$$t $$d/work-$$t; \
		echo "fuzz: $$t for $(1) s"; \
		(cd $$d/work-$$t && ASAN_OPTIONS=detect_leaks=1 \
		 $$d/$$t -max_total_time=$(1) -print_final_stats=1 \
		 -timeout=10 -rss_limit_mb=2048 \
		 $$d/corpus/$$t $(abspath tests/fuzz/corpus)/$$t \
		 > $$d/$$t.log 2>&1) || { tail -n 60 $$d/$$t.log; \
		 echo "fuzz: $$t FAILED (log $$d/$$t.log)"; exit 1; }; \
		n=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$d/$$t.log); \
		echo "fuzz: $$t executions $$n"; \
	done
endef

fuzz: $(FUZZ_BIN)
	$(call fuzz_run,$(FUZZ_SECONDS))

ci-fuzz: $(FUZZ_BIN)
	$(call fuzz_run,10)
