/*
 * sc_err.h - the one error enum returned everywhere in session-controller.
 *
 * Rules (as curl's CURLcode): every function that can fail returns an
 * sc_err; SC_OK is 0 so `if(err) goto out;` reads naturally. Functions that
 * also produce a human message take a `sc_errbuf *` and write one line into
 * it; the caller owns the buffer.
 */
#ifndef SC_ERR_H
#define SC_ERR_H

#include <stddef.h>

typedef enum sc_err {
  SC_OK = 0,
  SC_ERR_NOMEM,       /* allocation failed */
  SC_ERR_INVALID,     /* bad input: validation or parse failure */
  SC_ERR_IO,          /* file or socket I/O failed */
  SC_ERR_NOT_FOUND,   /* the object does not exist */
  SC_ERR_CONFLICT,    /* compare-and-set lost: stale version */
  SC_ERR_EXISTS,      /* create of an object that exists */
  SC_ERR_EXPIRED,     /* watch revision older than kept history: relist */
  SC_ERR_TOO_LARGE,   /* input over a size cap */
  SC_ERR_PROTOCOL,    /* a peer sent something we cannot use */
  SC_ERR_TIMEOUT,     /* a call did not finish in time */
  SC_ERR_BUSY,        /* a resource is locked; retry later */
  SC_ERR_UNAVAILABLE, /* a peer is down or refused */
  SC_ERR_INTERNAL,    /* a bug: an invariant did not hold */
  SC_ERR__COUNT
} sc_err;

/* A static, lower-case name for the code ("conflict"). Never NULL. */
const char *sc_strerror(sc_err err);

/* A fixed-size message buffer for one line of error text. */
#define SC_ERRBUF_SIZE 512
typedef struct sc_errbuf {
  char msg[SC_ERRBUF_SIZE];
} sc_errbuf;

/* Format a message into eb (NULL eb is accepted and ignored); returns err
 * so that `return sc_errf(eb, SC_ERR_INVALID, "...")` works. */
sc_err sc_errf(sc_errbuf *eb, sc_err err, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

#endif
