/*
 * fuzz_userspec.c - "user[:group]" against a container's own /etc/passwd and /etc/group
 * (src/userspec.c).
 *
 * Input: the user spec, a NUL, the passwd text, a NUL, the group text. A missing part is
 * a file that is absent (NULL); the texts are passed as exactly-sized heap blocks without
 * a terminating NUL, as they arrive from the archive endpoint. Checked: a numeric user
 * resolves to that number, a numeric group to that number, and an unknown name fails
 * with an invalid_state error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "fuzz_common.h"
#include "codec/userspec.h"

static int all_digits(const char *s, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t spec_len = 0, rest_len = 0, passwd_len = 0, group_len = 0;
  const uint8_t *rest = NULL, *group_src = NULL;
  int has_passwd = fuzz_split_nul(data, size, &spec_len, &rest, &rest_len);
  int has_group = 0;
  if (has_passwd) has_group = fuzz_split_nul(rest, rest_len, &passwd_len, &group_src, &group_len);
  else passwd_len = 0;

  char *spec = fuzz_strndup(data, spec_len);
  uint8_t *passwd = has_passwd ? fuzz_dup(rest, passwd_len) : NULL;
  uint8_t *group = has_group ? fuzz_dup(group_src, group_len) : NULL;

  uint32_t uid = 0xDEADBEEF, gid = 0xDEADBEEF;
  err_t err;
  err_init(&err);
  int rc = userspec_resolve(spec, (const char *)passwd, passwd_len, (const char *)group, group_len, &uid, &gid,
                            &err);
  FUZZ_CHECK(rc == 0 || rc == -1, "userspec_resolve returned %d", rc);
  FUZZ_CHECK((rc == -1) == err_is_set(&err), "rc %d, error set %d", rc, err_is_set(&err));

  const char *colon = strchr(spec, ':');
  size_t user_len = colon ? (size_t)(colon - spec) : strlen(spec);
  const char *grp = colon ? colon + 1 : "";
  int numeric_user = user_len == 0 || (all_digits(spec, user_len) && user_len <= 10 &&
                                       strtoull(spec, NULL, 10) <= 4294967294ull);
  int numeric_group = all_digits(grp, strlen(grp)) && strlen(grp) <= 10 && strtoull(grp, NULL, 10) <= 4294967294ull;
  if (numeric_user && (grp[0] == 0 || numeric_group)) FUZZ_CHECK(rc == 0, "\"%s\" failed: %s", spec, err.message);
  if (rc == 0) {
    if (numeric_user) FUZZ_CHECK(uid == (user_len ? (uint32_t)strtoull(spec, NULL, 10) : 0), "\"%s\" -> uid %u", spec, uid);
    if (numeric_group) FUZZ_CHECK(gid == (uint32_t)strtoull(grp, NULL, 10), "\"%s\" -> gid %u", spec, gid);
    FUZZ_CHECK(uid != 0xFFFFFFFFu && gid != 0xFFFFFFFFu, "\"%s\" -> %u:%u", spec, uid, gid);
  } else {
    FUZZ_CHECK(err.code != NULL && strcmp(err.code, CODE_INVALID_STATE) == 0, "code %s", err.code);
  }
  err_clear(&err);
  free(spec);
  free(passwd);
  free(group);
  return 0;
}
