/* The checks of every store open (core/store.c): a store is used only if
 * its directory, tasks/ and keys/ are the caller's and writable by nobody
 * else; a refresh re-adopts only a store that passes them and refuses the
 * handle otherwise; a foreign store (TFS_STORE_FOREIGN) is read-only; a
 * supervisor's bound task directory is the only one its handle uses. The
 * real-user versions are in tests/test_hard_users.c. */
#include "tests/core_fixture.h"

TestSuite(store_check, .init = fx_setup, .fini = fx_teardown, .timeout = 60);

static const char *const parts[] = {"", "/tasks", "/keys"};

/* Each of the three directories, chowned away or opened to writes, makes
 * every open refuse the store, with a sentence that names it. */
Test(store_check, a_store_of_another_user_or_open_to_writes_is_refused_with_why) {
  char state[4096], why[512];
  snprintf(state, sizeof state, "%s/state", fx_dir);
  tfs_store_t *s;
  for (int i = 0; i < 3; i++) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s%s", state, parts[i]);
    cr_assert_eq(chown(dir, 65534, 65534), 0);
    cr_assert_eq(tfs_store_open_flags(state, 0, &s, why, sizeof why), TFS_EFOREIGN, "%s", dir);
    cr_assert(strstr(why, dir) && strstr(why, "uid 65534"), "why: %s", why);
    cr_assert_eq(tfs_store_open(state, &s), TFS_EFOREIGN);
    cr_assert_eq(tfs_store_open_existing(state, &s), TFS_EFOREIGN);
    cr_assert_eq(chown(dir, getuid(), getgid()), 0);
    for (mode_t m = 0720; m <= 0702; m = m == 0720 ? 0702 : 01000) {
      cr_assert_eq(chmod(dir, m), 0);
      cr_assert_eq(tfs_store_open_flags(state, TFS_STORE_CREATE, &s, why, sizeof why), TFS_EUNSAFE,
                   "%s %o", dir, m);
      cr_assert(strstr(why, dir) && strstr(why, m == 0720 ? "its group" : "others"), "%s", why);
    }
    cr_assert_eq(chmod(dir, 0700), 0);
  }
  /* Read bits only: a writer takes them away, a reader leaves them. */
  cr_assert_eq(chmod(fx_path("tasks"), 0755), 0);
  cr_assert_eq(tfs_store_open_existing(state, &s), 0);
  tfs_store_close(s);
  struct stat st;
  cr_assert_eq(stat(fx_path("tasks"), &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0755);
  cr_assert_eq(tfs_store_open(state, &s), 0);
  tfs_store_close(s);
  cr_assert_eq(stat(fx_path("tasks"), &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0700);
  cr_assert_str_eq(tfs_strerror(TFS_EUNSAFE),
                   "other users may write to the store, so it is refused; make it private "
                   "(chmod 700) or use another (--state-dir)");
}

/* Nothing is made inside a directory before it passed. */
Test(store_check, nothing_is_created_in_a_refused_store) {
  char other[4096];
  snprintf(other, sizeof other, "%s/other", fx_dir);
  cr_assert_eq(mkdir(other, 0700), 0);
  cr_assert_eq(chown(other, 65534, 65534), 0);
  tfs_store_t *s;
  cr_assert_eq(tfs_store_open(other, &s), TFS_EFOREIGN);
  char *out = NULL;
  cr_assert_eq(tu_sh(&out, "ls -A '%s'", other), 0);
  cr_assert_str_empty(out, "made in a foreign store: %s", out);
  free(out);
}

/* Another user's store, asked for: every read works, every write is
 * -EROFS, a lost task reads lost and is not settled. */
Test(store_check, a_foreign_store_is_read_only) {
  char state[4096], id[TFS_ID_MAX + 1], why[512];
  char *argv[] = {"/bin/true", NULL};
  tfs_task_spec_t spec = {.argv = argv, .cwd = "/", .key = "k"};
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), 0);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  rec.state = TFS_RUNNING; /* and no supervisor: reads lost */
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  snprintf(state, sizeof state, "%s/state", fx_dir);
  cr_assert_eq(tu_sh(NULL, "chown -R 65534:65534 '%s'", state), 0);
  tfs_store_t *s;
  cr_assert_eq(
      tfs_store_open_flags(state, TFS_STORE_CREATE | TFS_STORE_FOREIGN, &s, why, sizeof why),
      -EINVAL);
  cr_assert_eq(tfs_store_open_flags(state, TFS_STORE_FOREIGN, &s, why, sizeof why), 0, "%s", why);
  char **ids;
  size_t n;
  cr_assert_eq(tfs_task_ids(s, &ids, &n), 0);
  cr_assert_eq(n, 1);
  tfs_ids_free(ids, n);
  char got[TFS_ID_MAX + 1];
  cr_assert_eq(tfs_task_resolve(s, "k", got), 0);
  cr_assert_eq(tfs_task_load(s, id, &rec), 0);
  cr_assert_eq(rec.state, TFS_LOST);
  cr_assert_eq(tfs_task_settle_lost(s, id), 0);
  cr_assert_eq(tfs_task_save(s, &rec), -EROFS);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_ended(s, id, NULL), 1);
  cr_assert_eq(tfs_task_create(s, &spec, got, NULL), -EROFS);
  cr_assert_eq(tfs_cancel_request(s, id, "root"), -EROFS);
  cr_assert_eq(tfs_cancel_clear(s, id), -EROFS);
  cr_assert_eq(tfs_task_forget(s, id), -EROFS);
  cr_assert_eq(tfs_task_prune(s, 0), -EROFS);
  cr_assert_eq(tfs_store_acquire(s, "cli", NULL), -EROFS);
  cr_assert_eq(tfs_task_lock(s, id), -EROFS);
  cr_assert_eq(tfs_transcript_open_append(s, id), -EROFS);
  cr_assert_eq(tfs_doorbell_open(s, id), -EROFS);
  cr_assert_eq(tfs_task_file_remove(s, id, TFS_FILE_TRANSCRIPT), -EROFS);
  tfs_store_close(s);
  /* Nothing in it is ours. */
  char *out = NULL;
  cr_assert_eq(tu_sh(&out, "find '%s' ! -user 65534", state), 0);
  cr_assert_str_empty(out, "written into a foreign store: %s", out);
  free(out);
  /* Its parts must all be its owner's. */
  cr_assert_eq(chown(fx_path("keys"), getuid(), getgid()), 0);
  cr_assert_eq(tfs_store_open_flags(state, TFS_STORE_FOREIGN, &s, why, sizeof why), TFS_EFOREIGN);
  cr_assert(strstr(why, "the store's owner"), "%s", why);
  cr_assert_eq(tu_sh(NULL, "chown -R %d:%d '%s'", (int)getuid(), (int)getgid(), state), 0);
}

/* A refresh checks the store it holds and any store it would adopt; a
 * refused handle answers every call with the refusal, then serves again
 * once the path names a store that passes. */
Test(store_check, a_refresh_refuses_and_then_serves_again) {
  char id[TFS_ID_MAX + 1], state[4096];
  char *argv[] = {"/bin/true", NULL};
  tfs_task_spec_t spec = {.argv = argv, .cwd = "/"};
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), 0);
  cr_assert_eq(tfs_store_refresh(fx_store), 0);
  cr_assert_null(tfs_store_refusal(fx_store));
  /* The same store, opened to writes in place. */
  cr_assert_eq(chmod(fx_path("tasks"), 0777), 0);
  cr_assert_eq(tfs_store_refresh(fx_store), TFS_EUNSAFE);
  cr_assert(tfs_store_refusal(fx_store) && strstr(tfs_store_refusal(fx_store), "0777"));
  char **ids;
  size_t n;
  tfs_record_t rec;
  struct stat st;
  cr_assert_eq(tfs_task_ids(fx_store, &ids, &n), TFS_EUNSAFE);
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), TFS_EUNSAFE);
  tfs_record_free(&rec);
  cr_assert_eq(tfs_task_stat(fx_store, id, &st), TFS_EUNSAFE);
  cr_assert_eq(tfs_store_stat(fx_store, &st), TFS_EUNSAFE);
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), TFS_EUNSAFE);
  tfs_store_t *other;
  cr_assert_eq(tfs_store_reopen(fx_store, &other), TFS_EUNSAFE);
  cr_assert_eq(chmod(fx_path("tasks"), 0700), 0);
  cr_assert_eq(tfs_store_refresh(fx_store), 1);
  cr_assert_null(tfs_store_refusal(fx_store));
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  tfs_record_free(&rec);
  /* Replaced by another user's: refused; gone: gone; ours again: served. */
  snprintf(state, sizeof state, "%s/state", fx_dir);
  cr_assert_eq(tu_sh(NULL,
                     "rm -rf '%s' && mkdir -p '%s/tasks' '%s/keys' && chmod -R 700 '%s' && "
                     "chown -R 65534:65534 '%s'",
                     state, state, state, state, state),
               0);
  cr_assert_eq(tfs_store_refresh(fx_store), TFS_EFOREIGN);
  cr_assert(strstr(tfs_store_refusal(fx_store), "uid 65534"));
  cr_assert_eq(tfs_task_ids(fx_store, &ids, &n), TFS_EFOREIGN);
  cr_assert_eq(tu_sh(NULL, "rm -rf '%s'", state), 0);
  cr_assert_eq(tfs_store_refresh(fx_store), -ENOENT);
  tfs_store_t *fresh;
  cr_assert_eq(tfs_store_open(state, &fresh), 0);
  tfs_store_close(fresh);
  cr_assert_eq(tfs_store_refresh(fx_store), 1);
  cr_assert_eq(tfs_task_ids(fx_store, &ids, &n), 0);
  cr_assert_eq(n, 0);
  tfs_ids_free(ids, n);
}

/* A bound task directory: checked when bound, then the only one the
 * handle uses for that id, whatever tasks/<id> names later. */
Test(store_check, a_bound_task_dir_is_the_only_one_used) {
  char id[TFS_ID_MAX + 1], why[512];
  char *argv[] = {"/bin/true", NULL};
  tfs_task_spec_t spec = {.argv = argv, .cwd = "/"};
  cr_assert_eq(tfs_task_create(fx_store, &spec, id, NULL), 0);
  char *dir = strdup(fx_path("tasks/")), *moved = strdup(fx_path("moved"));
  dir = realloc(dir, strlen(dir) + strlen(id) + 1);
  strcat(dir, id);
  /* Refused while another user's or open to writes. */
  cr_assert_eq(chown(dir, 65534, 65534), 0);
  cr_assert_eq(tfs_store_bind_task(fx_store, id, why, sizeof why), TFS_EFOREIGN);
  cr_assert(strstr(why, id), "%s", why);
  cr_assert_eq(chown(dir, getuid(), getgid()), 0);
  cr_assert_eq(chmod(dir, 0777), 0);
  cr_assert_eq(tfs_store_bind_task(fx_store, id, why, sizeof why), TFS_EUNSAFE);
  cr_assert_eq(chmod(dir, 0700), 0);
  cr_assert_eq(tfs_store_bind_task(fx_store, "not-an-id", why, sizeof why), TFS_EBADID);
  cr_assert_eq(tfs_store_bind_task(fx_store, id, why, sizeof why), 0);
  /* Swapped for another directory: the bound one is used. */
  cr_assert_eq(rename(dir, moved), 0);
  cr_assert_eq(mkdir(dir, 0700), 0);
  tfs_record_t rec;
  cr_assert_eq(tfs_task_load(fx_store, id, &rec), 0);
  rec.state = TFS_COMPLETED;
  cr_assert_eq(tfs_task_save(fx_store, &rec), 0);
  tfs_record_free(&rec);
  struct stat st;
  cr_assert_eq(tfs_task_file_stat(fx_store, id, TFS_FILE_RECORD, &st), 0);
  cr_assert_eq(tfs_task_stat(fx_store, id, &st), 0);
  char *out = NULL;
  cr_assert_eq(tu_sh(&out, "ls -A '%s'; echo --; grep -c completed '%s/record.json'", dir, moved),
               0);
  cr_assert_str_eq(out, "--\n1\n", "%s", out);
  free(out);
  /* Another id is reached by name as before. */
  cr_assert_eq(tfs_task_stat(fx_store, "mi4x7k2p-3fz9qa", &st), TFS_ENOTASK);
  free(dir);
  free(moved);
}
