/*
 * cube.h - the asynchronous Cube / E2B sandbox API client
 * (docs/cube-client.md). libcurl multi driven by a libevent loop: many
 * calls in flight, connections kept alive and reused, nothing blocks the loop.
 *
 * Ownership and lifetime:
 *  - cube_client_new() copies every string of the opts; the opts may be
 *    freed right after. The API key is kept only inside the request header
 *    lists (wiped once no call uses them) and never appears in a log line
 *    or a message: any occurrence of it in a peer's answer is replaced by
 *    "***". It may change while the client runs (cube_client_set_api_key,
 *    or api_key_file read again when it changes): the next request uses
 *    the new key, a request in flight keeps the one it was sent with.
 *  - The sandbox access tokens of create and GET answers (envdAccessToken,
 *    trafficAccessToken) are never read or kept, and an error body that
 *    names one is not quoted in a message. The `domain` is kept only when
 *    cube_domain_valid() accepts it.
 *  - Every call (cube_list, cube_get, ...) copies its arguments. It returns
 *    SC_OK when the call was accepted: then its callback runs EXACTLY ONCE,
 *    always later from the event loop, never from inside the call itself.
 *    It returns an error (and never runs the callback) only when the client
 *    is NULL or closing, the callback is NULL, or memory ran out. Bad
 *    arguments (an invalid sandbox ID, state) are reported through the
 *    callback as SC_ERR_INVALID, like every other failure.
 *  - The cube_result and everything it points to belong to the client and
 *    are valid only during the callback. Copy what you keep, or move the
 *    big payloads out with cube_result_take_sandboxes() /
 *    cube_result_take_sandbox() / cube_result_take_id().
 *  - A callback may start new calls. It must not call cube_client_free().
 *  - cube_client_free(c) (NULL accepted) aborts every queued and in-flight
 *    call: each callback runs once, synchronously inside cube_client_free,
 *    with err SC_ERR_UNAVAILABLE and a message ending in "aborted", so the
 *    caller can free its per-call state there. New calls made from those
 *    callbacks are refused (SC_ERR_UNAVAILABLE returned, no callback).
 *
 * Retries: the client never retries a call on its own, with one exception:
 * cube_list asks again for a page that failed transiently (reset, timeout,
 * 408, 429, 5xx), up to CUBE_LIST_PAGE_RETRIES times per page, after
 * Retry-After (at most CUBE_LIST_RETRY_MAX_MS) or 50, 100, 200.. ms, so a
 * long paged list survives a few percent of failures. Everything else
 * reports the error, the HTTP status and Retry-After (retry_after_ms); the
 * work queue backs off.
 */
#ifndef SC_CUBE_H
#define SC_CUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/dynbuf.h"
#include "lib/sc_err.h"
#include "lib/sctime.h"
#include "controller/cube/sandbox.h"

#ifndef SC_VERSION
#define SC_VERSION "0.1.0"
#endif

struct event_base;

#define CUBE_DEFAULT_URL "http://127.0.0.1:3000"
#define CUBE_DEFAULT_MAX_INFLIGHT 128 /* docs/cube-client.md: measured */
#define CUBE_DEFAULT_QPS 30.0 /* 3 replicas under Cube's 100/s per key */
#define CUBE_TIMEOUT_MS 35000L        /* plain calls */
#define CUBE_LONG_TIMEOUT_MS 125000L  /* pause and connect */
#define CUBE_CONNECT_TIMEOUT_MS 10000L
#define CUBE_LIST_CAP (64u * 1024 * 1024) /* one list page body */
#define CUBE_BODY_CAP (1024u * 1024)      /* every other body */
#define CUBE_PAGE_LIMIT 100               /* rows asked per list page */
#define CUBE_MAX_PAGES 1000               /* pages followed per cube_list */
/* one cube_list across its pages (a server may send more rows than the
 * limit per page): past either, SC_ERR_TOO_LARGE */
#define CUBE_LIST_MAX_ROWS 200000u
#define CUBE_LIST_MAX_BYTES (256u * 1024 * 1024)
#define CUBE_LIST_PAGE_RETRIES 4          /* transient failures per page of a cube_list */
#define CUBE_LIST_RETRY_MAX_MS 5000       /* longer Retry-After: no page retry */
#define CUBE_ID_MAX 128                   /* bytes of a sandbox ID */
#define CUBE_DOMAIN_MAX 253               /* bytes of a domain, port included */
#define CUBE_JSON_MAX_DEPTH 32

typedef struct cube_client cube_client;

/* The API key file was read again (see "The API key file"): ok, and a
 * one-line message naming the file, never the key. */
typedef void (*cube_key_cb)(void *ud, bool ok, const char *message);

typedef struct cube_client_opts {
  const char *base_url;      /* NULL: CUBE_DEFAULT_URL; http or https,
                                may carry a path prefix */
  const char *api_key;       /* NULL or "": no auth headers */
  /* the key's file: read at cube_client_new (api_key is then ignored)
   * and again when it changes (see "The API key file" below) */
  const char *api_key_file;
  cube_key_cb on_key_reload; /* NULL: not told */
  void *on_key_reload_ud;
  const char *ca_file;       /* NULL: the system CA store */
  bool insecure_skip_verify; /* no peer/host verification (explicit) */
  int max_inflight;          /* transfers at once; more wait in a queue */
  double qps;                /* token bucket, requests per second
                                (burst: one second's worth); 0 = unlimited */
  const char *user_agent;    /* NULL: "session-controller/" SC_VERSION */
  long timeout_ms;           /* 0: CUBE_TIMEOUT_MS (tests lower it) */
  long long_timeout_ms;      /* 0: CUBE_LONG_TIMEOUT_MS */
  long connect_timeout_ms;   /* 0: CUBE_CONNECT_TIMEOUT_MS */
  size_t list_cap;           /* 0: CUBE_LIST_CAP */
  size_t body_cap;           /* 0: CUBE_BODY_CAP */
  /* a cube_list across all its pages: 0: CUBE_LIST_MAX_ROWS rows,
   * CUBE_LIST_MAX_BYTES bytes of page bodies (tests lower them) */
  size_t list_max_rows;
  size_t list_max_bytes;
} cube_client_opts;

/* Fill opts with the defaults above (max_inflight 128, qps 30). */
void cube_client_opts_init(cube_client_opts *opts);

/* NULL on failure with a one-line reason in eb (bad URL, bad option). */
cube_client *cube_client_new(struct event_base *base,
                             const cube_client_opts *opts, sc_errbuf *eb);
void cube_client_free(cube_client *c);

/* "127.0.0.1:3000": how messages name the peer. */
const char *cube_client_peer(const cube_client *c);
/* Calls accepted and not yet completed (queued + in flight). */
size_t cube_client_pending(const cube_client *c);
/* Cube's word on the API key: how many answers in a row were 401 or 403
 * (0 once an answer of any other status came), and in *status (may be
 * NULL) the last such status. The client only counts; the reconciler
 * decides what it means. NULL c: 0. */
unsigned cube_client_auth_failures(const cube_client *c, long *status);

/* The API key file (opts.api_key_file): before a request starts the client
 * looks at the file (stat: device, inode, size, mtime, ctime) at most once
 * every CUBE_KEY_CHECK_MS, and at once (reading it even if it looks
 * unchanged, then at most once every CUBE_KEY_CHECK_MS while Cube goes on
 * refusing) after a 401 or 403 to a request sent with the current key.
 * When it changed it is read: trailing white space is stripped; a key
 * that is empty, has a control character or a NUL, or a file over
 * CUBE_API_KEY_MAX bytes is refused. A new key is used from the next
 * request on (on_key_reload ok, "Cube API key reloaded from FILE"); a
 * file that cannot be read or holds a bad key keeps the key in use
 * (on_key_reload not ok, once per change of the file). The same key
 * again says nothing. */
#define CUBE_KEY_CHECK_MS 1000
#define CUBE_API_KEY_MAX 8192

/* Use key (NULL or "": no auth headers) from the next request on; calls in
 * flight keep theirs (with api_key_file, the file's next change replaces
 * it). SC_ERR_INVALID (the key is kept) for a control character or over
 * CUBE_API_KEY_MAX bytes; the message never holds the key. */
sc_err cube_client_set_api_key(cube_client *c, const char *key,
                               sc_errbuf *eb);

typedef enum cube_op {
  CUBE_OP_LIST = 0,
  CUBE_OP_LIST_PAGE,
  CUBE_OP_GET,
  CUBE_OP_CREATE,
  CUBE_OP_PAUSE,
  CUBE_OP_CONNECT,
  CUBE_OP_SET_TIMEOUT,
  CUBE_OP_DELETE,
  CUBE_OP_PROBE,
  CUBE_OP_RESERVE /* cube_reserve: a turn, no request */
} cube_op;

typedef enum cube_dialect {
  CUBE_DIALECT_UNKNOWN = 0,
  CUBE_DIALECT_CUBE,
  CUBE_DIALECT_E2B
} cube_dialect;

const char *cube_op_name(cube_op op);           /* "list", "get", ... */
const char *cube_dialect_name(cube_dialect d);  /* "unknown", "cube", "e2b" */

/* The dialect the client reads list pages by: UNKNOWN until a cube_probe
 * decides one (a probe that cannot tell keeps the one before) or this
 * sets it. With e2b a last page without X-Next-Token ends the list, full
 * or not; otherwise a full page without one may be short
 * (truncated_suspect). NULL c: ignored / UNKNOWN. */
void cube_client_set_dialect(cube_client *c, cube_dialect d);
cube_dialect cube_client_dialect(const cube_client *c);

typedef struct cube_result {
  cube_op op;
  sc_err err;
  long http_status;       /* of the last response; 0 if none arrived */
  const char *message;    /* "" on success; else one line:
                             "cube HOST:PORT: METHOD PATH: what went wrong" */
  int64_t retry_after_ms; /* Retry-After of the last response; -1 if none */
  sc_time cube_now;       /* Date header (first page for lists); 0 if none */

  /* cube_list / cube_list_page: all rows, in server order */
  cube_sandbox *sandboxes;
  size_t n_sandboxes;
  bool truncated_suspect; /* a page had rows >= limit and no next token,
                             from a server not known to page (not e2b,
                             no earlier token, no X-Total-Running) */
  size_t pages;           /* pages fetched */
  unsigned page_retries;   /* cube_list: pages asked again after a
                             transient failure (see cube_list) */
  const char *next_token; /* cube_list_page: X-Next-Token or NULL */

  cube_sandbox sandbox;   /* cube_get */
  const char *sandbox_id; /* cube_create: the new ID */
  const char *domain;     /* cube_create: where the sandbox is reached
                             (the answer's `domain`, checked by
                             cube_domain_valid); NULL when absent or
                             not a host name. The answer's access
                             tokens are never read, kept or shown. */
  bool already;           /* cube_pause: it was already paused (409, or
                             Cube's 500 "already paused"): GET to decide */
  bool resumed;           /* cube_connect: 201 (E2B resumed it) */
  bool already_gone;      /* cube_delete: 404 */
  bool maybe_done;        /* failed, but the request was sent and no whole
                             answer came (a reset, a timeout), or a 2xx
                             body was unreadable: the call may have taken
                             effect (cube_create: a sandbox may exist) */

  cube_dialect dialect;   /* cube_probe */
  const char *detail;     /* cube_probe: why that dialect (one line) */
} cube_result;

typedef void (*cube_cb)(const cube_result *r, void *ud);

/* Move payloads out of a result inside its callback; the caller then owns
 * them (cube_sandbox_clear each row and free() the array / string). */
cube_sandbox *cube_result_take_sandboxes(const cube_result *r, size_t *n);
void cube_result_take_sandbox(const cube_result *r, cube_sandbox *out);
char *cube_result_take_id(const cube_result *r);

/* Every list row of state (`"running"` or `"paused"`, NULL for no state
 * filter) whose metadata holds every pair of filter (NULL or empty: no
 * filter). Follows X-Next-Token pages (limit=100) up to CUBE_MAX_PAGES.
 * A page that fails transiently is asked again (see Retries above). */
sc_err cube_list(cube_client *c, const sc_kvlist *filter, const char *state,
                 cube_cb cb, void *ud);
/* One page: limit 1..100 (0: 100), next_token NULL for the first. */
sc_err cube_list_page(cube_client *c, const sc_kvlist *filter,
                      const char *state, int limit, const char *next_token,
                      cube_cb cb, void *ud);
/* GET /sandboxes/{id}; SC_ERR_NOT_FOUND on 404 (or a body code 404). */
sc_err cube_get(cube_client *c, const char *id, cube_cb cb, void *ud);

typedef struct cube_create_req {
  const char *template_id;
  int64_t timeout_s;       /* idle timeout in seconds; >= 0 */
  const sc_kvlist *metadata;
  const sc_kvlist *env_vars;
  /* false (the default): Cube resumes the paused sandbox when a request
   * reaches it. true: it stays paused until cube_connect; both dialects'
   * fields say so (E2B autoResume.enabled, Cube lifecycle.autoResume). */
  bool no_auto_resume;
  /* The network policy (both dialects read the same names): unset parts
   * are left out, so Cube's defaults apply. allow_internet is sent as
   * allow_internet_access; allow_out, deny_out and allow_public as
   * network {allowOut, denyOut, allowPublicTraffic}. */
  session_optbool allow_internet;
  char *const *allow_out;
  size_t n_allow_out;
  char *const *deny_out;
  size_t n_deny_out;
  session_optbool allow_public;
  /* volumeMounts [{name, path, readOnly}] (readOnly only when true) */
  const session_volume_mount *volume_mounts;
  size_t n_volume_mounts;
} cube_create_req;

/* A turn of the queue and the token bucket with no request: cb runs
 * (err SC_OK) once a create would have been sent, so the caller can do
 * what must come right before it (the create claim, act/claim.c) and then
 * send it with cube_create_reserved(), ahead of the queue, the token
 * already taken. A reservation holds an in-flight slot from its turn
 * until its create is sent or cube_reserve_cancel() gives it back: at
 * most max_inflight claims are out ahead of their creates, so 100,000
 * creates at once hold 128 requests in memory, not 100,000, and no claim
 * waits behind a queue of creates past its TTL. Every turn ends in
 * exactly one cube_create_reserved() or cube_reserve_cancel(). */
sc_err cube_reserve(cube_client *c, cube_cb cb, void *ud);
/* The create of a cube_reserve() will not be sent (its claim was lost):
 * its token goes back to the bucket, so a replica that loses a claim race
 * does not pay for the winner's create, and its slot to the queue. */
void cube_reserve_cancel(cube_client *c);
/* cube_create after a cube_reserve(): ahead of the queue, no token. */
sc_err cube_create_reserved(cube_client *c, const cube_create_req *req,
                            cube_cb cb, void *ud);
/* POST /sandboxes with both dialects' pause-on-timeout and auto-resume
 * fields. Zero the req (or set every field): no_auto_resume is read. */
sc_err cube_create(cube_client *c, const cube_create_req *req, cube_cb cb,
                   void *ud);
sc_err cube_pause(cube_client *c, const char *id, cube_cb cb, void *ud);
sc_err cube_connect(cube_client *c, const char *id, int64_t timeout_s,
                    cube_cb cb, void *ud);
sc_err cube_set_timeout(cube_client *c, const char *id, int64_t timeout_s,
                        cube_cb cb, void *ud);
/* The set-timeout that follows a GET which saw the sandbox running, from
 * that GET's callback: ahead of the queue like cube_delete_now. Cube moves
 * a paused sandbox's endAt (its reclaim clock) when its timeout changes,
 * so the controller sets timeouts only on sandboxes it just saw running. */
sc_err cube_set_timeout_now(cube_client *c, const char *id,
                            int64_t timeout_s, cube_cb cb, void *ud);
/* The GET right before a DELETE, from a callback of the same action (the
 * store re-read): ahead of the queue like cube_delete_now, so the look
 * that decides the DELETE is as fresh as the client can make it. */
sc_err cube_get_now(cube_client *c, const char *id, cube_cb cb, void *ud);
sc_err cube_delete(cube_client *c, const char *id, cube_cb cb, void *ud);
/* The DELETE that follows a confirming GET, called from that GET's
 * callback: it goes ahead of every queued call and is not held by the token
 * bucket (it takes its token into debt, so the rate over time stays qps),
 * and it takes the slot the GET just freed. Nothing the client queued runs
 * between the two, so the window in which a user's request can resume the
 * sandbox after the GET saw it paused is one round trip (rule 3 of docs/architecture.md;
 * E2B has no conditional delete to close it). */
sc_err cube_delete_now(cube_client *c, const char *id, cube_cb cb, void *ud);
/* GET /health, then a tiny list; see docs/cube-client.md for the rules. */
sc_err cube_probe(cube_client *c, cube_cb cb, void *ud);

/* --- metadata filter (meta.c) ---
 * The value of the `metadata` query parameter as it appears in the URL:
 * each key and value percent-encoded twice, joined as k=v&k2=v2, and the
 * whole percent-encoded once more (what the E2B SDK sends; E2B's query
 * parsing, its QueryUnescape and its ParseQuery undo one layer each).
 * Unreserved A-Za-z0-9 - _ . ~ are kept; keys in byte order. Appends. */
sc_err cube_meta_encode(const sc_kvlist *filter, dynbuf *out);
/* The inverse, as E2B does it: decode the URL text (+ is a space), decode
 * the value again, split on & and =, decode each key and value. Malformed
 * %-escapes, NUL bytes, empty or duplicate keys: SC_ERR_INVALID. */
sc_err cube_meta_decode(const char *query_value, sc_kvlist *out,
                        sc_errbuf *eb);
/* Percent-encode bytes (encodeURIComponent, plus ' ! ( ) * escaped). */
sc_err cube_pct_encode(const char *s, size_t len, dynbuf *out);

/* --- response parsing (json.c); strict, typed, messages name the
 * row and field. Exposed for tests and fuzzing. --- */
/* A JSON array of ListedSandbox. On error no rows are returned. A plain
 * body is read in one scan (json_fast.c); anything else, and every error,
 * by json-c (cube_parse_list_tree): the same rows or the same error. */
sc_err cube_parse_list(const char *body, size_t len, cube_sandbox **rows,
                       size_t *n, sc_errbuf *eb);
/* The json-c path alone (the tests compare the two). */
sc_err cube_parse_list_tree(const char *body, size_t len, cube_sandbox **rows,
                            size_t *n, sc_errbuf *eb);
/* The one-scan path alone: SC_OK with the rows, or CUBE_FAST_GIVE_UP
 * (no rows) when the body is not one it reads: then the tree path
 * decides. Never an answer of its own that the tree path would not give. */
#define CUBE_FAST_GIVE_UP SC_ERR_INVALID
sc_err cube_parse_list_fast(const char *body, size_t len, cube_sandbox **rows,
                            size_t *n);
/* One SandboxDetail object. */
sc_err cube_parse_sandbox(const char *body, size_t len, cube_sandbox *out,
                          sc_errbuf *eb);
/* The 201 body of a create: the sandboxID (malloc'd). */
sc_err cube_parse_created(const char *body, size_t len, char **id,
                          sc_errbuf *eb);
/* The same, and in *domain (malloc'd; may be NULL to skip) the `domain`
 * when it passes cube_domain_valid, else NULL: a domain that is not a
 * string or not a host name is dropped, it never fails the body. The
 * access tokens of the answer (envdAccessToken, trafficAccessToken) are
 * not read. */
sc_err cube_parse_created_ex(const char *body, size_t len, char **id,
                             char **domain, sc_errbuf *eb);
/* A domain we keep: 1..CUBE_DOMAIN_MAX bytes in all, a host of
 * [A-Za-z0-9.-] that begins with a letter or digit, optionally ":PORT"
 * (1..65535, no leading zero). */
bool cube_domain_valid(const char *domain);
/* Best effort on an error body {"code":N,"message":"..."}: *code 0 and
 * msg "" when absent or malformed. Never fails. */
void cube_parse_error_body(const char *body, size_t len, int *code,
                           char *msg, size_t msglen);
/* A sandbox ID we accept: 1..128 bytes of [A-Za-z0-9-]. */
bool cube_id_valid(const char *id);
/* What an ID looks like: CUBE (32 lowercase hex), E2B ("i" + 20 of
 * [a-z0-9]) or UNKNOWN. */
cube_dialect cube_id_dialect(const char *id);

#endif
