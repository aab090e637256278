/*
 * isolation.c - the isolation rules of the conformance suite: one per
 * enum sipc_guarantee bit.  A rule whose guarantee the provider does not
 * declare is reported as not provided and counted, never registered as
 * a passing test.  A declared guarantee must be verified; one this suite
 * has no check for yet fails (declared-but-unchecked is not a pass).
 *
 * The checks are partial by nature (a probe from inside the worker can
 * show a leak, not prove its absence in general); they catch the plain
 * failures: the host's pid visible, the host's environment inherited.
 * Every rule but tree containment is judged as the start-up probe
 * judges it (probes.c); tree containment here goes further than the
 * start-up probe (a double-forked daemon and a group child beside the
 * setsid() escapee, a graceful stop).
 *
 * Threads: the CUnit thread only.  No locks.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"
#include "driver.h"
#include "testlib.h"

static unsigned iso_provided, iso_not_provided;

/* Wait up to ms for end of file on the diagnostics pipe: every holder
 * of its write end is gone. */
static bool
diag_closed(struct cw *w, int ms)
{
	int64_t end = tl_now_ms() + ms;
	struct pollfd pf = { .fd = w->ch.diag_fd, .events = POLLIN };
	char buf[4096];
	ssize_t n;

	while (tl_now_ms() < end) {
		if (poll(&pf, 1, (int)(end - tl_now_ms())) <= 0)
			continue;
		if ((n = read(w->ch.diag_fd, buf, sizeof(buf))) == 0)
			return true;
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return true;
	}
	return false;
}

/*
 * Tree containment, tried for real: forker escape leaves a group child,
 * a double-forked daemon and a setsid() escapee, all holding the
 * worker's stderr.  After TERM and the worker's end, the pipe must reach
 * end of file: every one of them is dead.  A survivor (the escapee in
 * process-group mode) is killed afterwards by the pid the worker gave,
 * when that pid means the same here.
 */
int
conf_verify_tree_containment(const struct sipc_provider_ops *p, void *st,
                             char *why, size_t len)
{
	const struct sipc_provider_ops *saved = conf_prov;
	void *saved_st = conf_prov_state;
	long long le = 0, gr = 0, da = 0, es = 0;
	struct sipc_hello hello;
	struct sipc_frame f;
	char text[200];
	bool closed = false;
	struct cw w;
	int r;

	conf_prov = p;
	conf_prov_state = st;
	if ((r = cw_launch(&w, "forker", "escape", NULL)) == 0 &&
	    (r = cw_hello(&w, &hello)) == 0 &&
	    (r = cw_roundtrip(&w, 1, "pids", 4, &f)) == 0) {
		snprintf(text, sizeof(text), "%.*s", (int)f.hdr.len,
		    (char *)f.payload);
		free(f.payload);
		if (sscanf(text, "leader=%lld group=%lld daemon=%lld "
		    "escapee=%lld", &le, &gr, &da, &es) != 4 || es <= 0)
			r = SIPC_E_PROTOCOL;
	}
	if (r == 0 && (r = p->stop(w.h, SIPC_STOP_GRACEFUL)) == 0 &&
	    (r = cw_wait_end(&w, DEADLINE_MS)) == 1) {
		r = 0;
		closed = diag_closed(&w, 2000);
	} else if (r == 0) {
		r = -ETIMEDOUT;
	}
	if (!closed && es > 0 && cw_same_pid_view())
		(void)kill((pid_t)es, SIGKILL);
	cw_finish(&w);
	conf_prov = saved;
	conf_prov_state = saved_st;
	if (r < 0)
		return r;
	snprintf(why, len, "after the worker's end, its setsid() escapee "
	    "(pid %lld as the worker saw it) %s", es, closed ? "was gone" :
	    "still held the diagnostics pipe: it escaped");
	return closed ? 1 : 0;
}

typedef int (*verify_fn)(const struct sipc_provider_ops *, void *, char *,
                         size_t);

static const struct iso_rule {
	unsigned bit;
	verify_fn verify;       /* NULL: no check written yet */
} iso_rules[] = {
	{ SIPC_G_PID_NAMESPACE, conf_verify_pid_namespace },
	{ SIPC_G_MOUNT_NAMESPACE, conf_verify_host_files },
	{ SIPC_G_NETWORK_ISOLATION, conf_verify_host_sockets },
	{ SIPC_G_NO_INHERITED_SECRETS, conf_verify_no_inherited_secrets },
	{ SIPC_G_RESOURCE_LIMITS, conf_verify_resource_limits },
	{ SIPC_G_SEPARATE_USER, conf_verify_separate_user },
	{ SIPC_G_TREE_CONTAINMENT, conf_verify_tree_containment },
	{ SIPC_G_SYSCALL_FILTER, conf_verify_syscall_filter },
	{ SIPC_G_LIMITS, conf_verify_limits },
	{ SIPC_G_NO_PRIVILEGE, conf_verify_no_privilege },
	{ SIPC_G_FILESYSTEM_RULES, conf_verify_filesystem_rules },
};
#define NISO (sizeof(iso_rules) / sizeof(iso_rules[0]))
_Static_assert(SIPC_G_ALL == (1u << 11) - 1, "one isolation rule per bit");

static void
iso_run(size_t i)
{
	char why[256] = "";
	int r;

	if (iso_rules[i].verify == NULL) {
		/* Declared but unverifiable is not a pass. */
		fprintf(stderr, "conformance: %s: declared, but this suite has "
		    "no check for it yet\n",
		    sipc_guarantee_name(iso_rules[i].bit));
		CU_FAIL("declared guarantee without a conformance check");
		return;
	}
	r = iso_rules[i].verify(conf_prov, conf_prov_state, why, sizeof(why));
	/* the verdict either way: what the probe measured */
	fprintf(r == 1 ? stdout : stderr, "conformance: %s: %s (%d)\n",
	    sipc_guarantee_name(iso_rules[i].bit), why, r);
	CU_ASSERT_EQUAL(r, 1);
}

#define ISO_TEST(n) \
	static void test_conformance_isolation_##n(void) { iso_run(n); }
ISO_TEST(0) ISO_TEST(1) ISO_TEST(2) ISO_TEST(3) ISO_TEST(4) ISO_TEST(5)
ISO_TEST(6) ISO_TEST(7) ISO_TEST(8) ISO_TEST(9) ISO_TEST(10)
static void (*const iso_tests[NISO])(void) = {
	test_conformance_isolation_0, test_conformance_isolation_1,
	test_conformance_isolation_2, test_conformance_isolation_3,
	test_conformance_isolation_4, test_conformance_isolation_5,
	test_conformance_isolation_6, test_conformance_isolation_7,
	test_conformance_isolation_8, test_conformance_isolation_9,
	test_conformance_isolation_10,
};

void
conf_isolation_register(const struct sipc_provider_ops *p)
{
	static char names[NISO][64];
	tl_test iso[NISO + 1];
	size_t i, n = 0;

	for (i = 0; i < NISO; i++) {
		const char *g = sipc_guarantee_name(iso_rules[i].bit);

		if (!(conf_declared(p) & iso_rules[i].bit)) {
			printf("conformance: %s: not provided\n", g);
			iso_not_provided++;
			continue;
		}
		snprintf(names[i], sizeof(names[i]), "test_conformance_%s", g);
		iso[n++] = (tl_test){ names[i], iso_tests[i] };
		iso_provided++;
	}
	iso[n] = (tl_test){ NULL, NULL };
	if (n > 0)
		tl_suite("conformance_isolation", iso);
}

void
conf_print_summary(void)
{
	printf("isolation rules: %u provided, %u not provided\n",
	    iso_provided, iso_not_provided);
}

/* The table's rows: what each probe shows a worker cannot do. */
static const struct table_row {
	const char *what;
	verify_fn verify;
} table_rows[CONF_P_COUNT] = {
	[CONF_P_HOST_PID] = { "cannot see a host pid",
	    conf_verify_pid_namespace },
	[CONF_P_HOST_FILES] = { "cannot read a file the host made",
	    conf_verify_host_files },
	[CONF_P_HOST_SOCKETS] = { "cannot open a socket to the host",
	    conf_verify_host_sockets },
	[CONF_P_SECRETS] = { "sees no inherited secret (env, fd)",
	    conf_verify_no_inherited_secrets },
	[CONF_P_TERMINATION] = { "cannot escape termination",
	    conf_verify_tree_containment },
	[CONF_P_LIMITS] = { "resource limits enforced",
	    conf_verify_resource_limits },
};

static struct table_col {
	const char *name;
	int cell[CONF_P_COUNT];
	char why[CONF_P_COUNT][256];
} table_cols[CONF_TABLE_COLS];
static size_t table_ncols;

void
conf_table_column(const char *name, const struct sipc_provider_ops *p,
                  void *st, int ret_cells[CONF_P_COUNT])
{
	struct table_col *c;

	if (table_ncols == CONF_TABLE_COLS)
		abort();
	c = &table_cols[table_ncols++];
	c->name = name;
	for (size_t i = 0; i < CONF_P_COUNT; i++) {
		c->why[i][0] = '\0';
		c->cell[i] = table_rows[i].verify(p, st, c->why[i],
		    sizeof(c->why[i]));
		if (c->cell[i] < 0)
			snprintf(c->why[i], sizeof(c->why[i]), "could not run: "
			    "%s", sipc_strerror(c->cell[i]));
		if (ret_cells != NULL)
			ret_cells[i] = c->cell[i];
	}
}

static const char *
cell_text(int v)
{
	return v == 1 ? "provided" : v == 0 ? "not provided" : "could not run";
}

void
conf_table_print(void)
{
	size_t i, j;

	printf("%-36s", "guarantee");
	for (j = 0; j < table_ncols; j++)
		printf(" | %-13s", table_cols[j].name);
	printf("\n");
	for (i = 0; i < CONF_P_COUNT; i++) {
		printf("%-36s", table_rows[i].what);
		for (j = 0; j < table_ncols; j++)
			printf(" | %-13s", cell_text(table_cols[j].cell[i]));
		printf("\n");
	}
	for (j = 0; j < table_ncols; j++)
		for (i = 0; i < CONF_P_COUNT; i++)
			printf("  %s: %s: %s\n", table_cols[j].name,
			    table_rows[i].what, table_cols[j].why[i]);
}
