/*
 * jread_test.c - reading a journal back: a torn tail (an interrupted
 * append, zeros after a power loss) is cut quietly; a corrupt record (a
 * flipped byte, a damaged magic, a damaged length near the end) ends the
 * reading, is reported, and the file as found is kept.  Real files, a
 * real crash (SIGKILL of the writing child).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal/journal.h"
#include "jtest.h"
#include "testlib.h"

/* The kept copies of a corrupt journal (journal.corrupt.*): how many,
 * and the size of each of the first `max` in *sizes. */
static int
corrupt_copies(off_t *sizes, int max)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(jt_dir);

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "journal.corrupt", 15) != 0)
			continue;
		if (n < max)
			sizes[n] = jt_fsize(e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/* ------------------------------------------------ torn and corrupt */

static void
three_accepted(struct sipc__journal *j)
{
	(void)sipc__journal_accepted(j, 1, "k1", "a", 1, 0);
	(void)sipc__journal_accepted(j, 2, "k2", "b", 1, 0);
	(void)sipc__journal_accepted(j, 3, "k3", "c", 1, 0);
}

/* rules: J3 */
static void
test_jread_torn_tail_cut(void)
{
	struct sipc__journal_stats st;
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	size_t acc = jt_rec_size(SIPC__JR_ACCEPTED), ins = jt_rec_size(SIPC__JR_INSTANCE);
	off_t full;

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_EACH, three_accepted);
	full = jt_fsize("journal");
	CU_ASSERT_EQUAL_FATAL(full, (off_t)(ins + 3 * acc));
	CU_ASSERT_EQUAL_FATAL(truncate(jt_path("journal"), full - 5), 0);
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	sipc__journal_get_stats(j, &st);
	CU_ASSERT_EQUAL(st.torn_bytes, acc - 5);
	CU_ASSERT_EQUAL(st.corrupt, 0);
	CU_ASSERT_EQUAL(st.records_read, 3);
	/* Cut at the last good record, then our INSTANCE appended. */
	CU_ASSERT_EQUAL(jt_fsize("journal"), (off_t)(2 * ins + 2 * acc));
	CU_ASSERT_EQUAL_FATAL(jt_list(j, &u), 2);
	CU_ASSERT_STRING_EQUAL(u[0].key, "k1");
	CU_ASSERT_STRING_EQUAL(u[1].key, "k2");
	free(u);
	CU_ASSERT_EQUAL(corrupt_copies(NULL, 0), 0);
	/* Appends after the cut are read back in full. */
	CU_ASSERT_EQUAL(sipc__journal_accepted(j, 9, "k9", "z", 1, 0), 0);
	CU_ASSERT_EQUAL(sipc__journal_written(j, 9, 0, 1, 1), 0);
	sipc__journal_close(j);
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_EQUAL(jt_list(j, &u), 3);
	free(u);
	sipc__journal_close(j);
	jt_rmstate();
}

/* rules: J3 */
static void
test_jread_zero_filled_tail_is_torn(void)
{
	struct sipc__journal_stats st;
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	off_t full;

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_OFF, three_accepted);
	full = jt_fsize("journal");
	/* What a power loss leaves when the size reached disk, the data
	 * did not: zeros. */
	CU_ASSERT_EQUAL_FATAL(truncate(jt_path("journal"), full + 4096), 0);
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	sipc__journal_get_stats(j, &st);
	CU_ASSERT_EQUAL(st.torn_bytes, 4096);
	CU_ASSERT_EQUAL(st.corrupt, 0);
	CU_ASSERT_EQUAL(jt_list(j, &u), 3);
	free(u);
	sipc__journal_close(j);
	jt_rmstate();
}

static void
flip_byte(off_t off)
{
	int fd = open(jt_path("journal"), O_RDWR);
	uint8_t b;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &b, 1, off), 1);
	b ^= 0x01;
	CU_ASSERT_EQUAL(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static void
check_corrupt_second(off_t delta)
{
	struct sipc__journal_stats st;
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	size_t acc = jt_rec_size(SIPC__JR_ACCEPTED), ins = jt_rec_size(SIPC__JR_INSTANCE);
	off_t full;

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_EACH, three_accepted);
	full = jt_fsize("journal");
	flip_byte((off_t)(ins + acc) + delta);   /* inside record 2 */
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	sipc__journal_get_stats(j, &st);
	CU_ASSERT_EQUAL(st.corrupt, 1);
	CU_ASSERT_EQUAL(st.corrupt_bytes, 2 * acc);
	CU_ASSERT_EQUAL(st.records_read, 2);
	/* Only what came before is used: record 2 is not misread, record 3
	 * (after it) is not trusted. */
	CU_ASSERT_EQUAL_FATAL(jt_list(j, &u), 1);
	CU_ASSERT_EQUAL(u[0].request_id, 1);
	free(u);
	/* The evidence is kept for an operator, under the name stats give. */
	CU_ASSERT_EQUAL(corrupt_copies(NULL, 0), 1);
	CU_ASSERT_EQUAL(jt_fsize(st.corrupt_copy), full);
	CU_ASSERT_EQUAL(st.corrupt_offset, ins + acc);
	sipc__journal_close(j);
	jt_rmstate();
}

/* rules: J3 */
static void
test_jread_corrupt_payload_byte(void)
{
	check_corrupt_second(SIPC__JREC_HDR + 9);    /* a key byte */
}

/* rules: J3 */
static void
test_jread_corrupt_magic_byte(void)
{
	check_corrupt_second(1);
}

/* A damaged length field that makes record 2 of 3 seem to run past the
 * end of the file is not a torn tail: record 3, whole and valid, follows
 * it.  It is reported corrupt (and the file kept), not cut silently. */
/* rules: J3 */
static void
test_jread_corrupt_length_near_tail(void)
{
	struct sipc__journal_stats st;
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	size_t acc = jt_rec_size(SIPC__JR_ACCEPTED), ins = jt_rec_size(SIPC__JR_INSTANCE);
	off_t full, len_at = (off_t)(ins + acc) + 4;
	int fd;
	uint8_t b;

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_EACH, three_accepted);
	full = jt_fsize("journal");
	/* Low byte of record 2's length: + 0x40 runs past the two records
	 * left (2 x acc bytes) while staying under the codec's maximum. */
	CU_ASSERT_FATAL(acc - SIPC__JREC_HDR - 4 + 0x40 > 2 * acc - SIPC__JREC_HDR - 4);
	fd = open(jt_path("journal"), O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &b, 1, len_at), 1);
	b += 0x40;
	CU_ASSERT_EQUAL(pwrite(fd, &b, 1, len_at), 1);
	close(fd);
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	sipc__journal_get_stats(j, &st);
	CU_ASSERT_EQUAL(st.corrupt, 1);
	CU_ASSERT_EQUAL(st.torn_bytes, 0);
	CU_ASSERT_EQUAL(st.corrupt_offset, ins + acc);
	CU_ASSERT_EQUAL(st.corrupt_bytes, 2 * acc);
	CU_ASSERT_EQUAL(jt_fsize(st.corrupt_copy), full);
	CU_ASSERT_EQUAL_FATAL(jt_list(j, &u), 1);
	free(u);
	sipc__journal_close(j);
	jt_rmstate();
}

int
main(void)
{
	tl_suite("jread", (tl_test[]){
	    { "test_jread_torn_tail_cut", test_jread_torn_tail_cut },
	    { "test_jread_zero_filled_tail_is_torn", test_jread_zero_filled_tail_is_torn },
	    { "test_jread_corrupt_payload_byte", test_jread_corrupt_payload_byte },
	    { "test_jread_corrupt_magic_byte", test_jread_corrupt_magic_byte },
	    { "test_jread_corrupt_length_near_tail", test_jread_corrupt_length_near_tail },
	    { NULL, NULL } });
	return tl_run();
}
