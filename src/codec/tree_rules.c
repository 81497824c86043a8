/*
 * tree_rules.c - quotas, counts, export name mapping and the import's path set (see tree_rules.h).
 *
 * Owns: the path set's table (digests of the paths, no copies).
 */
#include "codec/tree_rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "codec/textpage.h"

void tree_quota_defaults(tree_quota_t *q, uint64_t max_file_bytes) {
  q->max_files = TREE_DEFAULT_MAX_FILES;
  q->max_file_bytes = max_file_bytes;
  q->max_total_bytes = TREE_DEFAULT_MAX_TOTAL_BYTES;
  q->max_path_bytes = TREE_DEFAULT_MAX_PATH_BYTES;
  q->max_depth = TREE_DEFAULT_MAX_DEPTH;
}

json_t *tree_counts_json(const tree_counts_t *c) {
  return json_pack("{s:I, s:I, s:I, s:I}", "files", (json_int_t)c->files, "directories", (json_int_t)c->directories,
                   "bytes", (json_int_t)c->bytes, "skipped", (json_int_t)c->skipped);
}

size_t tree_path_depth(const char *path) {
  if (path == NULL || path[0] == 0) return 0;
  size_t n = 1;
  for (const char *p = path; *p; p++)
    if (*p == '/' && p[1] != 0) n++;
  return n;
}

static int breach(err_t *err, const char *code, const char *quota, uint64_t value, uint64_t limit,
                  const tree_counts_t *c, const char *path) {
  if (strcmp(quota, "maxFileBytes") == 0)
    err_sandbox(err, code, "Sandbox file exceeds maxFileBytes (%llu > %llu): %s", (unsigned long long)value,
                (unsigned long long)limit, path);
  else
    err_sandbox(err, code, "Tree transfer exceeds %s (%llu > %llu): %s", quota, (unsigned long long)value,
                (unsigned long long)limit, path);
  err_set_details(err, json_pack("{s:s, s:I, s:s, s:I, s:I, s:I}", "quota", quota, "limit", (json_int_t)limit, "path",
                                 path, "files", (json_int_t)c->files, "directories", (json_int_t)c->directories,
                                 "bytes", (json_int_t)c->bytes));
  return -1;
}

int tree_quota_admit(const tree_quota_t *q, const tree_counts_t *c, const tree_entry_t *e, err_t *err) {
  size_t plen = strlen(e->path);
  if (plen > q->max_path_bytes) return breach(err, CODE_QUOTA_EXCEEDED, "maxPathBytes", plen, q->max_path_bytes, c, e->path);
  size_t depth = tree_path_depth(e->path);
  if (depth > q->max_depth) return breach(err, CODE_QUOTA_EXCEEDED, "maxDepth", depth, q->max_depth, c, e->path);
  /* maxFiles counts entries, directories as files: each is an inode made on the other side. */
  uint64_t entries = c->files + c->directories;
  if (entries >= q->max_files) return breach(err, CODE_QUOTA_EXCEEDED, "maxFiles", entries + 1, q->max_files, c, e->path);
  if (e->kind != TREE_FILE) return 0;
  if (e->size > q->max_file_bytes) return breach(err, CODE_FILE_TOO_LARGE, "maxFileBytes", e->size, q->max_file_bytes, c, e->path);
  if (e->size > q->max_total_bytes || c->bytes > q->max_total_bytes - e->size)
    return breach(err, CODE_QUOTA_EXCEEDED, "maxTotalBytes", c->bytes + e->size, q->max_total_bytes, c, e->path);
  return 0;
}

/* ---- export names ---- */

typedef struct comps {
  const char **at;
  size_t *len;
  size_t n, cap;
} comps_t;

static void comps_free(comps_t *c) {
  free(c->at);
  free(c->len);
}

/* Splits on "/", dropping empty and "." components. 1 when a ".." is seen, -1 on OOM. */
static int split(const char *s, size_t n, comps_t *c) {
  memset(c, 0, sizeof(*c));
  size_t i = 0;
  while (i < n) {
    while (i < n && s[i] == '/') i++;
    size_t start = i;
    while (i < n && s[i] != '/') i++;
    size_t len = i - start;
    if (len == 0 || (len == 1 && s[start] == '.')) continue;
    if (len == 2 && s[start] == '.' && s[start + 1] == '.') return 1;
    if (c->n == c->cap) {
      size_t cap = c->cap ? c->cap * 2 : 16;
      const char **at = realloc(c->at, cap * sizeof(*at));
      if (at == NULL) return -1;
      c->at = at;
      size_t *lens = realloc(c->len, cap * sizeof(*lens));
      if (lens == NULL) return -1;
      c->len = lens;
      c->cap = cap;
    }
    c->at[c->n] = s + start;
    c->len[c->n] = len;
    c->n++;
  }
  return 0;
}

char *tree_map_name(const char *name, size_t len, const char *root, const char *prefix, int *is_root, err_t *err) {
  *is_root = 0;
  char *shown = strndup(name, len > 512 ? 512 : len);
  const char *disp = shown ? shown : "";
  char *out = NULL;
  comps_t nc, rc;
  memset(&nc, 0, sizeof(nc));
  memset(&rc, 0, sizeof(rc));
  if (memchr(name, 0, len) != NULL) {
    err_sandbox(err, CODE_INVALID_PATH, "Archive entry name contains a NUL byte: %s", disp);
    goto done;
  }
  if (len > 0 && name[0] == '/') {
    err_sandbox(err, CODE_INVALID_PATH, "Archive entry name is absolute: %s", disp);
    goto done;
  }
  int s = split(name, len, &nc);
  if (s < 0 || split(root, strlen(root), &rc) < 0) {
    err_oom(err);
    goto done;
  }
  if (s == 1) {
    err_sandbox(err, CODE_INVALID_PATH, "Archive entry name leaves the selection: %s", disp);
    goto done;
  }
  int inside = nc.n >= rc.n;
  for (size_t i = 0; inside && i < rc.n; i++)
    inside = nc.len[i] == rc.len[i] && memcmp(nc.at[i], rc.at[i], rc.len[i]) == 0;
  if (!inside) {
    err_sandbox(err, CODE_INVALID_PATH, "Archive entry name is outside the selection: %s", disp);
    goto done;
  }
  if (!utf8_valid((const uint8_t *)name, len)) {
    err_sandbox(err, CODE_INVALID_ENTRY, "Archive entry name is not valid UTF-8: %s", disp);
    goto done;
  }
  buf_t b;
  buf_init(&b, 0);
  int rcode = buf_append_str(&b, prefix);
  for (size_t i = rc.n; rcode == 0 && i < nc.n; i++) {
    if (b.len > 0) rcode = buf_append(&b, "/", 1);
    if (rcode == 0) rcode = buf_append(&b, nc.at[i], nc.len[i]);
  }
  if (rcode == 0) rcode = buf_terminate(&b);
  if (rcode != 0) {
    buf_free(&b);
    err_oom(err);
    goto done;
  }
  *is_root = nc.n == rc.n;
  out = buf_steal(&b, NULL);
  if (out == NULL) err_oom(err);
done:
  comps_free(&nc);
  comps_free(&rc);
  free(shown);
  return out;
}

/* ---- path set: open addressing on 128-bit digests ----
 *
 * Only a digest of each path is kept (16 bytes a slot, no copy of the path), so the set's
 * memory is bounded by the number of entries alone, whatever their paths' lengths: at
 * most 64 bytes an entry (the table doubles at half full). Two paths with the same digest
 * would be taken for one: a false refusal ("twice", "inside a file"), never a path let
 * through twice; for 10^6 honest paths its odds are below 10^-26. */

typedef struct slot {
  uint64_t a, b; /* both 0: empty; b's low bit holds the kind */
} slot_t;

struct tree_pathset {
  slot_t *slots;
  size_t cap; /* power of two */
  size_t count;
};

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Two independent 64-bit hashes of the path (FNV-1a, and a multiplicative one), mixed. */
static void digest(const char *s, uint64_t *a, uint64_t *b) {
  uint64_t h = 1469598103934665603ULL, g = 0x243f6a8885a308d3ULL;
  size_t n = 0;
  for (; *s; s++, n++) {
    h ^= (uint8_t)*s;
    h *= 1099511628211ULL;
    g = (g + (uint8_t)*s + 1) * 0x9e3779b97f4a7c15ULL;
    g ^= g >> 29;
  }
  *a = mix(h ^ n) | 1; /* never 0: 0,0 is an empty slot */
  *b = mix(g + n) & ~(uint64_t)1;
}

tree_pathset_t *tree_pathset_new(void) {
  tree_pathset_t *s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->cap = 64;
  s->slots = calloc(s->cap, sizeof(slot_t));
  if (s->slots == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

void tree_pathset_free(tree_pathset_t *s) {
  if (s == NULL) return;
  free(s->slots);
  free(s);
}

static slot_t *find(slot_t *slots, size_t cap, uint64_t a, uint64_t b) {
  size_t i = (size_t)a & (cap - 1);
  while (slots[i].a != 0 && !(slots[i].a == a && (slots[i].b & ~(uint64_t)1) == b)) i = (i + 1) & (cap - 1);
  return &slots[i];
}

int tree_pathset_get(const tree_pathset_t *s, const char *path) {
  uint64_t a, b;
  digest(path, &a, &b);
  slot_t *slot = find(s->slots, s->cap, a, b);
  return slot->a != 0 ? (int)(slot->b & 1) : -1;
}

int tree_pathset_add(tree_pathset_t *s, const char *path, tree_kind_t kind) {
  if ((s->count + 1) * 2 > s->cap) {
    if (s->cap > SIZE_MAX / 2 / sizeof(slot_t)) return -1;
    size_t cap = s->cap * 2;
    slot_t *slots = calloc(cap, sizeof(slot_t));
    if (slots == NULL) return -1;
    for (size_t i = 0; i < s->cap; i++)
      if (s->slots[i].a != 0) *find(slots, cap, s->slots[i].a, s->slots[i].b & ~(uint64_t)1) = s->slots[i];
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
  }
  uint64_t a, b;
  digest(path, &a, &b);
  slot_t *slot = find(s->slots, s->cap, a, b);
  if (slot->a != 0) return 0;
  slot->a = a;
  slot->b = b | (kind == TREE_DIRECTORY ? 1u : 0u);
  s->count++;
  return 0;
}

size_t tree_pathset_count(const tree_pathset_t *s) { return s->count; }
