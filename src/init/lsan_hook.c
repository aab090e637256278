/*
 * lsan_hook.c - LeakSanitizer stays off in a process under a seccomp
 * filter (sanitizer builds only; empty otherwise).
 *
 * Linked into every program that runs as a sandboxed worker (the test
 * fixtures, sipc-probe, sipc-exec).  LeakSanitizer's check at exit stops
 * the process's threads with a ptrace()ing helper; the sandbox's filter
 * kills a process that calls ptrace, and the sanitizer then waits for
 * the dead helper forever (google/sanitizers#777): the worker never
 * exits.  Outside a filter the leak check runs as usual.  Runs once, at
 * exit, on the exiting thread; no lock.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int __lsan_is_turned_off(void);

int
__lsan_is_turned_off(void)
{
	char line[128];
	int filtered = 1;	/* unreadable status: assume the filter */
	FILE *f;

	if ((f = fopen("/proc/self/status", "re")) == NULL)
		return filtered;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Seccomp:", 8) == 0) {
			filtered = strtol(line + 8, NULL, 10) != 0;
			break;
		}
	}
	fclose(f);
	return filtered;
}
#else
typedef int sipc__lsan_hook_unused;	/* ISO C: no empty translation unit */
#endif
