/*
 * version_test.c - the version macros and functions agree, and
 * sipc_create() refuses a struct sipc_config that was not stamped by
 * sipc_config_init() from this library's headers.
 *
 * Threads: the CUnit thread only.  No test spawns a worker: every
 * refusal must come before anything is started.
 */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

static void
test_version_macros_match_library(void)
{
	char want[32];

	CU_ASSERT_EQUAL(sipc_version(), (unsigned)SIPC_VERSION_HEX);
	snprintf(want, sizeof(want), "%d.%d.%d", SIPC_VERSION_MAJOR,
	    SIPC_VERSION_MINOR, SIPC_VERSION_PATCH);
	CU_ASSERT_STRING_EQUAL(sipc_version_string(), want);
	CU_ASSERT_STRING_EQUAL(SIPC_VERSION_STRING, want);
	CU_ASSERT_EQUAL(sipc_version() >> 16, (unsigned)SIPC_VERSION_MAJOR);
}

/* rules: CF1 */
static void
test_version_config_init_stamps(void)
{
	struct sipc_config c;

	memset(&c, 0xa5, sizeof(c));
	sipc_config_init(&c);
	CU_ASSERT_EQUAL(c.struct_size, sizeof(c));
	CU_ASSERT_EQUAL(c.version, (unsigned)SIPC_VERSION_HEX);
	CU_ASSERT_EQUAL(c.workers, 2);
}

/* sipc_create() must fail with SIPC_E_CONFIG, *ret untouched, and an
 * errbuf that contains `want`. */
static void
expect_refused(const struct sipc_config *c, const char *want)
{
	sipc_supervisor *s = (sipc_supervisor *)&s;
	char err[256] = "";
	int rc;

	rc = sipc_create(c, err, sizeof(err), &s);
	CU_ASSERT_EQUAL(rc, SIPC_E_CONFIG);
	CU_ASSERT_PTR_EQUAL(s, (sipc_supervisor *)&s);
	if (strstr(err, want) == NULL) {
		printf("\ngot \"%s\", want \"%s\"\n", err, want);
		CU_FAIL("refusal message");
	}
}

/* rules: CF1 */
static void
test_version_zeroed_config_refused(void)
{
	struct sipc_config c, ok;

	memset(&c, 0, sizeof(c));
	c.environment = SIPC_ENV_TEST;
	c.provider = "local";
	c.path = "/bin/true";
	expect_refused(&c, "start from sipc_config_init()");
	/* The same fields on a stamped struct are accepted by validation. */
	st_cfg_init(&ok, "echo", NULL, 1);
	CU_ASSERT_EQUAL(sipc__config_validate(&ok, NULL, 0), 0);
}

/* rules: CF1 */
static void
test_version_newer_header_refused(void)
{
	struct sipc_config c;

	st_cfg_init(&c, "echo", NULL, 1);
	c.version = SIPC_VERSION_HEX + (1u << 8);       /* next minor */
	expect_refused(&c, "newer");
	c.version = (unsigned)(SIPC_VERSION_MAJOR + 1) << 16;
	expect_refused(&c, "than this library (" SIPC_VERSION_STRING ")");
}

/* rules: CF1 */
static void
test_version_unknown_size_refused(void)
{
	struct sipc_config c;

	st_cfg_init(&c, "echo", NULL, 1);
	c.struct_size = sizeof(c) + 8;
	expect_refused(&c, "unknown size");
	c.struct_size = sizeof(c) - 8;
	expect_refused(&c, "unknown size");
}

/* A program built with a newer header has a bigger struct: the library
 * fills what it knows, zeroes the rest, and refuses it.  One built with
 * an older header has a smaller one: nothing past its end is written. */
static void
test_version_init_respects_caller_size(void)
{
	struct {
		struct sipc_config c;
		unsigned char tail[32];
	} big;
	unsigned char buf[sizeof(struct sipc_config)];
	size_t half = sizeof(buf) / 2, i;
	bool tail_zero = true, beyond_kept = true;

	memset(&big, 0xa5, sizeof(big));
	sipc_config_init_abi(&big.c, sizeof(big), SIPC_VERSION_HEX + 1);
	for (i = 0; i < sizeof(big.tail); i++)
		tail_zero = tail_zero && big.tail[i] == 0;
	CU_ASSERT(tail_zero);
	CU_ASSERT_EQUAL(big.c.struct_size, sizeof(big));
	big.c.environment = SIPC_ENV_TEST;
	big.c.path = "/bin/true";
	expect_refused(&big.c, "newer");

	memset(buf, 0xa5, sizeof(buf));
	sipc_config_init_abi((struct sipc_config *)(void *)buf, half,
	    SIPC_VERSION_HEX);
	for (i = half; i < sizeof(buf); i++)
		beyond_kept = beyond_kept && buf[i] == 0xa5;
	CU_ASSERT(beyond_kept);
}

int
main(void)
{
	tl_suite("version", (tl_test[]){
	    { "test_version_macros_match_library",
	      test_version_macros_match_library },
	    { "test_version_config_init_stamps",
	      test_version_config_init_stamps },
	    { "test_version_zeroed_config_refused",
	      test_version_zeroed_config_refused },
	    { "test_version_newer_header_refused",
	      test_version_newer_header_refused },
	    { "test_version_unknown_size_refused",
	      test_version_unknown_size_refused },
	    { "test_version_init_respects_caller_size",
	      test_version_init_respects_caller_size },
	    { NULL, NULL } });
	return tl_run();
}
