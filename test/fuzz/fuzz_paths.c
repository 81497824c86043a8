/*
 * fuzz_paths.c - sandbox path rules and Node's path.posix ports (src/paths.c).
 *
 * Input: two paths separated by a NUL (the second is empty without one). Checked:
 *  - paths_normalize on the whole input (NULs included, as a JavaScript string may
 *    hold them): NULs are refused; an accepted path is relative, has no ".." segment,
 *    is "." only with allowRoot, and normalizes to itself;
 *  - posix_normalize_n is idempotent; posix_dirname_n gives a prefix of its input (or
 *    ".", "/", "//");
 *  - posix_relative_n(a, b): resolving it from a gives b, as path.resolve(a,
 *    path.relative(a, b)) === path.resolve(b) in Node (both resolved from "/");
 *  - paths_argument gives the same path within the bounds and refuses it beyond;
 *  - paths_container(a, b) with an absolute workdir a never leaves it: the result
 *    is normalize(a) or below it;
 *  - paths_parent(b);
 *  - the tools' workdir mode, paths_normalize_in(b, workdir a): without a workdir it
 *    is paths_normalize; a relative b is judged as without one; an accepted b is a
 *    relative path without "..", idempotent, and joined back onto the workdir it resolves
 *    to where b resolves; an absolute b that resolves inside an absolute workdir is accepted
 *    (unless it is the workdir itself without allowRoot), and one outside it is refused.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "fuzz_common.h"
#include "codec/paths.h"

static int has_dotdot_segment(const char *p, size_t n) {
  size_t i = 0;
  while (i <= n) {
    size_t j = i;
    while (j < n && p[j] != '/') j++;
    if (j - i == 2 && p[i] == '.' && p[i + 1] == '.') return 1;
    i = j + 1;
  }
  return 0;
}

/* path.resolve(x) with "/" as the working directory, trailing separator removed. */
static char *resolve_root(const char *x, size_t n, size_t *out_len) {
  char *tmp = malloc(n + 2);
  if (tmp == NULL) abort();
  tmp[0] = '/';
  memcpy(tmp + 1, x, n);
  size_t len = 0;
  char *r = posix_normalize_n(tmp, n + 1, &len);
  free(tmp);
  if (r == NULL) abort();
  while (len > 1 && r[len - 1] == '/') r[--len] = 0;
  *out_len = len;
  return r;
}

static void check_sandbox_normalize(const uint8_t *data, size_t size, int allow_root) {
  err_t err;
  err_init(&err);
  char *in = (char *)fuzz_dup(data, size);
  char *p = paths_normalize(in, size, allow_root, &err);
  free(in);
  FUZZ_CHECK((p == NULL) == err_is_set(&err), "result %p, error set %d", (void *)p, err_is_set(&err));
  if (size > 0 && memchr(data, 0, size) != NULL) FUZZ_CHECK(p == NULL, "a path with a NUL byte was accepted");
  if (p != NULL) {
    size_t n = strlen(p);
    FUZZ_CHECK(n > 0 && p[0] != '/', "accepted \"%s\"", p);
    FUZZ_CHECK(!has_dotdot_segment(p, n), "accepted \"%s\" with a .. segment", p);
    FUZZ_CHECK(allow_root || strcmp(p, ".") != 0, "\".\" accepted without allowRoot");
    FUZZ_CHECK(strchr(p, '\\') == NULL, "backslash left in \"%s\"", p);
    char *again = paths_normalize(p, n, allow_root, &err);
    FUZZ_CHECK(again != NULL && strcmp(again, p) == 0, "\"%s\" normalizes to \"%s\"", p,
               again ? again : err.message);
    free(again);
  } else {
    FUZZ_CHECK(err.code != NULL && strcmp(err.code, CODE_INVALID_PATH) == 0, "code %s", err.code);
  }
  /* The argument form: the same path within the bounds, refused beyond them. */
  err_t arg_err;
  err_init(&arg_err);
  in = (char *)fuzz_dup(data, size);
  char *arg = paths_argument(in, size, allow_root, &arg_err);
  free(in);
  if (p == NULL) {
    FUZZ_CHECK(arg == NULL, "an argument accepted where the path is not");
  } else {
    int within = strlen(p) <= SANDBOX_PATH_MAX_BYTES && paths_depth(p) <= SANDBOX_PATH_MAX_DEPTH;
    FUZZ_CHECK(within ? (arg != NULL && strcmp(arg, p) == 0) : (arg == NULL && strcmp(arg_err.code, CODE_INVALID_PATH) == 0),
               "argument form of \"%s\" (within bounds: %d)", p, within);
  }
  free(arg);
  err_clear(&arg_err);
  free(p);
  err_clear(&err);
}

/* Whether the resolved path p (resolve_root form) is base or below it (base resolved too). */
static int resolved_inside(const char *p, size_t pl, const char *base, size_t bl) {
  if (bl == 1) return 1; /* "/" */
  return pl >= bl && memcmp(p, base, bl) == 0 && (pl == bl || p[bl] == '/');
}

static void check_workdir_mode(const char *workdir, size_t wl, const char *b, size_t bl, int allow_root) {
  err_t plain_err, none_err, in_err;
  err_init(&plain_err);
  err_init(&none_err);
  err_init(&in_err);
  char *plain = paths_normalize(b, bl, allow_root, &plain_err);
  char *none = paths_normalize_in(b, bl, allow_root, NULL, 0, &none_err);
  FUZZ_CHECK((plain == NULL) == (none == NULL) &&
                 (plain ? strcmp(plain, none) == 0 : strcmp(plain_err.message, none_err.message) == 0),
             "workdir NULL differs from paths_normalize on \"%s\"", b);
  char *in = paths_normalize_in(b, bl, allow_root, workdir, wl, &in_err);
  FUZZ_CHECK((in == NULL) == err_is_set(&in_err), "result %p, error set %d", (void *)in, err_is_set(&in_err));
  int absolute_workdir = wl > 0 && workdir[0] == '/';
  int relative_refusal = plain == NULL && strncmp(plain_err.message, "Sandbox path must be relative: ", 31) == 0;
  if (!relative_refusal || !absolute_workdir) {
    /* Only an absolute input in an absolute workdir is judged differently. */
    FUZZ_CHECK((plain == NULL) == (in == NULL) &&
                   (plain ? strcmp(plain, in) == 0 : strcmp(plain_err.message, in_err.message) == 0),
               "workdir \"%s\" changed the verdict on \"%s\"", workdir, b);
  } else {
    char *slashed = fuzz_strndup((const uint8_t *)b, bl);
    for (size_t i = 0; i < bl; i++)
      if (slashed[i] == '\\') slashed[i] = '/';
    size_t rl = 0, wrl = 0;
    char *target = resolve_root(slashed, bl, &rl);
    char *base = resolve_root(workdir, wl, &wrl);
    int inside = resolved_inside(target, rl, base, wrl);
    int is_root = rl == wrl && memcmp(target, base, rl) == 0;
    if (in != NULL) {
      size_t n = strlen(in);
      FUZZ_CHECK(n > 0 && in[0] != '/' && !has_dotdot_segment(in, n), "accepted \"%s\" as \"%s\"", b, in);
      FUZZ_CHECK(allow_root || strcmp(in, ".") != 0, "\".\" accepted without allowRoot");
      err_t again_err;
      err_init(&again_err);
      char *again = paths_normalize(in, n, allow_root, &again_err);
      FUZZ_CHECK(again != NULL && strcmp(again, in) == 0, "\"%s\" normalizes to \"%s\"", in,
                 again ? again : again_err.message);
      free(again);
      err_clear(&again_err);
      /* Joined back onto the workdir, it names what b named. */
      char *joined = posix_join_n(workdir, wl, in, n, NULL);
      if (joined == NULL) abort();
      size_t jl = 0;
      char *back = resolve_root(joined, strlen(joined), &jl);
      FUZZ_CHECK(jl == rl && memcmp(back, target, rl) == 0, "\"%s\" in \"%s\" became \"%s\", which is \"%s\"", b,
                 workdir, in, back);
      FUZZ_CHECK(inside, "\"%s\" is outside \"%s\" but was accepted as \"%s\"", b, workdir, in);
      free(joined);
      free(back);
    } else {
      FUZZ_CHECK(strcmp(in_err.code, CODE_INVALID_PATH) == 0, "code %s", in_err.code);
      FUZZ_CHECK(!inside || (is_root && !allow_root), "\"%s\" inside \"%s\" refused: %s", b, workdir,
                 in_err.message);
    }
    free(slashed);
    free(target);
    free(base);
  }
  free(plain);
  free(none);
  free(in);
  err_clear(&plain_err);
  err_clear(&none_err);
  err_clear(&in_err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_sandbox_normalize(data, size, 0);
  check_sandbox_normalize(data, size, 1);

  size_t a_len = 0, b_len = 0;
  const uint8_t *b_src = NULL;
  fuzz_split_nul(data, size, &a_len, &b_src, &b_len);
  const uint8_t *nul = b_src ? memchr(b_src, 0, b_len) : NULL;
  if (nul) b_len = (size_t)(nul - b_src); /* both are C strings from here on */
  char *a = fuzz_strndup(data, a_len);
  char *b = fuzz_strndup(b_src ? b_src : (const uint8_t *)"", b_len);

  size_t n1 = 0, n2 = 0;
  char *norm = posix_normalize_n(a, a_len, &n1);
  FUZZ_CHECK(norm != NULL && strlen(norm) == n1, "posix_normalize_n");
  char *norm2 = posix_normalize_n(norm, n1, &n2);
  FUZZ_CHECK(n1 == n2 && strcmp(norm, norm2) == 0, "normalize(\"%s\") = \"%s\" but normalize of that = \"%s\"", a,
             norm, norm2);
  free(norm);
  free(norm2);

  char *dir = posix_dirname_n(a, a_len, &n1);
  FUZZ_CHECK(dir != NULL, "posix_dirname_n");
  FUZZ_CHECK(strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0 || strcmp(dir, "//") == 0 ||
                 (n1 < a_len && memcmp(dir, a, n1) == 0),
             "dirname(\"%s\") = \"%s\"", a, dir);
  free(dir);

  char *joined = posix_join_n(a, a_len, b, b_len, &n1);
  FUZZ_CHECK(joined != NULL && strlen(joined) == n1, "posix_join_n");
  free(joined);

  char *rel = posix_relative_n(a, a_len, b, b_len, &n1);
  FUZZ_CHECK(rel != NULL && strlen(rel) == n1, "posix_relative_n");
  FUZZ_CHECK(n1 == 0 || rel[0] != '/', "relative(\"%s\", \"%s\") = \"%s\" is absolute", a, b, rel);
  {
    size_t cl = a_len + 1 + n1;
    char *combined = malloc(cl + 1);
    if (combined == NULL) abort();
    memcpy(combined, a, a_len);
    combined[a_len] = '/';
    memcpy(combined + a_len + 1, rel, n1);
    combined[cl] = 0;
    size_t ll = 0, rl = 0;
    char *lhs = resolve_root(combined, cl, &ll);
    char *rhs = resolve_root(b, b_len, &rl);
    FUZZ_CHECK(ll == rl && strcmp(lhs, rhs) == 0,
               "relative(\"%s\", \"%s\") = \"%s\", resolved from the first gives \"%s\", not \"%s\"", a, b, rel,
               lhs, rhs);
    free(combined);
    free(lhs);
    free(rhs);
  }
  free(rel);

  err_t err;
  err_init(&err);
  char *cp = paths_container(a, b, &err);
  FUZZ_CHECK((cp == NULL) == err_is_set(&err), "result %p, error set %d", (void *)cp, err_is_set(&err));
  if (cp != NULL && a[0] == '/') {
    char *base = posix_normalize(a);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/') bl--;
    int inside = strncmp(cp, base, bl) == 0 && (cp[bl] == 0 || cp[bl] == '/' || bl == 1);
    FUZZ_CHECK(inside, "containerPath(\"%s\", \"%s\") = \"%s\" is outside \"%s\"", a, b, cp, base);
    FUZZ_CHECK(!has_dotdot_segment(cp, strlen(cp)), "containerPath(\"%s\", \"%s\") = \"%s\"", a, b, cp);
    free(base);
  }
  free(cp);
  err_clear(&err);

  check_workdir_mode(a, a_len, b, b_len, 0);
  check_workdir_mode(a, a_len, b, b_len, 1);

  char *parent = paths_parent(b, &err);
  FUZZ_CHECK((parent == NULL) == err_is_set(&err), "result %p, error set %d", (void *)parent, err_is_set(&err));
  if (parent) FUZZ_CHECK(parent[0] != '/' && !has_dotdot_segment(parent, strlen(parent)), "parent \"%s\"", parent);
  free(parent);
  err_clear(&err);

  free(a);
  free(b);
  return 0;
}
