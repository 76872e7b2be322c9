/* The shared text mechanisms of include/taskfs/text.h: signal names both
 * ways, environment names, the worker's environment merge, and switches
 * read from the environment. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskfs/text.h"

/* ---- signal names ------------------------------------------------------ */

Test(text, classic_signals_have_their_names) {
  char buf[TFS_SIGNAME_MAX];
  cr_assert_str_eq(tfs_signal_name(SIGTERM, buf), "SIGTERM");
  cr_assert_str_eq(tfs_signal_name(SIGKILL, buf), "SIGKILL");
  cr_assert_str_eq(tfs_signal_name(SIGSEGV, buf), "SIGSEGV");
  cr_assert_eq(tfs_signal_name(SIGHUP, buf), buf, "the name is written into buf");
}

Test(text, realtime_signals_are_named_as_kill_names_them) {
  char buf[TFS_SIGNAME_MAX];
  int lo = SIGRTMIN, hi = SIGRTMAX, mid = (hi - lo) / 2;
  cr_assert_str_eq(tfs_signal_name(lo, buf), "SIGRTMIN");
  cr_assert_str_eq(tfs_signal_name(lo + 2, buf), "SIGRTMIN+2");
  cr_assert_str_eq(tfs_signal_name(hi, buf), "SIGRTMAX");
  cr_assert_str_eq(tfs_signal_name(hi - 1, buf), "SIGRTMAX-1");
  char want[TFS_SIGNAME_MAX];
  snprintf(want, sizeof want, "SIGRTMIN+%d", mid);
  cr_assert_str_eq(tfs_signal_name(lo + mid, buf), want);
  snprintf(want, sizeof want, "SIGRTMAX-%d", hi - lo - mid - 1);
  cr_assert_str_eq(tfs_signal_name(lo + mid + 1, buf), want);
}

Test(text, numbers_without_a_name_have_one_spelling) {
  char buf[TFS_SIGNAME_MAX];
  cr_assert_str_eq(tfs_signal_name(0, buf), "SIG0");
  cr_assert_str_eq(tfs_signal_name(-3, buf), "SIG-3");
  cr_assert_str_eq(tfs_signal_name(77, buf), "SIG77");
  /* glibc keeps 32 and 33 for itself; they have no abbreviation. */
  if (SIGRTMIN > 33)
    cr_assert_str_eq(tfs_signal_name(32, buf), "SIG32");
}

Test(text, signals_parse_by_name_or_number_in_any_case) {
  cr_assert_eq(tfs_signal_parse("TERM"), SIGTERM);
  cr_assert_eq(tfs_signal_parse("SIGTERM"), SIGTERM);
  cr_assert_eq(tfs_signal_parse("sigterm"), SIGTERM);
  cr_assert_eq(tfs_signal_parse("Kill"), SIGKILL);
  cr_assert_eq(tfs_signal_parse("15"), 15);
  cr_assert_eq(tfs_signal_parse("SIG15"), 15);
  cr_assert_eq(tfs_signal_parse("IOT"), SIGABRT);
  cr_assert_eq(tfs_signal_parse("SIGCLD"), SIGCHLD);
  cr_assert_eq(tfs_signal_parse("POLL"), SIGIO);
  cr_assert_eq(tfs_signal_parse("rtmin+3"), SIGRTMIN + 3);
  cr_assert_eq(tfs_signal_parse("SIGRTMAX"), SIGRTMAX);
  cr_assert_eq(tfs_signal_parse("RTMAX-2"), SIGRTMAX - 2);
}

Test(text, bad_signal_names_are_refused) {
  const char *bad[] = {"",        "SIG",     "0",        "SIG0",   "65",    "1000",       "-9",
                       "+9",      " 9",      "9 ",       "TERM ",  "TERMX", "SIGSIGTERM", "RTMIN+",
                       "RTMIN-1", "RTMAX+1", "RTMIN+99", "RTMINX", "9x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_eq(tfs_signal_parse(bad[i]), -EINVAL, "'%s' was accepted", bad[i]);
  cr_assert_eq(tfs_signal_parse(NULL), -EINVAL);
}

Test(text, every_signal_name_reads_back_to_its_number) {
  char buf[TFS_SIGNAME_MAX];
  for (int sig = 1; sig < NSIG; sig++)
    cr_assert_eq(tfs_signal_parse(tfs_signal_name(sig, buf)), sig, "%d: %s", sig, buf);
}

/* ---- environment names ------------------------------------------------- */

Test(text, env_name_len_is_the_name_before_the_equals_sign) {
  cr_assert_eq(tfs_env_name_len("PATH=/bin"), 4);
  cr_assert_eq(tfs_env_name_len("_=x"), 1);
  cr_assert_eq(tfs_env_name_len("a1_B=="), 4);
  cr_assert_eq(tfs_env_name_len("EMPTY="), 5);
  const char *bad[] = {"PATH", "=x", "1A=x", "A-B=x", "A B=x", "", "\xc3\xa9=x", "A\n=x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_eq(tfs_env_name_len(bad[i]), 0, "'%s' was accepted", bad[i]);
  cr_assert_eq(tfs_env_name_len(NULL), 0);
}

Test(text, env_name_valid_takes_a_bare_name) {
  cr_assert(tfs_env_name_valid("PATH"));
  cr_assert(tfs_env_name_valid("_"));
  cr_assert(tfs_env_name_valid("my_var2"));
  const char *bad[] = {"", "PATH=x", "2X", "A-B", "A B", "A\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_not(tfs_env_name_valid(bad[i]), "'%s' was accepted", bad[i]);
  cr_assert_not(tfs_env_name_valid(NULL));
}

Test(text, the_two_name_checks_agree) {
  const char *names[] = {"PATH", "_x", "x_1", "1x", "a-b", "", "A=B", "\xff"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char entry[32];
    snprintf(entry, sizeof entry, "%s=v", names[i]);
    size_t len = tfs_env_name_len(entry);
    cr_assert_eq(len && len == strlen(names[i]), tfs_env_name_valid(names[i]), "'%s'", names[i]);
  }
}

/* ---- the environment merge --------------------------------------------- */

static size_t count(char **v) {
  size_t n = 0;
  while (v[n])
    n++;
  return n;
}

Test(text, overrides_replace_or_add_and_the_later_wins) {
  char *base[] = {"PATH=/bin", "HOME=/root", "PATHX=1", NULL};
  char *over[] = {"PATH=/opt", "NEW=1", "PATH=/usr", NULL};
  char **env = NULL;
  cr_assert_eq(tfs_env_merge(base, over, &env), 0);
  cr_assert_eq(count(env), 4);
  cr_assert_str_eq(env[0], "HOME=/root");
  cr_assert_str_eq(env[1], "PATHX=1", "a longer name with the same start is another name");
  cr_assert_str_eq(env[2], "NEW=1");
  cr_assert_str_eq(env[3], "PATH=/usr");
  cr_assert_eq(env[3], over[2], "entries are borrowed, not copied");
  free(env);
}

Test(text, a_merge_of_nothing_is_the_base) {
  char *base[] = {"A=1", "B=2", NULL};
  char **env = NULL;
  cr_assert_eq(tfs_env_merge(base, NULL, &env), 0);
  cr_assert_eq(count(env), 2);
  cr_assert_eq(env[0], base[0]);
  free(env);
  cr_assert_eq(tfs_env_merge(NULL, NULL, &env), 0);
  cr_assert_eq(count(env), 0);
  free(env);
}

Test(text, a_bad_override_is_refused_and_nothing_is_built) {
  char *base[] = {"A=1", NULL};
  char *over[] = {"B=2", "NOEQUALS", NULL};
  char **env = (char **)0x1;
  cr_assert_eq(tfs_env_merge(base, over, &env), -EINVAL);
  cr_assert_eq(env, (char **)0x1, "out is left alone");
}

/* ---- switches ---------------------------------------------------------- */

Test(text, a_switch_is_on_unless_unset_empty_or_zero) {
  const char *name = "TASKFS_TEST_TEXT_FLAG";
  unsetenv(name);
  cr_assert_not(tfs_env_flag(name));
  setenv(name, "", 1);
  cr_assert_not(tfs_env_flag(name));
  setenv(name, "0", 1);
  cr_assert_not(tfs_env_flag(name));
  setenv(name, "1", 1);
  cr_assert(tfs_env_flag(name));
  setenv(name, "yes", 1);
  cr_assert(tfs_env_flag(name));
  setenv(name, "00", 1);
  cr_assert(tfs_env_flag(name), "only \"0\" itself is off");
  unsetenv(name);
}
