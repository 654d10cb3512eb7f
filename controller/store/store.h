/*
 * store.h - where Session objects live (docs/store.md).
 *
 * One interface, several backends chosen by URL:
 *   sqlite:PATH   the embedded default (store_sqlite.c)
 *   kube          the Kubernetes API server (store/kube*.c, docs/store.md)
 *   kube:CONTEXT  the same with a kubeconfig context other than the current
 *
 * Calls are synchronous except watch, which delivers events from the
 * libevent loop given to store_open(), and the store_*_async() calls of
 * the controller, whose answers come from that loop too (so a store on
 * the network never stops the loop). A backend never decides anything; it
 * stores what it is given, enforces versions, and reports changes.
 *
 * Versions: metadata.resource_version is an opaque string; callers only
 * compare it for equality and hand it back. metadata.generation is bumped
 * only when the spec changes.
 *
 * Ownership: store_open() gives the caller a store to store_close() (NULL
 * accepted). Sessions returned are the caller's (session_free()); a list
 * asked with store_list_opts.shared may return shared, read-only ones
 * (session_ref()), still the caller's to free once. Sessions
 * passed in are only read. Event objects are valid only during the
 * callback; copy what you keep (session_dup()). store_close() also stops
 * and frees every watch still running; never call it from a watch
 * callback. A store is used from one thread.
 */
#ifndef SC_STORE_H
#define SC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "api/session.h"

struct event_base;
struct logger;
struct metrics;
typedef struct store store;
typedef struct store_watch store_watch;

typedef struct store_open_opts {
  struct event_base *base;  /* for watches; NULL if none will be started */
  int busy_timeout_ms;      /* sqlite: 0 = 5000 */
  int poll_interval_ms;     /* sqlite watch poll; 0 = 100 */
  int history_keep;         /* sqlite: revisions of history kept; 0 = 10000 */
  /* sqlite: commit without waiting for the disk (synchronous=NORMAL in WAL
   * mode). A power loss may lose this connection's last commits, never
   * corrupt the file. For writers whose writes are recomputed anyway:
   * the controller's status writes (the tags and the next pass recover a
   * lost one); never for sessionctl, whose "created" must be durable. */
  bool relaxed_sync;
  /* sqlite: create an empty store when PATH does not exist. false (the
   * default): a missing file is SC_ERR_NOT_FOUND naming the path, and
   * nothing is created (no PATH, PATH-wal or PATH-shm); an existing file
   * that holds no session store yet (empty) is SC_ERR_NOT_FOUND too. A
   * mistyped path must not look like a store without sessions. kube: no
   * effect (the API server holds the store). */
  bool create;
  const char *kubeconfig;   /* kube: kubeconfig file; NULL = $KUBECONFIG,
                               in-cluster, ~/.kube/config (in this order) */
  const char *namespace_;   /* kube: list/watch only this namespace; NULL =
                               all namespaces */
  int watch_timeout_s;      /* kube: watch timeoutSeconds; 0 = random in
                               [240, 360) */
  const char *user_agent;   /* kube: the User-Agent of the calls; NULL =
                               "session-controller" */
  /* Objects the store holds but cannot hand out ("Objects that do not
   * decode" below) are reported here: one log line per object per
   * skip_log_interval_ms (again at once when the reason changes), and the
   * counters of store_declare_metrics() (declared on metrics before the
   * open). NULL: not logged, not counted; they are skipped all the same
   * and listed in store_list_result.skipped. Borrowed: they must outlive
   * the store. */
  struct logger *log;
  struct metrics *metrics;
  int skip_log_interval_ms; /* 0 = 10 minutes */
  /* kube: also mark a skipped object that has a name with the status
   * condition Ready=False, reason InvalidObject (a best-effort merge
   * patch of its /status, on the loop of base, at most once per
   * skip_log_interval_ms per object; docs/store.md). The controller's. */
  bool mark_invalid;
} store_open_opts;

/* url "sqlite:PATH" (with opts->create, a missing file is created with
 * mode 0600), "kube" or "kube:CONTEXT". */
sc_err store_open(const char *url, const store_open_opts *opts, store **out,
                  sc_errbuf *eb);
void store_close(store *st);
/* "sqlite" ... */
const char *store_backend(const store *st);
/* kube: a copy of the store's connection (kubeconfig.h; the caller's, to
 * kube_conn_clear()), for the controller's other calls to the same API
 * server: the credential source is shared, so an exec plugin runs once
 * for both. SC_ERR_INVALID for another backend. */
struct kube_conn;
sc_err store_kube_conn(const store *st, struct kube_conn *out,
                       sc_errbuf *eb);
/* "sqlite:PATH", "kube", "kube:CONTEXT": the URL it was opened with, for
 * messages ("" for NULL). */
const char *store_url(const store *st);
/* This store_open() created the store (sqlite with opts->create: the file
 * did not exist, or was empty). */
bool store_created(const store *st);

/* Is the store still the one store_open() opened? sqlite: PATH must still
 * name the file that was opened (same device and inode: a file moved
 * away, replaced or removed under a running process is not; the process
 * would go on reading and writing the old, unlinked file), and, after
 * store_claim_name(), the store must still record that controller name
 * (store_served_by). SC_OK, or SC_ERR_CONFLICT with a message naming the
 * path and what changed. A new file at PATH is never adopted: only the
 * old file coming back (moved back) makes it SC_OK again. A failed read of
 * the recorded name (busy, I/O) is not a change: SC_OK. kube: always SC_OK
 * (the API server is the store; there is no file to lose). Cheap (one
 * stat(2) and one small SELECT): the controller calls it before every
 * pass. */
sc_err store_check_identity(store *st, sc_errbuf *eb);

/* Does the store take writes now? A write that changes nothing but must
 * reach the disk (sqlite: a row rewritten in a write transaction), for a
 * controller whose writes failed, to learn when they work again without
 * waiting for a session to change. Synchronous and cheap. Backends
 * without one (kube: every write is a request that answers for itself):
 * store_has_write_probe() false. */
bool store_has_write_probe(const store *st);
sc_err store_write_probe(store *st, sc_errbuf *eb);

/* The controller a store is served by: one controller name per store
 * (docs/store.md, "Which store"). Owned strings; store_served_by_clear()
 * frees them. */
typedef struct store_served_by {
  char *name;            /* the controller name (lea.managed-by) */
  int64_t since_ms;      /* wall clock when that name was recorded */
  char **adopted;        /* names the store was renamed from, oldest first:
                            their sandboxes are this controller's too */
  size_t n_adopted;
  bool recorded;         /* false: the backend records no name (kube) */
} store_served_by;
void store_served_by_clear(store_served_by *sb);

/* Claim the store for controller `name` (the controller, at start):
 *  - no name recorded yet: records name;
 *  - name recorded: SC_OK (replicas and restarts share one name);
 *  - another name recorded and adopt_from equal to it: the rename
 *    migration: records name, appends the old name to adopted;
 *  - another name recorded otherwise: SC_ERR_CONFLICT, "store URL is
 *    served by controller 'a' (since T); refusing to start as 'b'; to
 *    rename use --adopt-from a".
 * adopt_from naming a name already in adopted is accepted (a second
 * replica started with the same flags). *out (may be NULL) gets the
 * record as it stands after the claim. Backends that record no name
 * (kube) answer SC_OK with out->recorded false and name set to `name`. */
sc_err store_claim_name(store *st, const char *name, const char *adopt_from,
                        store_served_by *out, sc_errbuf *eb);
/* Read the record without changing it (sessionctl, tests); SC_OK with
 * out->name NULL when none is recorded. */
sc_err store_served_by_get(store *st, store_served_by *out, sc_errbuf *eb);

typedef struct store_list_opts {
  const char *namespace_;   /* NULL = all namespaces */
  bool include_deleted;     /* also tombstones (deletion_timestamp != 0) */
  bool shared;              /* the caller only reads the items: a store
                               may hand out shared sessions (session_ref;
                               the SQLite store's decode cache), each still
                               freed once by store_list_result_free */
} store_list_opts;

/* Objects that do not decode. One object the store holds but cannot
 * decode (a wrong type, an unknown spec field, more than
 * STORE_OBJECT_MAX bytes of JSON, a broken SQLite row) never stops the
 * others: a list leaves it out of items and names it in skipped; a watch
 * skips its event and goes on (err_cb is not called for it); a get of it
 * fails (SC_ERR_PROTOCOL from kube, SC_ERR_INVALID from SQLite). Each is
 * also reported through store_open_opts.log/metrics. Fields no decision
 * reads (labels, annotations, unknown metadata) never make an object
 * undecodable (SESSION_JSON_LENIENT_METADATA). A consumer that concludes
 * from absence (the controller's orphan rule) must treat a list with
 * skipped objects as incomplete. */
#define STORE_OBJECT_MAX (1024 * 1024)

typedef struct store_skipped {
  char *ns, *name;          /* NULL when the object does not say */
  char *uid;                /* NULL when unknown */
  char *reason;             /* what is wrong, naming the field */
} store_skipped;

typedef struct store_list_result {
  session **items;          /* sorted by namespace, then name */
  size_t n;
  char *revision;           /* the store revision the list reflects */
  store_skipped *skipped;   /* objects held but not decoded, in store
                               order (tombstones included whatever
                               include_deleted says: they cannot be told
                               apart) */
  size_t n_skipped;
} store_list_result;

sc_err store_list(store *st, const store_list_opts *opts,
                  store_list_result *out, sc_errbuf *eb);
void store_list_result_free(store_list_result *r);

/* The metric families the store reports skipped objects with (on the
 * metrics given to store_open()): the counter
 * session_controller_objects_skipped_total{store,where} (where: list,
 * watch, get) and the gauge session_controller_objects_invalid{store}
 * (objects skipped by the last list of every namespace). */
sc_err store_declare_metrics(struct metrics *m);

/* SC_ERR_NOT_FOUND when absent (tombstones are returned, deleted). */
sc_err store_get(store *st, const char *ns, const char *name, session **out,
                 sc_errbuf *eb);

typedef enum store_apply_outcome {
  STORE_APPLY_CREATED,
  STORE_APPLY_CONFIGURED,
  STORE_APPLY_UNCHANGED
} store_apply_outcome;

/* Create or update spec, labels and annotations of each object, never
 * status; all in one transaction: all or nothing. outcomes[i] says what
 * happened to objs[i] (outcomes may be NULL). An object whose name is held
 * by a tombstone (deleted, its sandbox not yet confirmed gone) is refused
 * with SC_ERR_CONFLICT and a message holding STORE_BEING_DELETED_MSG, in
 * every backend (Kubernetes: a create while a finalizer holds the object);
 * the name may be applied again once the controller has purged it, and
 * then it is a new object (new uid, generation 1, empty status). Each
 * object needs metadata.namespace and metadata.name (the caller has
 * applied the defaults and validated the spec); one key twice in objs is
 * invalid. uid, resourceVersion, generation, timestamps, finalizers and
 * status of objs are ignored. An apply that changes nothing is UNCHANGED
 * and writes no revision. */
#define STORE_BEING_DELETED_MSG                                             \
  "the object is being deleted (it waits for the controller to delete its " \
  "sandbox); apply again once it is gone (sessionctl delete waits for "    \
  "that)"
sc_err store_apply(store *st, session *const *objs, size_t n,
                   store_apply_outcome *outcomes, sc_errbuf *eb);

/* Replace the spec of an existing object if its resource_version is still
 * expected_version (SC_ERR_CONFLICT otherwise); for `sessionctl wake`.
 * Bumps the generation when the spec differs; an equal spec writes
 * nothing and *new_version is the current version. SC_ERR_NOT_FOUND on a
 * tombstone. expected_version is required (SC_ERR_INVALID when NULL). */
sc_err store_update_spec(store *st, const char *ns, const char *name,
                         const char *expected_version,
                         const session_spec *spec, char **new_version,
                         sc_errbuf *eb);

/* Compare-and-set of the status: SC_ERR_CONFLICT when the object's
 * resource_version is not expected_version, SC_ERR_NOT_FOUND when absent.
 * Works on tombstones too (watchers see MODIFIED with deletion_timestamp
 * set). An equal status writes nothing. *new_version (may be NULL) is the
 * caller's. expected_version is required (SC_ERR_INVALID when NULL). */
sc_err store_update_status(store *st, const char *ns, const char *name,
                           const char *expected_version,
                           const session_status *status, char **new_version,
                           sc_errbuf *eb);

/* Set (value non-NULL) or remove (value NULL) one annotation of a live
 * object if its resource_version is still expected_version: the
 * compare-and-set of `sessionctl connect` (the lea.io/connect request).
 * Writes a new revision (watchers see MODIFIED) without bumping the
 * generation: annotations are not spec. SC_ERR_CONFLICT on a stale
 * version, SC_ERR_NOT_FOUND when absent or a tombstone (kube: being
 * deleted). A value equal to the current one (or removing an absent key)
 * writes nothing and *new_version is the current version. key: 1 to
 * STORE_ANNOTATION_KEY_MAX bytes, no control characters or spaces;
 * value: at most STORE_ANNOTATION_VALUE_MAX bytes (SC_ERR_INVALID
 * otherwise). expected_version is required. *new_version (may be NULL) is
 * the caller's. */
#define STORE_ANNOTATION_KEY_MAX 317   /* Kubernetes: 253 prefix/63 name */
#define STORE_ANNOTATION_VALUE_MAX (64 * 1024)
sc_err store_set_annotation(store *st, const char *ns, const char *name,
                            const char *expected_version, const char *key,
                            const char *value, char **new_version,
                            sc_errbuf *eb);

/* Mark the object deleted: it becomes a tombstone that watchers see as
 * DELETED and the controller sees in list(include_deleted); it holds its
 * name until the controller purges it. Deleting a tombstone again is SC_OK
 * and writes nothing. An object that no controller has taken on holds
 * nothing to wait for and is gone at once after its DELETED event, in
 * every backend: kube, one without the controller's finalizer; sqlite,
 * one whose status was never written (every sandbox is preceded by a
 * status write, its create claim, rule 11). */
sc_err store_delete(store *st, const char *ns, const char *name,
                    sc_errbuf *eb);

/* Remove a tombstone for good once its sandbox is gone (the controller's
 * finalizer); SC_ERR_CONFLICT on a stale version, SC_ERR_INVALID on a live
 * object. Watchers see nothing (they had the DELETED event) and the store
 * revision does not move. */
sc_err store_purge(store *st, const char *ns, const char *name,
                   const char *expected_version, sc_errbuf *eb);

typedef enum store_event_type {
  STORE_EVENT_ADDED,
  STORE_EVENT_MODIFIED,
  STORE_EVENT_DELETED
} store_event_type;

typedef struct store_event {
  store_event_type type;
  const session *obj;       /* the object as of this revision */
  const char *revision;
} store_event;

/* Called from the event loop for each change after from_revision, in
 * revision order, none lost, none repeated. When the history no longer
 * reaches from_revision, err_cb gets SC_ERR_EXPIRED once and the watch
 * stops: the caller relists and starts a new watch. from_revision NULL or
 * "" means "from now". ev->obj->meta.resource_version == ev->revision.
 *
 * Other errors reach err_cb (may be NULL) without stopping the watch: a
 * failed poll (SC_ERR_BUSY, SC_ERR_IO: once per run of failures, retried).
 * An event whose object does not decode is skipped and reported ("Objects
 * that do not decode" above), never given to err_cb: the watch goes on
 * with the next one. A stopped or expired watch is still freed
 * with store_watch_stop(); the callbacks may call it on their own watch
 * and may call any other store function except store_close(). */
typedef void (*store_watch_cb)(const store_event *ev, void *ud);
typedef void (*store_watch_err_cb)(sc_err err, const char *msg, void *ud);

sc_err store_watch_start(store *st, const char *from_revision,
                         store_watch_cb cb, store_watch_err_cb err_cb,
                         void *ud, store_watch **out, sc_errbuf *eb);
void store_watch_stop(store_watch *w);

const char *store_event_type_name(store_event_type t);

/* --- asynchronous calls (the controller's) ---
 *
 * The same operations as above, answered through cb from the loop given
 * to store_open() (SC_ERR_INVALID without one), never from inside the
 * call itself; an error return means cb will not be called. Arguments
 * are copied: the caller may free them as soon as the call returns.
 * The kube backend sends them on the loop; a backend without I/O (sqlite)
 * does the work at once and delivers the answer on the next turn of the
 * loop, but for status writes: sqlite queues them and writes every one
 * queued by the next turn in one transaction (group commit, each its own
 * compare-and-set and its own answer, given after the commit returned);
 * any other call on that store first writes what is queued, so it sees
 * those writes (docs/store.md, "Cost"). Calls in flight when the store
 * is closed are abandoned: their callbacks are never called (sqlite
 * still writes the queued status writes at close). A callback may start other calls but must
 * not call store_close().
 *
 * The reply is valid during the callback only. The callback may take
 * rep->obj, rep->list or rep->new_version by setting the field to NULL
 * (or zeroing the list); what it leaves is freed after it returns. */
typedef struct store_reply {
  sc_err err;
  const char *message;     /* what went wrong; "" on SC_OK */
  session *obj;            /* get */
  store_list_result list;  /* list */
  char *new_version;       /* update_status */
} store_reply;

typedef void (*store_reply_cb)(store_reply *rep, void *ud);

sc_err store_list_async(store *st, const store_list_opts *opts,
                        store_reply_cb cb, void *ud, sc_errbuf *eb);
sc_err store_get_async(store *st, const char *ns, const char *name,
                       store_reply_cb cb, void *ud, sc_errbuf *eb);
sc_err store_update_status_async(store *st, const char *ns,
                                 const char *name,
                                 const char *expected_version,
                                 const session_status *status,
                                 store_reply_cb cb, void *ud, sc_errbuf *eb);
sc_err store_purge_async(store *st, const char *ns, const char *name,
                         const char *expected_version, store_reply_cb cb,
                         void *ud, sc_errbuf *eb);

/* Asynchronous calls whose callbacks have not run yet. */
size_t store_async_inflight(const store *st);

/* --- the controller's finalizer (docs/store.md, "The finalizer") ---
 *
 * The kube backend's objects carry the finalizer lea.io/sandbox-cleanup,
 * so that a deletion waits until the controller has removed the sandbox
 * (store_purge() takes it away). The controller adds it to each live
 * object that lacks it, one object at a time; a backend without
 * finalizers (sqlite: its tombstones wait for store_purge() anyway) has
 * nothing to do.
 *
 * store_needs_finalizer(): s (an object as read from st) is live and
 * lacks it. Always false for a backend without finalizers. NULL s: false.
 *
 * store_ensure_finalizer_async(): add it to the object s names, guarded
 * by s's resourceVersion: one write, neither retried on a conflict nor
 * preceded by a read. Answered through cb from the loop as the other
 * asynchronous calls above (same rules: SC_ERR_INVALID without a loop,
 * arguments copied, abandoned on store_close()):
 *   SC_OK             rep->obj is the object as written (with the
 *                     finalizer), rep->new_version its resourceVersion;
 *   SC_ERR_CONFLICT   the object changed since s was read: its next event
 *                     or list brings the new version (ask again with it);
 *   SC_ERR_NOT_FOUND  it is gone;
 *   another error     (SC_ERR_UNAVAILABLE after the transport's retries,
 *                     SC_ERR_INVALID for 401/403, SC_ERR_PROTOCOL) for
 *                     this object only: nothing else is affected.
 * When s needs nothing (store_needs_finalizer() false) nothing is
 * written: the answer is the object as it stands now (a get: SC_OK with
 * rep->obj, or SC_ERR_NOT_FOUND). */
bool store_needs_finalizer(const store *st, const session *s);
sc_err store_ensure_finalizer_async(store *st, const session *s,
                                    store_reply_cb cb, void *ud,
                                    sc_errbuf *eb);

#endif
