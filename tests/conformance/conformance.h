/*
 * conformance.h - the provider contract (src/provider.h) as an
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

#include "provider.h"

/*
 * Register the functional rules (one CUnit test each) and the isolation
 * rules for `p`.  An isolation rule whose guarantee `p` declares becomes
 * a CUnit test that must verify it; one it does not declare is printed
 * as "conformance: <rule>: not provided" and counted, never registered
 * as a passing test.  `prov_state` is passed to launch.  Call once,
 * before tl_run().
 */
void conf_register(const struct sipc__provider *p, void *prov_state);

/* Register the isolation rules alone (conf_register calls it). */
void conf_isolation_register(const struct sipc__provider *p);

/* Print "isolation rules: N provided, M not provided".  After tl_run(). */
void conf_print_summary(void);

/*
 * Isolation verifiers, usable on their own (main programs use them to
 * prove a verifier can fail).  Each launches a fixture through `p`.
 * Returns 1 when the guarantee holds, 0 when it is violated (why says
 * how), or a negative error when the check could not run.
 */
int conf_verify_pid_namespace(const struct sipc__provider *p, void *st,
                              char *why, size_t len);
int conf_verify_no_inherited_secrets(const struct sipc__provider *p,
                                     void *st, char *why, size_t len);
int conf_verify_tree_containment(const struct sipc__provider *p, void *st,
                                 char *why, size_t len);

#endif
