/*
 * store_impl.h - what a store backend implements (internal to controller/).
 *
 * store.c parses the URL, picks a backend and forwards every public call
 * through the backend's store_ops; it also holds the helpers that every
 * backend shares (key checks, uids, revision strings). Callers never
 * include this file; they see only store.h.
 *
 * A backend embeds `struct store` / `struct store_watch` as the FIRST
 * member of its own structs and casts back. Ownership is that of store.h:
 * the backend's close() frees the store and every watch still running.
 */
#ifndef SC_STORE_IMPL_H
#define SC_STORE_IMPL_H

#include <stdint.h>
#include "controller/store/store.h"

typedef struct store_ops {
  const char *name; /* "sqlite" */
  void (*close)(store *st);
  sc_err (*list)(store *st, const store_list_opts *opts,
                 store_list_result *out, sc_errbuf *eb);
  sc_err (*get)(store *st, const char *ns, const char *name, session **out,
                sc_errbuf *eb);
  sc_err (*apply)(store *st, session *const *objs, size_t n,
                  store_apply_outcome *outcomes, sc_errbuf *eb);
  sc_err (*update_spec)(store *st, const char *ns, const char *name,
                        const char *expected_version,
                        const session_spec *spec, char **new_version,
                        sc_errbuf *eb);
  sc_err (*update_status)(store *st, const char *ns, const char *name,
                          const char *expected_version,
                          const session_status *status, char **new_version,
                          sc_errbuf *eb);
  sc_err (*del)(store *st, const char *ns, const char *name, sc_errbuf *eb);
  sc_err (*purge)(store *st, const char *ns, const char *name,
                  const char *expected_version, sc_errbuf *eb);
  sc_err (*watch_start)(store *st, const char *from_revision,
                        store_watch_cb cb, store_watch_err_cb err_cb,
                        void *ud, store_watch **out, sc_errbuf *eb);
  void (*watch_stop)(store_watch *w);
  /* Optional (NULL: store.c runs the synchronous op and delivers its
   * answer on the next turn of the loop). Keys and versions are checked
   * by store.c; the backend copies what it keeps, answers through cb
   * from the loop only, and drops what is in flight on close(). */
  sc_err (*list_async)(store *st, const store_list_opts *opts,
                       store_reply_cb cb, void *ud, sc_errbuf *eb);
  sc_err (*get_async)(store *st, const char *ns, const char *name,
                      store_reply_cb cb, void *ud, sc_errbuf *eb);
  sc_err (*update_status_async)(store *st, const char *ns, const char *name,
                                const char *expected_version,
                                const session_status *status,
                                store_reply_cb cb, void *ud, sc_errbuf *eb);
  sc_err (*purge_async)(store *st, const char *ns, const char *name,
                        const char *expected_version, store_reply_cb cb,
                        void *ud, sc_errbuf *eb);
  size_t (*async_inflight)(const store *st);
  /* Optional (NULL: the backend has no file to lose, SC_OK). */
  sc_err (*check_identity)(store *st, sc_errbuf *eb);
  /* Optional (NULL: no name is recorded; store.c answers SC_OK with
   * out->recorded false). The semantics of store.h. */
  sc_err (*claim_name)(store *st, const char *name, const char *adopt_from,
                       store_served_by *out, sc_errbuf *eb);
  sc_err (*served_by_get)(store *st, store_served_by *out, sc_errbuf *eb);
  /* Optional (NULL: the backend keeps no finalizers: store.h's
   * store_needs_finalizer() is false and store_ensure_finalizer_async()
   * answers with a get, "nothing to do"). The semantics of store.h;
   * store_finalizer.c checks the loop and the key first. */
  bool (*needs_finalizer)(const store *st, const session *s);
  sc_err (*ensure_finalizer_async)(store *st, const session *s,
                                   store_reply_cb cb, void *ud,
                                   sc_errbuf *eb);
  /* Optional (NULL: store_write_probe() answers SC_ERR_INVALID, "no
   * probe"). The semantics of store.h. */
  sc_err (*write_probe)(store *st, sc_errbuf *eb);
  /* store_set_annotation (store.h); key, value and version checked by
   * store.c. Last in the table so that positional tables stay right. */
  sc_err (*set_annotation)(store *st, const char *ns, const char *name,
                           const char *expected_version, const char *key,
                           const char *value, char **new_version,
                           sc_errbuf *eb);
} store_ops;

struct store_deferred;

struct store {
  const store_ops *ops;
  /* set by store_open(): the loop of the asynchronous calls, and the
   * answers store.c holds for backends without asynchronous ops */
  struct event_base *base;
  struct store_deferred *deferred;
  size_t n_deferred;
  char *url;            /* set by store_open(): the URL, for messages */
  bool created;         /* set by the backend: this open created it */
  /* set by store_open(): where skipped objects are reported
   * (store_skip_report) and what was reported when */
  struct logger *log;
  struct metrics *metrics;
  int64_t skip_interval_ms;
  struct store_skip_seen *seen;
  size_t n_seen;
};

struct store_watch {
  const store_ops *ops;
};

/* The longest namespace or name accepted (Kubernetes: 253). */
#define STORE_KEY_MAX 253

/* SC_ERR_INVALID unless ns and name are non-empty, at most STORE_KEY_MAX
 * bytes and free of control characters and '/'. what names the caller
 * ("apply objects[2]") for the message. */
sc_err store_check_key(const char *ns, const char *name, const char *what,
                       sc_errbuf *eb);

/* A random (RFC 4122 version 4) uid: 36 characters + NUL into buf. */
#define STORE_UID_LEN 37
sc_err store_uid_new(char buf[STORE_UID_LEN], sc_errbuf *eb);

/* Revisions are decimal strings of a non-negative int64. */
#define STORE_REV_LEN 24
void store_rev_format(int64_t rev, char buf[STORE_REV_LEN]);
/* SC_ERR_INVALID unless s is a plain decimal number (no sign, no spaces)
 * that fits an int64. */
sc_err store_rev_parse(const char *s, int64_t *out);

/* An object the backend holds but cannot hand out (store.h, "Objects
 * that do not decode"): appended to res->skipped when res is given (a
 * list; NULL for a watch event or a get), counted under `where` ("list",
 * "watch", "get"), and logged unless this object was logged with the
 * same reason less than skip_interval_ms ago. ns, name and uid may be
 * NULL. *logged (may be NULL) is true when this call logged it: the kube
 * backend then marks the object. SC_ERR_NOMEM only when res could not
 * take it. */
sc_err store_skip_report(store *st, store_list_result *res,
                         const char *where, const char *ns,
                         const char *name, const char *uid,
                         const char *reason, bool *logged);
/* A list of every namespace ended with res: the gauge of undecodable
 * objects. */
void store_skip_list_done(store *st, const store_list_result *res);

/* Backends. */
sc_err store_sqlite_open(const char *path, const store_open_opts *opts,
                         store **out, sc_errbuf *eb);
/* context NULL = the kubeconfig's current context */
sc_err store_kube_open(const char *context, const store_open_opts *opts,
                       store **out, sc_errbuf *eb);

#endif
