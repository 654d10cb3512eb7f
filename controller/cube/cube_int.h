/*
 * cube_int.h - what the files of the Cube client share (not for users of
 * the client: they include cube.h). See docs/cube-client.md.
 *
 * The client is split by concern:
 *   client.c     the client object: options, header lists, new and free
 *   call.c       a call's lifetime: created, ended once, its message
 *   transport.c  requests on the wire: the wait queue, the token bucket,
 *                curl easy setup (headers, TLS, timeouts), Retry-After,
 *                the page retries of cube_list, a request started and
 *                sent at once (a list's next page) or taken back
 *   answers.c    what an answer means: curl errors and HTTP statuses
 *                mapped to results, the idempotent answers, list pages,
 *                the probe, the count of auth failures
 *   calls.c      the public calls (cube_list ... cube_probe)
 *   json.c, meta.c  body parsing and the metadata filter (cube.h)
 *   json_fast.c  the one-scan list page parser (json-c decides the rest)
 *
 * A "call" is what the user asked for (cube_list ...); a call makes one or
 * more HTTP requests in sequence (list pages, the probe's two steps). Each
 * request waits in c->wait for a transfer slot and a token, then runs as
 * one curl easy handle in the multi. Completions reach the callback from
 * the loop only: from cube_on_transfer() after curl finished, or from the
 * deferred `deliver` event for calls that ended before any transfer.
 *
 * Ownership: a cube_call belongs to its client from cube_call_new() until
 * cube_call_complete() (which runs the callback, then frees it); every
 * string in it is its own (malloc'd). The client owns its calls (c->all)
 * and frees what is left in cube_client_free().
 */
#ifndef SC_CUBE_INT_H
#define SC_CUBE_INT_H

#include "controller/cube/cube.h"
#include "lib/curlev.h"
#include "lib/filesig.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

typedef struct cube_call cube_call;

/* One API key and the request header lists that carry it. The client
 * holds the current one; a request in flight holds the one it was sent
 * with (curl reads the lists until the transfer ends). Reference counted;
 * the last unref wipes the key and the lists (key.c). */
typedef struct cube_keyset {
  int refs;
  char *key;                  /* NULL: no auth headers */
  uint64_t gen;                /* the client's count of keys taken */
  struct curl_slist *hdr_plain, *hdr_json, *hdr_empty_post;
} cube_keyset;

/* What stat says about the key file: a change of any field is a change
 * of the file (err: the errno of a stat that failed, else 0). */

struct cube_client {
  struct event_base *base;
  curlev *ev;                 /* the multi handle on the loop */
  struct event *bucket_timer; /* a token comes due */
  struct event *deliver;      /* completions that never reached curl */
  char *base_url;             /* no trailing '/' */
  char peer[160];
  cube_keyset *keys;          /* the key of the next request */
  /* the API key file (key.c): NULL when the key came from opts.api_key */
  char *key_file;
  sc_filesig key_sig;       /* the file as last read */
  bool key_sig_bad;           /* that read was refused (said once) */
  int64_t key_checked_ms;     /* last look (monotonic) */
  int64_t key_forced_ms;      /* last read after a 401/403 ... */
  uint64_t key_forced_gen;    /* ... to the key of this gen */
  uint64_t key_gen;           /* keys taken so far */
  bool key_recheck;           /* a 401/403 to a request with `keys` */
  cube_key_cb on_key;
  void *on_key_ud;
  char *ca_file;
  bool insecure;
  char *user_agent;
  int max_inflight;
  double qps, tokens;
  int64_t refill_ms;
  long timeout_ms, long_timeout_ms, connect_timeout_ms;
  size_t list_cap, body_cap;
  size_t list_max_rows, list_max_bytes;
  cube_call *wait_head, *wait_tail; /* requests waiting to start */
  cube_call *done_head, *done_tail; /* finished without a transfer */
  cube_call *all;                   /* every live call */
  int inflight;
  int reserved;               /* reserves granted whose create was neither
                                 sent (create_call) nor cancelled: each
                                 holds an in-flight slot */
  size_t pending;
  unsigned auth_failures;     /* answers in a row that were 401 or 403 */
  long auth_status;           /* the last of them */
  /* the dialect the probe found (or cube_client_set_dialect): an e2b
   * server pages, so its last list page is never "maybe short" */
  cube_dialect dialect;
  bool closing;
};

struct cube_call {
  cube_client *c;
  cube_call *next;             /* in wait or done */
  cube_keyset *keys;           /* the key of the request in flight */
  cube_call *all_prev, *all_next;
  cube_op op;
  cube_cb cb;
  void *ud;
  /* the current request */
  const char *method;
  char path[200];              /* for messages: no query */
  char *url;
  char *body;                  /* NULL: none */
  bool post;
  long timeout_ms;
  size_t cap;
  CURL *easy;
  dynbuf resp;
  dynbuf page;                 /* cube_list: the page being read while
                                  the next one comes into resp */
  char curl_err[CURL_ERROR_SIZE];
  bool over_cap;
  /* captured from the current response */
  long status;
  sc_time date;
  char *retry_after;
  char *next_tok;
  bool total_running;          /* X-Total-Running seen (an E2B tell) */
  bool date_taken;             /* cube_now set from the first response */
  /* per-op state */
  char *id;
  char *list_query;            /* "metadata=..&state=..&limit=N" */
  int limit;
  char *prev_token;
  int step;                    /* probe */
  size_t rows_alloc;
  size_t list_bytes;           /* cube_list: page bodies read so far */
  /* the result being built */
  cube_result r;
  char msg[SC_ERRBUF_SIZE];
  char detail[256];
  char *created_id;
  char *created_domain;        /* cube_create: the checked `domain` */
  char *page_token;
  bool urgent;                 /* cube_delete_now: ahead of the queue and
                                  the token bucket */
  bool prepaid;                /* cube_create_reserved: its token was taken
                                  by the reservation */
  int retries;                 /* cube_list: transient page failures retried */
  struct event *retry_ev;      /* cube_list: a page retry waiting */
};

/* --- call.c --- */

/* A new call of c (NULL: c NULL or closing, cb NULL, out of memory). */
cube_call *cube_call_new(cube_client *c, cube_op op, cube_cb cb, void *ud);
/* Set the result's error and its one-line message:
 * "cube PEER: METHOD PATH: <text>" (one line, the API key scrubbed). */
void cube_call_msg(cube_call *k, sc_err err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* cube_call_msg(), then cube_call_defer(): how a call that was accepted
 * ends before any request (a bad argument). Returns SC_OK, what the call
 * returns to its caller then. */
sc_err cube_call_fail(cube_call *k, sc_err err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Run the callback once, then free the call. */
void cube_call_complete(cube_call *k);
/* End a call that has no transfer running; the callback runs later. */
void cube_call_defer(cube_call *k);
/* The `deliver` event: completes the deferred calls (arg: the client). */
void cube_call_deliver(evutil_socket_t fd, short what, void *arg);

/* --- key.c --- */

/* A key set for key (NULL or "": none); NULL when out of memory. */
cube_keyset *cube_keyset_new(const char *key);
cube_keyset *cube_keyset_ref(cube_keyset *ks);
void cube_keyset_unref(cube_keyset *ks); /* NULL accepted */
/* A key the client sends: no control character, at most
 * CUBE_API_KEY_MAX bytes (the message never holds the key). */
sc_err cube_key_check(const char *key, sc_errbuf *eb);
/* Read the key file at c->key_file into *key (malloc'd; wipe it) and
 * its signature into *sig. */
sc_err cube_key_file_read(const cube_client *c, char **key,
                          sc_filesig *sig, sc_errbuf *eb);
/* Before a request starts: look at the key file when due (see cube.h,
 * "The API key file") and take a new key from it. */
void cube_key_poll(cube_client *c);
/* An answer of status to a request sent with ks: a 401 or 403 to the
 * current key has the file read at once. */
void cube_key_answer(cube_client *c, const cube_keyset *ks, long status);

/* --- transport.c --- */

/* Point the call at its next request. query may be NULL; body (NULL:
 * none) is the call's from now on. */
sc_err cube_set_request(cube_call *k, const char *method, const char *path,
                        const char *query, char *body, bool post,
                        bool long_timeout, size_t cap);
/* Queue the call's current request (front: a continuing call). */
void cube_submit(cube_call *k, bool front);
/* Start waiting requests while there are slots and tokens. */
void cube_pump(cube_client *c);
/* Start the call's current request at once and send it, if a slot and a
 * token are free (true); false: nothing was started, cube_submit() it. */
bool cube_start_now(cube_call *k);
/* Take back the request cube_start_now() started (no callback runs). */
void cube_take_back(cube_call *k);
/* Retry-After of the current response as milliseconds; -1 if none. */
int64_t cube_retry_after_ms(const cube_call *k);
/* cube_list: the same page scheduled again after a transient failure.
 * true: the call goes on (nothing to report yet). */
bool cube_list_retry(cube_call *k, CURLcode cc);

/* --- answers.c --- */

/* curlev's completion callback: a transfer ended (ud: the client). */
void cube_on_transfer(CURL *e, CURLcode cc, void *ud);

/* --- calls.c --- */

/* Point a list call at the page after token (NULL: the first). */
sc_err cube_list_request(cube_call *k, const char *token);

#endif
