/*
 * owner.c - sandbox user uid/gid lookup (see owner.h).
 */
#include "sandbox/owner.h"

#include <stdlib.h>
#include <string.h>

#include "codec/tar.h"
#include "codec/userspec.h"

#define MAX_ACCOUNT_FILE (1024 * 1024)

struct owner_task {
  sandbox_t *sb;
  http_req_t *passwd_req;
  http_req_t *group_req;
  int pending;
  buf_t passwd;
  buf_t group;
  int have_passwd, have_group;
  err_t err;
  owner_done_fn done;
  void *ud;
};


/* "1000:1000" needs no lookup at all. */
static int numeric_pair(const char *user, uint32_t *uid, uint32_t *gid) {
  const char *colon = strchr(user, ':');
  if (colon == NULL) return 0;
  char *end = NULL;
  unsigned long u = strtoul(user, &end, 10);
  if (end != colon || user == colon || u > 0xfffffffeUL) return 0;
  unsigned long g = strtoul(colon + 1, &end, 10);
  if (*end != 0 || colon[1] == 0 || g > 0xfffffffeUL) return 0;
  *uid = (uint32_t)u;
  *gid = (uint32_t)g;
  return 1;
}

static void task_free(owner_task_t *t) {
  http_req_free(t->passwd_req);
  http_req_free(t->group_req);
  buf_free(&t->passwd);
  buf_free(&t->group);
  err_clear(&t->err);
  sandbox_unref(t->sb);
  free(t);
}

static void task_finish(owner_task_t *t) {
  sandbox_t *s = t->sb;
  if (!err_is_set(&t->err)) {
    uint32_t uid = 0, gid = 0;
    if (userspec_resolve(s->user, t->have_passwd ? (char *)t->passwd.data : NULL, t->passwd.len,
                         t->have_group ? (char *)t->group.data : NULL, t->group.len, &uid, &gid, &t->err) == 0) {
      s->uid = uid;
      s->gid = gid;
      s->owner_known = 1;
    }
  }
  owner_done_fn done = t->done;
  void *ud = t->ud;
  err_t err = ERR_INIT;
  err_move(&err, &t->err);
  task_free(t);
  done(ud, err_is_set(&err) ? &err : NULL);
  err_clear(&err);
}

static void on_account_file(http_req_t *req, void *ud) {
  owner_task_t *t = ud;
  int is_passwd = req == t->passwd_req;
  buf_t *out = is_passwd ? &t->passwd : &t->group;
  if (is_passwd) t->passwd_req = NULL;
  else t->group_req = NULL;
  if (!err_is_set(&t->err)) {
    if (http_req_ok(req)) {
      const char *name = is_passwd ? "passwd" : "group";
      if (tar_read_file(req->resp.data, req->resp.len, name, MAX_ACCOUNT_FILE, is_passwd ? "/etc/passwd" : "/etc/group",
                        out, &t->err) == 0) {
        buf_terminate(out);
        if (is_passwd) t->have_passwd = 1;
        else t->have_group = 1;
      }
    } else if (!(http_req_not_found(req))) {
      /* A missing file is fine (numeric users still resolve); anything else is not. */
      http_req_error(req, &t->err);
    }
  }
  http_req_free(req);
  if (--t->pending == 0) task_finish(t);
}

static http_req_t *fetch(owner_task_t *t, const char *path) {
  sandbox_t *s = t->sb;
  char *name = url_escape(s->container_name);
  char *p = url_escape(path);
  http_req_t *req = NULL;
  if (name && p) req = http_req_new(s->eng, "GET", "/containers/%s/archive?path=%s", name, p);
  free(name);
  free(p);
  if (req) http_req_set_limit(req, MAX_ACCOUNT_FILE + 64 * 1024);
  return req;
}

int owner_ensure(sandbox_t *s, owner_done_fn done, void *ud, owner_task_t **task, err_t *err) {
  *task = NULL;
  if (s->owner_known) return 1;
  if (user_is_root(s->user)) {
    s->uid = 0;
    s->gid = 0;
    s->owner_known = 1;
    return 1;
  }
  uint32_t uid, gid;
  if (numeric_pair(s->user, &uid, &gid)) {
    s->uid = uid;
    s->gid = gid;
    s->owner_known = 1;
    return 1;
  }
  owner_task_t *t = calloc(1, sizeof(*t));
  if (t == NULL) return err_oom(err);
  t->sb = s;
  sandbox_ref(s);
  buf_init(&t->passwd, MAX_ACCOUNT_FILE);
  buf_init(&t->group, MAX_ACCOUNT_FILE);
  err_init(&t->err);
  t->done = done;
  t->ud = ud;
  t->passwd_req = fetch(t, "/etc/passwd");
  t->group_req = fetch(t, "/etc/group");
  if (t->passwd_req == NULL || t->group_req == NULL) {
    task_free(t);
    return err_oom(err);
  }
  if (http_req_start(t->passwd_req, on_account_file, t, err) != 0) {
    task_free(t);
    return -1;
  }
  t->pending = 1;
  if (http_req_start(t->group_req, on_account_file, t, err) != 0) {
    task_free(t); /* cancels the passwd request too */
    return -1;
  }
  t->pending = 2;
  *task = t;
  return 0;
}

void owner_cancel(owner_task_t *t) {
  if (t == NULL) return;
  task_free(t);
}
