/*
 * conformance.h - the provider contract (src/provider/provider.h) as an
 * executable suite.  It drives a provider directly through its ops
 * table, playing the supervisor's part by hand on the channels launch
 * hands back, so any implementation (the local adapter, a future
 * isolated one) is held to the same rules.
 *
 * Threads: everything runs on the CUnit thread, which stands in for the
 * supervisor's reaper thread (the only thread that calls provider ops).
 */
#ifndef SIPC_CONFORMANCE_H
#define SIPC_CONFORMANCE_H

#include <stddef.h>

#include "provider/provider.h"

/*
 * Register the functional rules (one CUnit test each) and the isolation
 * rules for `p`.  An isolation rule whose guarantee `p` declares becomes
 * a CUnit test that must verify it; one it does not declare is printed
 * as "conformance: <rule>: not provided" and counted, never registered
 * as a passing test.  `prov_state` is passed to launch.  Call once,
 * before tl_run().
 */
void conf_register(const struct sipc_provider_ops *p, void *prov_state);

/* Register the isolation rules alone (conf_register calls it). */
void conf_isolation_register(const struct sipc_provider_ops *p);

/* Print "isolation rules: N provided, M not provided".  After tl_run(). */
void conf_print_summary(void);

/*
 * Isolation verifiers, usable on their own (main programs use them to
 * prove a verifier can fail).  Each launches a fixture through `p`.
 * Returns 1 when the guarantee holds, 0 when it is violated (why says
 * how), or a negative error when the check could not run.
 * isolation.c: tree containment (the forker fixture).
 */
int conf_verify_tree_containment(const struct sipc_provider_ops *p, void *st,
                                 char *why, size_t len);
/*
 * probes.c: the probe fixture judged by the start-up probe's judge of
 * the guarantee (src/provider/provider.h).  conf_judge launches it with the
 * bait held and judges `bit` (0: the descriptor half of
 * no_inherited_secrets alone; fork_limit for resource_limits).
 * no_inherited_secrets also sets a host canary variable for the launch.
 */
int conf_judge(const struct sipc_provider_ops *p, void *st, unsigned bit,
               unsigned fork_limit, char *why, size_t len);
int conf_verify_pid_namespace(const struct sipc_provider_ops *p, void *st,
                              char *why, size_t len);
int conf_verify_no_inherited_secrets(const struct sipc_provider_ops *p,
                                     void *st, char *why, size_t len);
int conf_verify_separate_user(const struct sipc_provider_ops *p, void *st,
                              char *why, size_t len);
int conf_verify_no_privilege(const struct sipc_provider_ops *p, void *st,
                             char *why, size_t len);
int conf_verify_syscall_filter(const struct sipc_provider_ops *p, void *st,
                               char *why, size_t len);
int conf_verify_limits(const struct sipc_provider_ops *p, void *st, char *why,
                       size_t len);
int conf_verify_filesystem_rules(const struct sipc_provider_ops *p, void *st,
                                 char *why, size_t len);
int conf_verify_host_files(const struct sipc_provider_ops *p, void *st,
                           char *why, size_t len);
int conf_verify_host_sockets(const struct sipc_provider_ops *p, void *st,
                             char *why, size_t len);
int conf_verify_no_inherited_fds(const struct sipc_provider_ops *p, void *st,
                                 char *why, size_t len);
int conf_verify_resource_limits(const struct sipc_provider_ops *p, void *st,
                                char *why, size_t len);

/*
 * Launch `fixture` through p, wait for its HELLO, send one request
 * `req` and copy the reply's payload, as text, to `text`.  Returns 0 or
 * a negative error; the worker is always ended and released.
 */
int conf_ask(const struct sipc_provider_ops *p, void *st, const char *fixture,
             const char *req, char *text, size_t len);

/*
 * The table of guarantees per provider: conf_table_column runs every
 * isolation probe for real against p (declared or not) and keeps the
 * results as column `name` (up to CONF_TABLE_COLS columns); each cell is
 * 1 provided, 0 not provided, <0 could not run.  conf_table_print prints
 * "guarantee | col..." with one row per probe, then each cell's reason.
 */
#define CONF_TABLE_COLS 4
enum conf_probe {
	CONF_P_HOST_PID, CONF_P_HOST_FILES, CONF_P_HOST_SOCKETS,
	CONF_P_SECRETS, CONF_P_TERMINATION, CONF_P_LIMITS, CONF_P_COUNT
};
void conf_table_column(const char *name, const struct sipc_provider_ops *p,
                       void *st, int ret_cells[CONF_P_COUNT]);
void conf_table_print(void);

#endif
