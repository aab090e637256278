/*
 * fuzz_config.c - fuzz target for the strict configuration loaders.
 *
 * The input is written to a memory file and loaded with
 * sipc_config_load_file() through its /proc/self/fd path (the loader
 * takes a path; a memory file keeps the disk out of the loop).  Then the
 * same bytes, split at newlines, are offered as an environment to
 * sipc_config_load_env().  Invariants:
 *   - 0, or a negative code; SIPC_E_CONFIG always comes with a non-empty
 *     message in errbuf;
 *   - on failure nothing is applied: the configuration and the store
 *     pointer are exactly as before the call;
 *   - a loaded configuration can be validated: sipc__config_validate()
 *     returns 0 or SIPC_E_CONFIG with a message;
 *   - tighten only: a load that is not the first file over an unset
 *     environment never leaves the production level (production or
 *     unset) and never drops a required guarantee; the file is loaded a
 *     second time after the environment to try the overlay route;
 *   - no leak (the store is freed; LeakSanitizer checks each input).
 * Single-threaded (libFuzzer calls it from one thread).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base.h"
#include "sipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static int memfd = -1;

/* After any loader call: the error contract. */
static void
check_result(int r, const char *err, const struct sipc_config *before,
    const struct sipc_config *cfg, sipc_config_store *store_before,
    sipc_config_store *store)
{
	CHECK(r <= 0);
	if (r == SIPC_E_CONFIG)
		CHECK(err[0] != '\0');
	if (r < 0) {
		CHECK(memcmp(before, cfg, sizeof(*cfg)) == 0);
		CHECK(store == store_before);
	}
}

static void
check_validate(const struct sipc_config *cfg)
{
	char err[512] = "";
	int r = sipc__config_validate(cfg, err, sizeof(err));

	CHECK(r == 0 || (r == SIPC_E_CONFIG && err[0] != '\0'));
}

static bool
prod_level(enum sipc_environment e)
{
	return e != SIPC_ENV_DEVELOPMENT && e != SIPC_ENV_TEST;
}

static void
check_tighten(const struct sipc_config *before, const struct sipc_config *cfg,
    bool first_file)
{
	bool relax = first_file && before->loaded_sources == 0 &&
	    before->environment == SIPC_ENV_UNSET;

	if (!relax && prod_level(before->environment))
		CHECK(prod_level(cfg->environment));
	CHECK((before->required_guarantees & ~cfg->required_guarantees) == 0);
}

static void
load_file(const uint8_t *data, size_t size, struct sipc_config *cfg,
    sipc_config_store **store)
{
	struct sipc_config before = *cfg;
	sipc_config_store *sb = *store;
	char path[64], err[512] = "";
	int r;

	if (memfd < 0 && (memfd = memfd_create("fuzz_config", 0)) < 0)
		abort();
	if (ftruncate(memfd, 0) < 0 || pwrite(memfd, data, size, 0) !=
	    (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	r = sipc_config_load_file(path, cfg, store, err, sizeof(err));
	check_result(r, err, &before, cfg, sb, *store);
	check_tighten(&before, cfg, true);
	if (r == 0)
		check_validate(cfg);
}

/* Lines of the input as an environment block (NUL-free copies). */
static void
load_env(const uint8_t *data, size_t size, struct sipc_config *cfg,
    sipc_config_store **store)
{
	struct sipc_config before = *cfg;
	sipc_config_store *sb = *store;
	char *copy = malloc(size + 1), **envp, err[512] = "";
	size_t n = 0, i;
	int r;

	envp = calloc(size + 2, sizeof(*envp));
	if (copy == NULL || envp == NULL)
		abort();
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (i = 0; i < size; i++)
		if (copy[i] == '\0')
			copy[i] = ' ';
	for (char *p = copy, *nl; p != NULL && *p != '\0'; p = nl) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		envp[n++] = p;
	}
	envp[n] = NULL;
	r = sipc_config_load_env(envp, cfg, store, err, sizeof(err));
	check_result(r, err, &before, cfg, sb, *store);
	check_tighten(&before, cfg, false);
	if (r == 0)
		check_validate(cfg);
	free(envp);
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sipc_config cfg;
	sipc_config_store *store = NULL;

	if (size > 65536)
		return 0;
	sipc_config_init(&cfg);
	load_file(data, size, &cfg, &store);
	load_env(data, size, &cfg, &store);
	load_file(data, size, &cfg, &store);
	sipc_config_store_free(store);
	return 0;
}
