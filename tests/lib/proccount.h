/*
 * proccount.h - counts of this process's descriptors, threads and
 * children from /proc, for leak checks.  No CUnit: the soak links it.
 */
#ifndef SIPC_PROCCOUNT_H
#define SIPC_PROCCOUNT_H

int tl_count_fds(void);
/* Descriptors of process `pid` (0: this one) whose link target contains
 * `needle` ("memfd:name"); -1 if its fd directory cannot be read. */
int tl_count_fds_to(int pid, const char *needle);
int tl_count_threads(void);
/* Children of this process (any state) and zombie children. */
int tl_count_children(void);
int tl_count_zombie_children(void);

#endif
