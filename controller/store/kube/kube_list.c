/* kube_list.c - the kube store's list: pages of PAGE_LIMIT objects
 * (limit + continue, as client-go's pager), smaller pages when one is too
 * large, a relist from scratch when a continue token expired, the objects
 * decoded as they come and those that do not decode skipped. */
#include "controller/store/kube/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

/* --- list --- */

static int cmp_sess(const void *a, const void *b)
{
  const session *x = *(session *const *)a, *y = *(session *const *)b;
  int c = strcmp(x->meta.namespace_, y->meta.namespace_);
  return c ? c : strcmp(x->meta.name, y->meta.name);
}

static void list_end(kop *o)
{
  size_t i, n;
  /* drop the objects that vanished and, unless asked, the tombstones */
  for(i = n = 0; i < o->list.n; i++) {
    session *s = o->list.items[i];
    if(s && s->meta.deletion_timestamp && !o->include_deleted) {
      session_free(s);
      s = NULL;
    }
    if(s)
      o->list.items[n++] = s;
  }
  o->list.n = n;
  qsort(o->list.items, o->list.n, sizeof(*o->list.items), cmp_sess);
  kop_finish(o, SC_OK);
}

static void list_got(kop *o, const kube_http_result *res);

/* ask for the next page (o->cont NULL: the first) */
static sc_err list_send(kop *o, sc_errbuf *eb)
{
  kube_http_opts ho = kstore_call_opts;
  char *ec = NULL;
  if(o->cont && !(ec = curl_easy_escape(NULL, o->cont, 0)))
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  if(snprintf(o->path, sizeof(o->path), "%s?limit=%d%s%s", o->base,
              o->limit, ec ? "&continue=" : "", ec ? ec : "") >=
     (int)sizeof(o->path)) {
    curl_free(ec);
    return sc_errf(eb, SC_ERR_PROTOCOL, "kube GET %s%s: the continue token "
                   "makes the URL too long", o->k->conn.server, o->base);
  }
  curl_free(ec);
  /* a page of one object may be as large as any answer */
  ho.body_max = o->limit > 1 ? PAGE_BYTES : RESP_MAX;
  return kop_send_ex(o, "GET", NULL, NULL, &ho, list_got, eb);
}

/* the list starts again from its first page (a 410 on a continue token) */
static void list_restart(kop *o)
{
  store_list_result_free(&o->list);
  free(o->cont);
  o->cont = NULL;
  o->pages = 0;
}

/* the objects of one page: decoded, or skipped and reported */
static sc_err list_items(kop *o, json_object *items)
{
  size_t i, n = json_object_array_length(items);
  session **v;
  if(n > LIST_ITEMS_MAX - o->list.n - o->list.n_skipped)
    return sc_errf(&o->eb, SC_ERR_TOO_LARGE, "kube GET %s%s: more than %d "
                   "objects in one list: giving up", o->k->conn.server,
                   o->path, LIST_ITEMS_MAX);
  v = realloc(o->list.items, (o->list.n + n + 1) * sizeof(*v));
  if(!v)
    return sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
  o->list.items = v;
  for(i = 0; i < n; i++) {
    json_object *it = json_object_array_get_idx(items, i);
    char why[SC_ERRBUF_SIZE], what[64];
    sc_err err = kstore_obj_decode(it, &o->list.items[o->list.n], why,
                                   sizeof(why));
    if(!err) {
      o->list.n++;
      continue;
    }
    if(err == SC_ERR_PROTOCOL) {
      snprintf(what, sizeof(what), "list page %zu item %zu", o->pages + 1,
               i);
      err = kstore_skip_obj(o->k, &o->list, "list", it, what, why);
    }
    if(err)
      return sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
  }
  return SC_OK;
}

static void list_got(kop *o, const kube_http_result *res)
{
  json_object *items, *meta, *rv = NULL, *cv = NULL;
  const char *cont = NULL;
  sc_err err;
  if(res->err == SC_ERR_TOO_LARGE && o->limit > 1) {
    /* a page over PAGE_BYTES: the same page in smaller pieces */
    o->limit = o->limit / 4 > 1 ? o->limit / 4 : 1;
    o->k->page_limit = o->limit;
    err = list_send(o, &o->eb);
    if(err)
      kop_finish(o, err);
    return;
  }
  err = kstore_reply_err(o->k, res, o->method, o->path, &o->eb);
  if(!err && res->status == 410 && o->cont) {
    /* the continue token expired (the snapshot it stands for was
     * compacted): the list starts again from scratch, as a new list */
    if(++o->relists > RELISTS_MAX)
      err = sc_errf(&o->eb, SC_ERR_UNAVAILABLE, "kube GET %s%s: the continue "
                    "token expired %d times (410): %s",
                    o->k->conn.server, o->path, o->relists,
                    kstore_status_msg(res->body));
    else {
      list_restart(o);
      err = list_send(o, &o->eb);
    }
    if(err)
      kop_finish(o, err);
    return;
  }
  if(!err && res->status != 200)
    err = kstore_http_err(res->status, res->body, "list",
                          o->ns ? o->ns : "*", "*",
                   &o->eb);
  if(!err && (!json_object_object_get_ex(res->body, "items", &items) ||
              !json_object_is_type(items, json_type_array) ||
              !json_object_object_get_ex(res->body, "metadata", &meta) ||
              (o->pages == 0 &&
               (!json_object_object_get_ex(meta, "resourceVersion", &rv) ||
                !json_object_is_type(rv, json_type_string))) ||
              (json_object_object_get_ex(meta, "continue", &cv) && cv &&
               !json_object_is_type(cv, json_type_string))))
    err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube GET %s%s: not a list (no "
                  "items array or metadata.resourceVersion string, or a "
                  "metadata.continue that is not a string)",
                  o->k->conn.server, o->path);
  if(err) {
    kop_finish(o, err);
    return;
  }
  if(o->pages == 0) {
    /* the version of the list is its first page's: the continued pages
     * are of the same snapshot (client-go's pager keeps the first's) */
    o->list.revision = strdup(json_object_get_string(rv));
    if(!o->list.revision) {
      kop_finish(o, sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory"));
      return;
    }
  }
  err = list_items(o, items);
  if(err) {
    kop_finish(o, err);
    return;
  }
  o->pages++;
  if(cv && *json_object_get_string(cv))
    cont = json_object_get_string(cv);
  if(cont) {
    size_t clen = strlen(cont);
    if(clen > CONTINUE_MAX || clen != (size_t)json_object_get_string_len(cv))
      err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube GET %s%s: a continue token "
                    "of %zu bytes (at most %d, no NUL)", o->k->conn.server,
                    o->path, (size_t)json_object_get_string_len(cv),
                    CONTINUE_MAX);
    else if(o->cont && !strcmp(o->cont, cont))
      err = sc_errf(&o->eb, SC_ERR_PROTOCOL, "kube GET %s%s: the continue "
                    "token repeats the previous one: paging loop",
                    o->k->conn.server, o->path);
    else if(o->pages >= PAGES_MAX)
      err = sc_errf(&o->eb, SC_ERR_TOO_LARGE, "kube GET %s%s: more than %d "
                    "pages: giving up", o->k->conn.server, o->path,
                    PAGES_MAX);
    if(!err) {
      free(o->cont);
      o->cont = strdup(cont);
      if(!o->cont)
        err = sc_errf(&o->eb, SC_ERR_NOMEM, "out of memory");
    }
    if(!err) {
      /* pages well under the cap: ask for more objects at a time again */
      if(res->body_len < PAGE_BYTES / 8 && o->limit < PAGE_LIMIT) {
        o->limit = o->limit * 2 < PAGE_LIMIT ? o->limit * 2 : PAGE_LIMIT;
        o->k->page_limit = o->limit;
      }
      err = list_send(o, &o->eb);
    }
    if(err)
      kop_finish(o, err);
    return;
  }
  if(o->whole)
    store_skip_list_done(&o->k->base, &o->list);
  list_end(o);
}

sc_err kstore_list_start(kube_store *k, kube_http *h,
                         const store_list_opts *opts, store_reply_cb cb,
                         void *ud, sc_errbuf *eb)
{
  const char *ns = opts->namespace_ ? opts->namespace_ : k->ns;
  kop *o;
  sc_err err = kop_root(k, h, ns, NULL, NULL, cb, ud, &o, eb);
  if(err)
    return err;
  o->include_deleted = opts->include_deleted;
  o->whole = !opts->namespace_;
  o->limit = k->page_limit > 0 ? k->page_limit : PAGE_LIMIT;
  if(ns)
    kstore_obj_path(o->base, sizeof(o->base), ns, NULL, NULL);
  else
    snprintf(o->base, sizeof(o->base), GROUP_PATH "/sessions");
  err = list_send(o, eb);
  if(err)
    kop_free(o);
  return err;
}
