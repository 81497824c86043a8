/*
 * tarstream.c - the streaming tar reader and writer of tree transfers (see tarstream.h).
 *
 * Owns: a reader's header block, the long-name and pax buffers (each bounded by
 * TAR_STREAM_MAX_META) and the assembled name of the member being read.
 *
 * Formats read: POSIX ustar (prefix + name), pax ('x' records path, linkpath and size;
 * 'g' records are read and ignored), GNU ('L' long names, 'K' long links, base-256
 * numbers, 'D' directories) and old v7 headers. A header whose checksum does not match
 * (unsigned or, as some old writers did, signed) is refused; so is a size above 2^62, a
 * pax record that is not "<len> key=value\n", and meta data over the bound. The first zero
 * block ends the archive (GNU tar itself accepts a lone one).
 */
#include "codec/tarstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 512
#define MAX_SIZE ((uint64_t)1 << 62)

enum { ST_HEADER = 0, ST_META, ST_DATA, ST_PAD, ST_END, ST_FAILED };

struct tar_reader {
  tar_reader_cbs_t cbs;
  void *ud;
  int state;
  uint8_t hdr[BLOCK];
  size_t hdr_len;
  uint64_t remaining; /* data (or meta) bytes of the current member still to come */
  uint64_t pad;       /* padding bytes still to skip */
  int deliver;        /* the current member's data goes to on_data */
  char meta_type;     /* 'x', 'g', 'L' or 'K' while reading meta data */
  buf_t meta;
  buf_t pax_path, pax_link, gnu_name, gnu_link;
  int has_pax_path, has_pax_link, has_pax_size, has_gnu_name, has_gnu_link;
  uint64_t pax_size;
  buf_t name, link; /* the member being read */
  uint64_t members;
  uint64_t offset; /* bytes consumed */
};

static int fail(tar_reader_t *r, err_t *err, const char *what) {
  r->state = ST_FAILED;
  return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive is malformed at byte %llu (member %llu): %s",
                     (unsigned long long)r->offset, (unsigned long long)r->members + 1, what);
}

static int stopped(tar_reader_t *r, err_t *err) {
  r->state = ST_FAILED;
  if (!err_is_set(err)) err_oom(err);
  return -1;
}

tar_reader_t *tar_reader_new(const tar_reader_cbs_t *cbs, void *ud) {
  tar_reader_t *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  r->cbs = *cbs;
  r->ud = ud;
  buf_init(&r->meta, TAR_STREAM_MAX_META);
  buf_init(&r->pax_path, TAR_STREAM_MAX_META + 1);
  buf_init(&r->pax_link, TAR_STREAM_MAX_META + 1);
  buf_init(&r->gnu_name, TAR_STREAM_MAX_META + 1);
  buf_init(&r->gnu_link, TAR_STREAM_MAX_META + 1);
  buf_init(&r->name, TAR_STREAM_MAX_META + 1);
  buf_init(&r->link, TAR_STREAM_MAX_META + 1);
  return r;
}

void tar_reader_free(tar_reader_t *r) {
  if (r == NULL) return;
  buf_free(&r->meta);
  buf_free(&r->pax_path);
  buf_free(&r->pax_link);
  buf_free(&r->gnu_name);
  buf_free(&r->gnu_link);
  buf_free(&r->name);
  buf_free(&r->link);
  free(r);
}

/* ---- numbers ---- */

/* An octal field (leading spaces, digits, then NUL/space/end) or GNU base-256. -1 when
 * it is neither, or over `max`. */
static int parse_number(const uint8_t *f, size_t n, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  if (n > 0 && (f[0] & 0x80)) {
    if (f[0] == 0xff) return -1; /* negative */
    v = f[0] & 0x7f;
    for (size_t i = 1; i < n; i++) {
      if (v > (max >> 8)) return -1;
      v = (v << 8) | f[i];
    }
    if (v > max) return -1;
    *out = v;
    return 0;
  }
  size_t i = 0;
  while (i < n && f[i] == ' ') i++;
  for (; i < n; i++) {
    uint8_t c = f[i];
    if (c == 0 || c == ' ') break;
    if (c < '0' || c > '7') return -1;
    if (v > (max >> 3)) return -1;
    v = (v << 3) | (uint64_t)(c - '0');
  }
  for (; i < n; i++)
    if (f[i] != 0 && f[i] != ' ') return -1;
  if (v > max) return -1;
  *out = v;
  return 0;
}

static int checksum_ok(const uint8_t *h) {
  uint64_t want;
  if (parse_number(h + 148, 8, 0777777, &want) != 0) return 0;
  uint64_t usum = 0;
  int64_t ssum = 0;
  for (int i = 0; i < BLOCK; i++) {
    uint8_t c = (i >= 148 && i < 156) ? ' ' : h[i];
    usum += c;
    ssum += (int8_t)c;
  }
  return usum == want || (ssum >= 0 && (uint64_t)ssum == want);
}

static int all_zero(const uint8_t *h) {
  for (int i = 0; i < BLOCK; i++)
    if (h[i]) return 0;
  return 1;
}

/* strnlen of a fixed field. */
static size_t field_len(const uint8_t *f, size_t n) {
  const uint8_t *z = memchr(f, 0, n);
  return z ? (size_t)(z - f) : n;
}

/* Replaces `b` with data[0..len) and a NUL (not counted). */
static int set_bytes(buf_t *b, const void *data, size_t len) {
  buf_reset(b);
  if (len > 0 && buf_append(b, data, len) != 0) return -1;
  return buf_terminate(b);
}

/* ---- pax records ---- */

/* Reads "<len> key=value\n" records of r->meta. For 'x', path/linkpath/size are kept for
 * the next member; 'g' records are checked and dropped. */
static int parse_pax(tar_reader_t *r, int global, err_t *err) {
  const uint8_t *p = r->meta.data;
  size_t left = r->meta.len;
  while (left > 0) {
    /* Trailing NUL padding some writers leave after the last record. */
    if (p[0] == 0) {
      for (size_t i = 0; i < left; i++)
        if (p[i] != 0) return fail(r, err, "pax header has bytes after its records");
      break;
    }
    size_t len = 0, i = 0;
    while (i < left && i < 20 && p[i] >= '0' && p[i] <= '9') {
      len = len * 10 + (size_t)(p[i] - '0');
      i++;
    }
    if (i == 0 || i >= left || p[i] != ' ' || len <= i + 1 || len > left || p[len - 1] != '\n')
      return fail(r, err, "pax record is not \"<length> key=value\"");
    const uint8_t *kv = p + i + 1;
    size_t kvlen = len - i - 2; /* without the newline */
    const uint8_t *eq = memchr(kv, '=', kvlen);
    if (eq == NULL || eq == kv) return fail(r, err, "pax record has no key");
    size_t klen = (size_t)(eq - kv);
    const uint8_t *val = eq + 1;
    size_t vlen = kvlen - klen - 1;
    if (!global) {
      if (klen == 4 && memcmp(kv, "path", 4) == 0) {
        if (set_bytes(&r->pax_path, val, vlen) != 0) return fail(r, err, "pax path is too long");
        r->has_pax_path = 1;
      } else if (klen == 8 && memcmp(kv, "linkpath", 8) == 0) {
        if (set_bytes(&r->pax_link, val, vlen) != 0) return fail(r, err, "pax linkpath is too long");
        r->has_pax_link = 1;
      } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
        uint64_t v = 0;
        if (vlen == 0 || vlen > 19) return fail(r, err, "pax size is not a number");
        for (size_t k = 0; k < vlen; k++) {
          if (val[k] < '0' || val[k] > '9') return fail(r, err, "pax size is not a number");
          v = v * 10 + (uint64_t)(val[k] - '0');
        }
        if (v > MAX_SIZE) return fail(r, err, "pax size is too large");
        r->pax_size = v;
        r->has_pax_size = 1;
      }
    }
    p += len;
    left -= len;
  }
  return 0;
}

/* ---- members ---- */

static void clear_pending(tar_reader_t *r) {
  r->has_pax_path = r->has_pax_link = r->has_pax_size = r->has_gnu_name = r->has_gnu_link = 0;
}

/* The end of a member's data (and of its padding): back to headers. */
static int member_data_done(tar_reader_t *r, err_t *err) {
  int deliver = r->deliver;
  r->deliver = 0;
  r->state = r->pad > 0 ? ST_PAD : ST_HEADER;
  if (deliver && r->cbs.on_member_end && r->cbs.on_member_end(r->ud, err) != 0) return stopped(r, err);
  return 0;
}

static int meta_done(tar_reader_t *r, err_t *err) {
  r->state = r->pad > 0 ? ST_PAD : ST_HEADER;
  switch (r->meta_type) {
    case 'x':
      return parse_pax(r, 0, err);
    case 'g':
      return parse_pax(r, 1, err);
    case 'L':
      if (set_bytes(&r->gnu_name, r->meta.data, field_len(r->meta.data ? r->meta.data : (const uint8_t *)"", r->meta.len)) != 0)
        return fail(r, err, "long name is too long");
      r->has_gnu_name = 1;
      return 0;
    case 'K':
      if (set_bytes(&r->gnu_link, r->meta.data, field_len(r->meta.data ? r->meta.data : (const uint8_t *)"", r->meta.len)) != 0)
        return fail(r, err, "long link name is too long");
      r->has_gnu_link = 1;
      return 0;
  }
  return 0;
}

static int header(tar_reader_t *r, err_t *err) {
  const uint8_t *h = r->hdr;
  if (all_zero(h)) {
    r->state = ST_END;
    return 1;
  }
  if (!checksum_ok(h)) return fail(r, err, "header checksum does not match");
  char type = (char)h[156];
  uint64_t size = 0, mode = 0;
  if (parse_number(h + 124, 12, MAX_SIZE, &size) != 0) return fail(r, err, "header size is not a number");
  if (parse_number(h + 100, 8, UINT32_MAX, &mode) != 0) return fail(r, err, "header mode is not a number");

  if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
    if (size > TAR_STREAM_MAX_META) return fail(r, err, "extended header is too large");
    r->meta_type = type;
    buf_reset(&r->meta);
    r->remaining = size;
    r->pad = (BLOCK - size % BLOCK) % BLOCK;
    r->state = ST_META;
    if (size == 0) return meta_done(r, err) < 0 ? -1 : 0;
    return 0;
  }

  /* The name: pax path, GNU long name, or ustar prefix "/" name. */
  int posix = memcmp(h + 257, "ustar\0", 6) == 0;
  if (r->has_pax_path) {
    if (set_bytes(&r->name, r->pax_path.data, r->pax_path.len) != 0) return stopped(r, err);
  } else if (r->has_gnu_name) {
    if (set_bytes(&r->name, r->gnu_name.data, r->gnu_name.len) != 0) return stopped(r, err);
  } else {
    size_t nlen = field_len(h, 100);
    size_t plen = posix ? field_len(h + 345, 155) : 0;
    buf_reset(&r->name);
    if ((plen > 0 && (buf_append(&r->name, h + 345, plen) != 0 || buf_append(&r->name, "/", 1) != 0)) ||
        (nlen > 0 && buf_append(&r->name, h, nlen) != 0) || buf_terminate(&r->name) != 0)
      return stopped(r, err);
  }
  if (r->has_pax_link) {
    if (set_bytes(&r->link, r->pax_link.data, r->pax_link.len) != 0) return stopped(r, err);
  } else if (r->has_gnu_link) {
    if (set_bytes(&r->link, r->gnu_link.data, r->gnu_link.len) != 0) return stopped(r, err);
  } else if (set_bytes(&r->link, h + 157, field_len(h + 157, 100)) != 0) {
    return stopped(r, err);
  }
  if (r->has_pax_size) size = r->pax_size;
  clear_pending(r);

  tar_member_t m;
  memset(&m, 0, sizeof(m));
  m.name = (const char *)r->name.data;
  m.name_len = r->name.len;
  m.link = (const char *)r->link.data;
  m.type = type;
  m.mode = (uint32_t)(mode & 07777);
  switch (type) {
    case '0':
    case '\0':
    case '7':
      m.kind = TS_FILE;
      break;
    case '5':
    case 'D':
      m.kind = TS_DIRECTORY;
      break;
    case '2':
      m.kind = TS_SYMLINK;
      break;
    case '1':
      m.kind = TS_HARDLINK;
      break;
    default:
      m.kind = TS_OTHER;
      break;
  }
  /* Only a file's data is handed out; anything another kind carries is skipped. */
  m.size = m.kind == TS_FILE ? size : 0;
  r->members++;
  r->remaining = size;
  r->pad = (BLOCK - size % BLOCK) % BLOCK;
  r->deliver = m.kind == TS_FILE;
  if (r->cbs.on_member(r->ud, &m, err) != 0) return stopped(r, err);
  /* Other kinds end at once; whatever data they carry is skipped. */
  if (!r->deliver && r->cbs.on_member_end && r->cbs.on_member_end(r->ud, err) != 0) return stopped(r, err);
  if (size == 0) return r->deliver ? (member_data_done(r, err) < 0 ? -1 : 0) : 0;
  r->state = ST_DATA;
  return 0;
}

int tar_reader_feed(tar_reader_t *r, const uint8_t *data, size_t len, err_t *err) {
  if (r->state == ST_FAILED) {
    if (!err_is_set(err)) err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive is malformed.");
    return -1;
  }
  while (len > 0) {
    if (r->state == ST_END) return 1;
    size_t n;
    switch (r->state) {
      case ST_HEADER: {
        n = BLOCK - r->hdr_len;
        if (n > len) n = len;
        memcpy(r->hdr + r->hdr_len, data, n);
        r->hdr_len += n;
        r->offset += n;
        data += n;
        len -= n;
        if (r->hdr_len < BLOCK) break;
        r->hdr_len = 0;
        int rc = header(r, err);
        if (rc < 0) return -1;
        if (rc == 1) return 1;
        break;
      }
      case ST_META:
        n = r->remaining < len ? (size_t)r->remaining : len;
        if (buf_append(&r->meta, data, n) != 0) return stopped(r, err);
        r->remaining -= n;
        r->offset += n;
        data += n;
        len -= n;
        if (r->remaining == 0 && meta_done(r, err) < 0) return -1;
        break;
      case ST_DATA:
        n = r->remaining < len ? (size_t)r->remaining : len;
        if (r->deliver && r->cbs.on_data(r->ud, data, n, err) != 0) return stopped(r, err);
        r->remaining -= n;
        r->offset += n;
        data += n;
        len -= n;
        if (r->remaining == 0) {
          if (r->deliver) {
            if (member_data_done(r, err) < 0) return -1;
          } else {
            r->state = r->pad > 0 ? ST_PAD : ST_HEADER;
          }
        }
        break;
      case ST_PAD:
        n = r->pad < len ? (size_t)r->pad : len;
        r->pad -= n;
        r->offset += n;
        data += n;
        len -= n;
        if (r->pad == 0) r->state = ST_HEADER;
        break;
      default:
        return fail(r, err, "unexpected state");
    }
  }
  return r->state == ST_END ? 1 : 0;
}

int tar_reader_finish(tar_reader_t *r, err_t *err) {
  if (r->state == ST_END) return 0;
  if (r->state == ST_FAILED) {
    if (!err_is_set(err)) err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive is malformed.");
    return -1;
  }
  r->state = ST_FAILED;
  return err_sandbox(err, CODE_DOCKER_COMMAND_FAILED, "The archive ended early, after %llu bytes (member %llu).",
                     (unsigned long long)r->offset, (unsigned long long)r->members);
}

/* ---- writing ---- */

static void put_octal(uint8_t *f, size_t width, uint64_t v) {
  /* width - 1 digits and a NUL. */
  f[width - 1] = 0;
  for (size_t i = width - 1; i > 0; i--) {
    f[i - 1] = (uint8_t)('0' + (v & 7));
    v >>= 3;
  }
}

/* Octal when it fits in width - 1 digits, else GNU base-256. */
static void put_number(uint8_t *f, size_t width, uint64_t v) {
  uint64_t max_octal = (width - 1) * 3 >= 64 ? UINT64_MAX : (((uint64_t)1 << ((width - 1) * 3)) - 1);
  if (v <= max_octal) {
    put_octal(f, width, v);
    return;
  }
  memset(f, 0, width);
  for (size_t i = width; i > 1; i--) {
    f[i - 1] = (uint8_t)(v & 0xff);
    v >>= 8;
  }
  f[0] = 0x80;
}

static void finish_header(uint8_t *h) {
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < BLOCK; i++) sum += h[i];
  char chk[8];
  snprintf(chk, sizeof(chk), "%06o", sum & 0777777);
  memcpy(h + 148, chk, 6);
  h[154] = 0;
  h[155] = ' ';
}

static void base_header(uint8_t *h, char type, unsigned mode, uint32_t uid, uint32_t gid, uint64_t size, time_t mtime) {
  memset(h, 0, BLOCK);
  put_octal(h + 100, 8, mode & 07777);
  put_number(h + 108, 8, uid);
  put_number(h + 116, 8, gid);
  put_number(h + 124, 12, size);
  put_number(h + 136, 12, mtime < 0 ? 0 : (uint64_t)mtime);
  h[156] = (uint8_t)type;
  memcpy(h + 257, "ustar\0" "00", 8);
}

/* Appends one pax record "<len> key=value\n" (len counts itself). */
static int pax_record(buf_t *b, const char *key, const char *value, size_t vlen) {
  size_t body = strlen(key) + vlen + 3; /* " " "=" "\n" */
  size_t len = body + 1;
  for (;;) {
    char digits[24];
    int d = snprintf(digits, sizeof(digits), "%zu", len);
    if ((size_t)d + body == len) break;
    len = (size_t)d + body;
  }
  if (buf_printf(b, "%zu %s=", len, key) != 0) return -1;
  if (vlen > 0 && buf_append(b, value, vlen) != 0) return -1;
  return buf_append(b, "\n", 1);
}

int tar_write_header(buf_t *out, const tar_out_entry_t *e) {
  size_t plen = strlen(e->path);
  if (plen == 0 || plen > TAR_STREAM_MAX_META) return -1;
  /* A directory's name ends with "/" in the header. */
  size_t full = plen + (e->is_dir ? 1 : 0);
  uint8_t h[BLOCK];
  size_t name_off = 0; /* where the ustar name field starts in path (prefix before it) */
  int use_pax_path = 0;
  if (full > 100) {
    /* prefix (<= 155) "/" name (<= 100): cut at a slash. */
    use_pax_path = 1;
    for (size_t i = plen; i > 0; i--) {
      if (e->path[i - 1] != '/') continue;
      size_t pre = i - 1, rest = full - i;
      if (pre <= 155 && rest <= 100 && rest > 0 && pre > 0) {
        name_off = i;
        use_pax_path = 0;
        break;
      }
      if (rest > 100) break;
    }
  }
  int use_pax_size = e->size > 077777777777ULL;
  if (use_pax_path || use_pax_size) {
    buf_t pax;
    buf_init(&pax, 0);
    int rc = 0;
    if (use_pax_path) {
      /* A directory's pax path carries its slash too. */
      char *value = malloc(full + 1);
      if (value == NULL) {
        rc = -1;
      } else {
        memcpy(value, e->path, plen);
        if (e->is_dir) value[plen] = '/';
        value[full] = 0;
        rc = pax_record(&pax, "path", value, full);
        free(value);
      }
    }
    if (rc == 0 && use_pax_size) {
      char num[24];
      snprintf(num, sizeof(num), "%llu", (unsigned long long)e->size);
      rc = pax_record(&pax, "size", num, strlen(num));
    }
    if (rc != 0) {
      buf_free(&pax);
      return -1;
    }
    base_header(h, 'x', 0644, e->uid, e->gid, pax.len, e->mtime);
    memcpy(h, "././@PaxHeader", 14);
    finish_header(h);
    rc = buf_append(out, h, BLOCK);
    if (rc == 0) rc = buf_append(out, pax.data, pax.len);
    if (rc == 0) rc = tar_write_padding(out, pax.len);
    buf_free(&pax);
    if (rc != 0) return -1;
  }
  base_header(h, e->is_dir ? '5' : '0', e->mode, e->uid, e->gid, e->is_dir ? 0 : e->size, e->mtime);
  if (use_pax_path) {
    /* The ustar name is only a stand-in: readers take the pax path. */
    memcpy(h, e->path, plen > 99 ? 99 : plen);
  } else {
    if (name_off > 0) memcpy(h + 345, e->path, name_off - 1);
    size_t nlen = plen - name_off;
    memcpy(h, e->path + name_off, nlen);
    if (e->is_dir) h[nlen] = '/';
  }
  finish_header(h);
  return buf_append(out, h, BLOCK);
}

int tar_write_padding(buf_t *out, uint64_t size) {
  static const uint8_t zero[BLOCK];
  size_t pad = (size_t)((BLOCK - size % BLOCK) % BLOCK);
  return pad ? buf_append(out, zero, pad) : 0;
}

int tar_write_end(buf_t *out) {
  static const uint8_t zero[2 * BLOCK];
  return buf_append(out, zero, sizeof(zero));
}
