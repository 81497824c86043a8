/*
 * paths.c - Node's path.posix (normalize, join, dirname, relative, isAbsolute) ported byte
 * for byte from lib/path.js, and the original package's sandbox path rules built on them,
 * with upstream's workdir mode for the agent tools (absolute paths inside the workdir; see
 * paths.h).
 *
 * Owns: nothing beyond each call; every result is one malloc'd buffer handed to the caller.
 *
 * Node works on UTF-16 code units and we work on UTF-8 bytes. The algorithms only ever
 * look for '/' and '.', which are single bytes that never occur inside a multi-byte UTF-8
 * sequence, and every length they compare is either a count of those ASCII characters or
 * a test that cannot tell the two encodings apart (argued at each place), so the results
 * are the UTF-8 encodings of Node's results.
 */
#include "codec/paths.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Index of the last `c` in s[0..len), or -1. */
static int64_t last_index_of(const char *s, size_t len, char c) {
  const char *p = len ? memrchr(s, c, len) : NULL;
  return p ? (int64_t)(p - s) : -1;
}

/*
 * normalizeString(path, allowAboveRoot, "/", isPosixPathSeparator) from lib/path.js.
 * Writes into `res`, which must hold `len` bytes: every byte appended stands for a distinct
 * byte of the input (a segment, the separator before it, or the two dots of ".."), so the
 * result is never longer than the input. Returns the result's length.
 *
 * Lengths here are bytes where Node counts code units. They only meet 2 in comparisons
 * that also require the last two characters to be "..", and the `res.length > 2` branch
 * and the `res.length !== 0` branch both empty a `res` that holds no separator (a result
 * with a separator is at least "a/b"), so bytes and code units choose the same way.
 */
static size_t normalize_string(const char *path, size_t len, int allow_above_root, char *res) {
  size_t rlen = 0;
  size_t last_segment_length = 0;
  size_t last_slash1 = 0; /* lastSlash + 1, so that Node's -1 is 0 */
  int dots = 0;           /* Node counts without bound; only 1, 2 and -1 matter: capped at 3 */
  unsigned char code = 0;
  for (size_t i = 0; i <= len; ++i) {
    if (i < len)
      code = (unsigned char)path[i];
    else if (code == '/')
      break;
    else
      code = '/';

    if (code == '/') {
      if (last_slash1 == i || dots == 1) {
        /* NOOP */
      } else if (dots == 2) {
        if (rlen < 2 || last_segment_length != 2 || res[rlen - 1] != '.' || res[rlen - 2] != '.') {
          if (rlen > 2) {
            int64_t last_slash_index = last_index_of(res, rlen, '/');
            if (last_slash_index == -1) {
              rlen = 0;
              last_segment_length = 0;
            } else {
              rlen = (size_t)last_slash_index;
              last_segment_length = (size_t)((int64_t)rlen - 1 - last_index_of(res, rlen, '/'));
            }
            last_slash1 = i + 1;
            dots = 0;
            continue;
          } else if (rlen != 0) {
            rlen = 0;
            last_segment_length = 0;
            last_slash1 = i + 1;
            dots = 0;
            continue;
          }
        }
        if (allow_above_root) {
          if (rlen > 0) res[rlen++] = '/';
          res[rlen++] = '.';
          res[rlen++] = '.';
          last_segment_length = 2;
        }
      } else {
        size_t seg = i - last_slash1;
        if (rlen > 0) res[rlen++] = '/';
        memcpy(res + rlen, path + last_slash1, seg);
        rlen += seg;
        last_segment_length = seg;
      }
      last_slash1 = i + 1;
      dots = 0;
    } else if (code == '.' && dots != -1) {
      if (dots < 3) ++dots;
    } else {
      dots = -1;
    }
  }
  return rlen;
}

static char *dup_n(const char *s, size_t len, size_t *out_len) {
  char *r = malloc(len + 1);
  if (r == NULL) return NULL;
  memcpy(r, s, len);
  r[len] = '\0';
  if (out_len) *out_len = len;
  return r;
}

char *posix_normalize_n(const char *path, size_t len, size_t *out_len) {
  if (len == 0) return dup_n(".", 1, out_len);
  int is_absolute = path[0] == '/';
  int trailing_separator = path[len - 1] == '/';
  /* "/" + normalized (<= len) + "/" + NUL */
  char *buf = malloc(len + 3);
  if (buf == NULL) return NULL;
  size_t rlen = normalize_string(path, len, !is_absolute, buf + 1);
  size_t n;
  if (rlen == 0) {
    if (is_absolute) {
      memcpy(buf, "/", 1);
      n = 1;
    } else if (trailing_separator) {
      memcpy(buf, "./", 2);
      n = 2;
    } else {
      memcpy(buf, ".", 1);
      n = 1;
    }
  } else {
    if (trailing_separator) buf[1 + rlen++] = '/';
    if (is_absolute) {
      buf[0] = '/';
      n = rlen + 1;
    } else {
      memmove(buf, buf + 1, rlen);
      n = rlen;
    }
  }
  buf[n] = '\0';
  if (out_len) *out_len = n;
  return buf;
}

char *posix_join_n(const char *a, size_t a_len, const char *b, size_t b_len, size_t *out_len) {
  if (a_len == 0 && b_len == 0) return dup_n(".", 1, out_len);
  if (a_len == 0) return posix_normalize_n(b, b_len, out_len);
  if (b_len == 0) return posix_normalize_n(a, a_len, out_len);
  if (a_len > SIZE_MAX - b_len - 2) return NULL;
  char *joined = malloc(a_len + b_len + 1);
  if (joined == NULL) return NULL;
  memcpy(joined, a, a_len);
  joined[a_len] = '/';
  memcpy(joined + a_len + 1, b, b_len);
  char *r = posix_normalize_n(joined, a_len + 1 + b_len, out_len);
  free(joined);
  return r;
}

char *posix_dirname_n(const char *path, size_t len, size_t *out_len) {
  if (len == 0) return dup_n(".", 1, out_len);
  int has_root = path[0] == '/';
  size_t end = 0; /* 0 stands for Node's -1: a slash at index 0 never ends the loop */
  int matched_slash = 1;
  for (size_t i = len - 1; i >= 1; --i) {
    if (path[i] == '/') {
      if (!matched_slash) {
        end = i;
        break;
      }
    } else {
      matched_slash = 0;
    }
  }
  if (end == 0) return has_root ? dup_n("/", 1, out_len) : dup_n(".", 1, out_len);
  if (has_root && end == 1) return dup_n("//", 2, out_len);
  return dup_n(path, end, out_len);
}

/*
 * posix.resolve(p) with "/" as the working directory: "/" + normalizeString(p + "/").
 * For a relative p Node builds cwd + "/" + p + "/"; leading separators are no-ops in
 * normalizeString, so "/" + p + "/" covers both cases.
 */
static char *resolve_from_root(const char *p, size_t len, size_t *out_len) {
  if (len > SIZE_MAX - 4) return NULL;
  char *tmp = malloc(len + 2);
  char *out = malloc(len + 3);
  if (tmp == NULL || out == NULL) goto fail;
  tmp[0] = '/';
  memcpy(tmp + 1, p, len);
  tmp[len + 1] = '/';
  out[0] = '/';
  size_t rlen = normalize_string(tmp, len + 2, 0, out + 1);
  out[rlen + 1] = '\0';
  *out_len = rlen + 1;
  free(tmp);
  return out;
fail:
  free(tmp);
  free(out);
  return NULL;
}

/*
 * posix.relative. Node compares code units and we compare bytes: UTF-8 is a prefix code,
 * so the first differing byte lies in the first differing character, the last common
 * separator is the same, and one string is a byte prefix of the other exactly when it is a
 * code-unit prefix.
 */
char *posix_relative_n(const char *from_in, size_t from_in_len, const char *to_in, size_t to_in_len,
                       size_t *out_len) {
  char *from = NULL, *to = NULL, *out = NULL;
  size_t flen = 0, tlen = 0;
  if (from_in_len == to_in_len && memcmp(from_in, to_in, from_in_len) == 0) return dup_n("", 0, out_len);
  from = resolve_from_root(from_in, from_in_len, &flen);
  to = resolve_from_root(to_in, to_in_len, &tlen);
  if (from == NULL || to == NULL) goto fail;
  if (flen == tlen && memcmp(from, to, flen) == 0) {
    out = dup_n("", 0, out_len);
    goto done;
  }
  {
    const int64_t from_start = 1, from_end = (int64_t)flen, from_len = from_end - from_start;
    const int64_t to_start = 1, to_len = (int64_t)tlen - to_start;
    const int64_t length = from_len < to_len ? from_len : to_len;
    int64_t last_common_sep = -1;
    int64_t i = 0;
    for (; i < length; i++) {
      char from_code = from[from_start + i];
      if (from_code != to[to_start + i])
        break;
      else if (from_code == '/')
        last_common_sep = i;
    }
    if (i == length) {
      if (to_len > length) {
        if (to[to_start + i] == '/') {
          out = dup_n(to + to_start + i + 1, (size_t)(tlen - (size_t)(to_start + i + 1)), out_len);
          goto done;
        }
        if (i == 0) {
          out = dup_n(to + to_start + i, (size_t)(tlen - (size_t)(to_start + i)), out_len);
          goto done;
        }
      } else if (from_len > length) {
        if (from[from_start + i] == '/') {
          last_common_sep = i;
        } else if (i == 0) {
          last_common_sep = 0;
        }
      }
    }
    /* At most one "/.." per byte of `from`, then the rest of `to`. */
    if (flen > (SIZE_MAX - tlen - 1) / 3) goto fail;
    out = malloc(3 * flen + tlen + 1);
    if (out == NULL) goto fail;
    size_t n = 0;
    for (i = from_start + last_common_sep + 1; i <= from_end; ++i) {
      if (i == from_end || from[i] == '/') {
        if (n > 0) out[n++] = '/';
        out[n++] = '.';
        out[n++] = '.';
      }
    }
    size_t rest = (size_t)(to_start + last_common_sep);
    memcpy(out + n, to + rest, tlen - rest);
    n += tlen - rest;
    out[n] = '\0';
    if (out_len) *out_len = n;
  }
done:
  free(from);
  free(to);
  return out;
fail:
  free(from);
  free(to);
  free(out);
  return NULL;
}

char *posix_normalize(const char *path) { return posix_normalize_n(path, strlen(path), NULL); }

char *posix_join(const char *a, const char *b) { return posix_join_n(a, strlen(a), b, strlen(b), NULL); }

char *posix_dirname(const char *path) { return posix_dirname_n(path, strlen(path), NULL); }

char *posix_relative(const char *from, const char *to) {
  return posix_relative_n(from, strlen(from), to, strlen(to), NULL);
}

int posix_is_absolute(const char *path) { return path[0] == '/'; }

/*
 * normalized (an absolute path of nlen bytes, the caller's) made relative to normalize(workdir):
 * posix.relative(normalize(workdir), normalized) || ".". Returns the new path, or NULL when out
 * of memory; `normalized` is left to the caller either way. Both lengths are those of strings
 * already in memory, and every size computed from them is checked in posix_normalize_n and
 * posix_relative_n (at most 3 * |workdir| + |path| + 1 bytes), so nothing here can wrap.
 */
static char *relative_to_workdir(const char *workdir, size_t workdir_len, const char *normalized, size_t nlen,
                                 size_t *out_len) {
  size_t blen = 0;
  if (workdir_len > SIZE_MAX - 3) return NULL;
  char *base = posix_normalize_n(workdir, workdir_len, &blen);
  if (base == NULL) return NULL;
  char *rel = posix_relative_n(base, blen, normalized, nlen, out_len);
  free(base);
  if (rel != NULL && *out_len == 0) {
    free(rel);
    rel = dup_n(".", 1, out_len);
  }
  return rel;
}

char *paths_normalize_in(const char *input, size_t len, int allow_root, const char *workdir,
                                size_t workdir_len, err_t *err) {
  char *shown = NULL, *slashed = NULL, *normalized = NULL;
  size_t nlen = 0;
  if (len == 0) {
    err_sandbox(err, CODE_INVALID_PATH, "Sandbox path cannot be empty.");
    return NULL;
  }
  if (memchr(input, '\0', len) != NULL) {
    err_sandbox(err, CODE_INVALID_PATH, "Sandbox path cannot contain null bytes.");
    return NULL;
  }
  if (len > SIZE_MAX - 3) goto oom;
  /* The input as the messages show it (NUL-terminated: it holds no NUL, checked above). */
  shown = dup_n(input, len, NULL);
  slashed = dup_n(input, len, NULL);
  if (shown == NULL || slashed == NULL) goto oom;
  for (size_t i = 0; i < len; i++)
    if (slashed[i] == '\\') slashed[i] = '/';
  normalized = posix_normalize_n(slashed, len, &nlen);
  if (normalized == NULL) goto oom;
  if (normalized[0] == '/') {
    if (workdir == NULL || workdir_len == 0 || workdir[0] != '/') {
      err_sandbox(err, CODE_INVALID_PATH, "Sandbox path must be relative: %s", shown);
      goto fail;
    }
    size_t rlen = 0;
    char *rel = relative_to_workdir(workdir, workdir_len, normalized, nlen, &rlen);
    if (rel == NULL) goto oom;
    free(normalized);
    normalized = rel;
    nlen = rlen;
  }
  if ((nlen == 2 && memcmp(normalized, "..", 2) == 0) || (nlen >= 3 && memcmp(normalized, "../", 3) == 0)) {
    err_sandbox(err, CODE_INVALID_PATH, "Sandbox path cannot leave the workspace: %s", shown);
    goto fail;
  }
  if (nlen == 1 && normalized[0] == '.' && !allow_root) {
    err_sandbox(err, CODE_INVALID_PATH, "Sandbox path must refer to a file or directory inside the workspace.");
    goto fail;
  }
  free(shown);
  free(slashed);
  return normalized;
oom:
  err_oom(err);
fail:
  free(shown);
  free(slashed);
  free(normalized);
  return NULL;
}

char *paths_normalize(const char *input, size_t len, int allow_root, err_t *err) {
  return paths_normalize_in(input, len, allow_root, NULL, 0, err);
}

size_t paths_depth(const char *normalized) {
  size_t depth = 0;
  for (const char *p = normalized; *p; p++)
    if (*p != '/' && (p == normalized || p[-1] == '/')) depth++;
  return depth;
}

char *paths_argument(const char *input, size_t len, int allow_root, err_t *err) {
  char *normalized = paths_normalize(input, len, allow_root, err);
  if (normalized == NULL) return NULL;
  size_t nlen = strlen(normalized);
  size_t depth = nlen > SANDBOX_PATH_MAX_BYTES ? 0 : paths_depth(normalized);
  if (nlen > SANDBOX_PATH_MAX_BYTES) {
    err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is too long: %zu bytes (at most %d).", nlen,
                SANDBOX_PATH_MAX_BYTES);
  } else if (depth > SANDBOX_PATH_MAX_DEPTH) {
    err_sandbox(err, CODE_INVALID_PATH, "Sandbox path is too deep: %zu components (at most %d).", depth,
                SANDBOX_PATH_MAX_DEPTH);
  } else {
    return normalized;
  }
  free(normalized);
  return NULL;
}

char *paths_container(const char *workdir, const char *relative, err_t *err) {
  char *normalized = NULL, *base = NULL, *result = NULL;
  normalized = paths_normalize(relative, strlen(relative), 1, err);
  if (normalized == NULL) return NULL;
  base = posix_normalize(workdir);
  if (base == NULL) goto oom;
  if (strcmp(normalized, ".") == 0) {
    result = base;
    base = NULL;
  } else {
    result = posix_join(base, normalized);
    if (result == NULL) goto oom;
  }
  free(normalized);
  free(base);
  return result;
oom:
  err_oom(err);
  free(normalized);
  free(base);
  return NULL;
}

char *paths_parent(const char *relative, err_t *err) {
  char *normalized = paths_normalize(relative, strlen(relative), 0, err);
  if (normalized == NULL) return NULL;
  char *parent = posix_dirname(normalized);
  free(normalized);
  if (parent == NULL) err_oom(err);
  return parent;
}
