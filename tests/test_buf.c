/* The growable buffer, the array growth and the JSON string escaper of
 * include/taskfs/buf.h (core/buf.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "taskfs/buf.h"

Test(buf, appends_keep_a_nul_after_the_bytes) {
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  cr_assert_eq(tfs_buf_puts(&b, "ab"), 0);
  cr_assert_eq(tfs_buf_append(&b, "c\0d", 3), 0, "NUL bytes are bytes like any other");
  cr_assert_eq(b.len, 5);
  cr_assert_eq(memcmp(b.s, "abc\0d", 6), 0, "and one more NUL ends the text");
}

Test(buf, printf_appends_and_grows_past_the_first_room) {
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  tfs_buf_puts(&b, "x=");
  char big[5000];
  memset(big, 'y', sizeof big - 1);
  big[sizeof big - 1] = 0;
  cr_assert_eq(tfs_buf_printf(&b, "%d:%s.", 42, big), 0);
  cr_assert_eq(b.len, 2 + 3 + 4999 + 1);
  cr_assert_eq(strncmp(b.s, "x=42:yyy", 8), 0);
  cr_assert_str_eq(b.s + b.len - 2, "y.");
  cr_assert_eq(tfs_buf_printf(&b, "%s", ""), 0, "an empty piece is no error");
  cr_assert_eq(b.len, 5005);
}

Test(buf, take_hands_the_text_over_and_empties_the_buffer) {
  tfs_buf_t b = TFS_BUF_INIT;
  size_t len = 99;
  char *s = tfs_buf_take(&b, &len);
  cr_assert_str_eq(s, "", "nothing appended: an empty text, not NULL");
  cr_assert_eq(len, 0);
  free(s);
  tfs_buf_printf(&b, "%s-%s", "a", "b");
  s = tfs_buf_take(&b, &len);
  cr_assert_str_eq(s, "a-b");
  cr_assert_eq(len, 3);
  cr_assert_null(b.s);
  cr_assert_eq(b.len + b.cap, 0);
  free(s);
}

Test(buf, a_failed_allocation_is_sticky_and_take_gives_null) {
  tfs_buf_t b = TFS_BUF_INIT;
  tfs_buf_puts(&b, "kept");
  cr_assert_eq(tfs_buf_reserve(&b, SIZE_MAX - 2), -ENOMEM);
  cr_assert(b.oom);
  cr_assert_eq(tfs_buf_puts(&b, "more"), -ENOMEM, "later appends do nothing");
  cr_assert_eq(b.len, 4);
  cr_assert_null(tfs_buf_take(&b, NULL));
  cr_assert_null(b.s, "the buffer is freed");
}

Test(buf, reserve_makes_room_without_changing_the_text) {
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  cr_assert_eq(tfs_buf_reserve(&b, 1000), 0);
  cr_assert_geq(b.cap, 1001);
  cr_assert_eq(b.len, 0);
  cr_assert_str_eq(b.s, "");
}

Test(buf, read_takes_a_pipe_to_its_end_and_stops_past_max) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  char chunk[10000];
  memset(chunk, 'z', sizeof chunk);
  cr_assert_eq(write(p[1], chunk, sizeof chunk), (ssize_t)sizeof chunk);
  close(p[1]);
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  cr_assert_eq(tfs_buf_read(&b, p[0], SIZE_MAX), 0);
  close(p[0]);
  cr_assert_eq(b.len, sizeof chunk);
  cr_assert_eq(b.s[b.len], 0);

  cr_assert_eq(pipe(p), 0);
  cr_assert_eq(write(p[1], chunk, sizeof chunk), (ssize_t)sizeof chunk);
  close(p[1]);
  tfs_buf_t small TFS_AUTOBUF = TFS_BUF_INIT;
  cr_assert_eq(tfs_buf_read(&small, p[0], 100), -EFBIG);
  cr_assert_eq(small.len, 101, "one byte past max is read, no more");
  close(p[0]);
}

Test(buf, str_line_ends_a_text_with_one_newline) {
  size_t len;
  char *s = tfs_str_line(strdup("{}"), &len);
  cr_assert_str_eq(s, "{}\n");
  cr_assert_eq(len, 3);
  s = tfs_str_line(s, &len);
  cr_assert_str_eq(s, "{}\n", "one there already: none added");
  cr_assert_eq(len, 3);
  free(s);
  cr_assert_null(tfs_str_line(NULL, &len));
}

Test(buf, grow_doubles_from_first_and_keeps_the_elements) {
  int *v = NULL;
  size_t cap = 0;
  cr_assert_eq(tfs_grow(&v, &cap, 1, sizeof *v, 4), 0);
  cr_assert_eq(cap, 4);
  for (int i = 0; i < 4; i++)
    v[i] = i;
  cr_assert_eq(tfs_grow(&v, &cap, 9, sizeof *v, 4), 0);
  cr_assert_eq(cap, 16);
  cr_assert_eq(v[3], 3);
  cr_assert_eq(tfs_grow(&v, &cap, 16, sizeof *v, 4), 0, "room enough: nothing to do");
  cr_assert_eq(cap, 16);
  int *before = v;
  cr_assert_eq(tfs_grow(&v, &cap, SIZE_MAX / 2, sizeof *v, 4), -ENOMEM, "the size overflows");
  cr_assert_eq(v, before, "the array is left as it was");
  cr_assert_eq(cap, 16);
  free(v);
}

/* Every byte value, and the bytes jansson writes for the same string: the
 * one escaper writes what record.json and the MCP replies always had. */
Test(buf, json_escapes_as_jansson_does) {
  char s[160];
  size_t n = 0;
  for (int c = 1; c < 128; c++)
    s[n++] = (char)c;
  memcpy(s + n, "\xc3\xa9\xe2\x80\xa6", 5); /* é … */
  n += 5;
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  tfs_buf_puts(&b, "\"");
  cr_assert_eq(tfs_buf_json(&b, s, n), 0);
  tfs_buf_puts(&b, "\"");
  json_t *j = json_stringn(s, n);
  char *want = json_dumps(j, JSON_ENCODE_ANY);
  cr_assert_str_eq(b.s, want);
  cr_assert_eq(tfs_json_escaped_len(s, n), b.len - 2);
  free(want);
  json_decref(j);
}

Test(buf, json_keeps_nul_as_an_escape) {
  tfs_buf_t b TFS_AUTOBUF = TFS_BUF_INIT;
  tfs_buf_json(&b, "a\0b\"\\", 5);
  cr_assert_str_eq(b.s, "a\\u0000b\\\"\\\\");
  cr_assert_eq(tfs_json_escaped_len("a\0b\"\\", 5), b.len);
}
