/*
 * sqlite_name.c - the SQLite backend's controller name table: which
 * controller serves the store, since when, and the names it adopted
 * (docs/store.md, "One controller name per store"). The claim is one
 * write transaction; the identity check (sqlite.c) compares the row with
 * the name claimed. See sqlite_int.h.
 */
#include "controller/store/sqlite/sqlite_int.h"

#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

static const char sq_controller_table[] =
  "CREATE TABLE IF NOT EXISTS controller("
  " id INTEGER PRIMARY KEY CHECK (id = 1),"
  " name TEXT NOT NULL,"      /* the controller serving the store */
  " since_ms INTEGER NOT NULL," /* wall clock when name was recorded */
  " adopted TEXT NOT NULL"    /* JSON array of the names it replaced */
  ")";

static sc_err adopted_from_json(sq_store *s, const char *txt,
                                store_served_by *out, sc_errbuf *eb)
{
  json_object *o = json_tokener_parse(txt ? txt : "");
  size_t i, n;
  sc_err err = SC_OK;
  if(!o || json_object_get_type(o) != json_type_array) {
    json_object_put(o);
    return sc_errf(eb, SC_ERR_INVALID, "%s: controller.adopted is not a "
                   "JSON array", s->label);
  }
  n = json_object_array_length(o);
  out->adopted = calloc(n ? n : 1, sizeof(*out->adopted));
  if(!out->adopted)
    err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  for(i = 0; !err && i < n; i++) {
    json_object *v = json_object_array_get_idx(o, i);
    if(json_object_get_type(v) != json_type_string) {
      err = sc_errf(eb, SC_ERR_INVALID, "%s: controller.adopted[%zu] is not "
                    "a string", s->label, i);
      break;
    }
    out->adopted[i] = strdup(json_object_get_string(v));
    if(!out->adopted[i])
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
    else
      out->n_adopted++;
  }
  json_object_put(o);
  return err;
}

/* The recorded row into out (out->name NULL: none, or no table yet). */
static sc_err read_served_by(sq_store *s, store_served_by *out,
                             sc_errbuf *eb)
{
  sqlite3_stmt *q;
  int64_t tables = 0;
  sc_err err;
  int rc;
  memset(out, 0, sizeof(*out));
  out->recorded = true;
  err = sq_pragma_int(s, "SELECT count(*) FROM sqlite_master WHERE type = "
                      "'table' AND name = 'controller'", &tables, eb);
  if(err || !tables)
    return err;
  err = sq_prep(s, "SELECT name, since_ms, adopted FROM controller"
                   " WHERE id = 1", &q, "read the controller name", eb);
  if(err)
    return err;
  rc = sqlite3_step(q);
  if(rc == SQLITE_ROW) {
    err = sq_dup_col(q, 0, &out->name);
    if(err)
      err = sc_errf(eb, err, "out of memory");
    out->since_ms = sqlite3_column_int64(q, 1);
    if(!err)
      err = adopted_from_json(s, (const char *)sqlite3_column_text(q, 2),
                              out, eb);
  }
  else if(rc != SQLITE_DONE)
    err = sq_fail(s, rc, "read the controller name", eb);
  sq_release(s, q);
  if(err) {
    store_served_by_clear(out);
    out->recorded = true;
  }
  return err;
}

sc_err sq_served_by_get(store *base, store_served_by *out,
                        sc_errbuf *eb)
{
  sq_group_flush((sq_store *)base);
  return read_served_by((sq_store *)base, out, eb);
}

static bool name_in(const store_served_by *sb, const char *name)
{
  size_t i;
  for(i = 0; i < sb->n_adopted; i++)
    if(!strcmp(sb->adopted[i], name))
      return true;
  return false;
}

/* Write the row: name, since (0: now), and adopted = old's list + add
 * (when not there), less name itself. */
static sc_err write_served_by(sq_store *s, const char *name, int64_t since,
                              const store_served_by *old, const char *add,
                              sc_errbuf *eb)
{
  json_object *arr = json_object_new_array();
  sqlite3_stmt *q;
  size_t i;
  sc_err err = SC_OK;
  if(!arr)
    return sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  for(i = 0; old && i < old->n_adopted; i++)
    if(strcmp(old->adopted[i], name) &&
       json_object_array_add(arr, json_object_new_string(old->adopted[i])))
      err = SC_ERR_NOMEM;
  if(add && strcmp(add, name) && !(old && name_in(old, add)) &&
     json_object_array_add(arr, json_object_new_string(add)))
    err = SC_ERR_NOMEM;
  if(err) {
    json_object_put(arr);
    return sc_errf(eb, err, "out of memory");
  }
  err = sq_prep(s, "INSERT OR REPLACE INTO controller(id, name, since_ms, "
                   "adopted) VALUES(1, ?1, ?2, ?3)", &q,
                "record the controller name", eb);
  if(!err) {
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, since ? since : sctime_wall_ms());
    sqlite3_bind_text(q, 3, json_object_to_json_string_ext(
                              arr, JSON_C_TO_STRING_PLAIN), -1,
                      SQLITE_TRANSIENT);
    err = sq_done(s, q, "record the controller name", eb);
  }
  json_object_put(arr);
  return err;
}

sc_err sq_claim_name(store *base, const char *name,
                     const char *adopt_from, store_served_by *out,
                     sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  store_served_by cur;
  const char *what = "claim the store for a controller name";
  sc_err err;
  sq_group_flush(s);
  memset(&cur, 0, sizeof(cur));
  err = sq_tx_begin(s, what, eb);
  if(!err)
    err = sq_exec(s, sq_controller_table, what, eb);
  if(!err)
    err = read_served_by(s, &cur, eb);
  if(!err && cur.name && strcmp(cur.name, name) &&
     !(adopt_from && !strcmp(adopt_from, cur.name))) {
    char since[SCTIME_RFC3339_MAX];
    sctime_format_rfc3339(cur.since_ms, since, sizeof(since));
    err = sc_errf(eb, SC_ERR_CONFLICT, "store %s is served by controller "
                  "'%s' (since %s); refusing to start as '%s'; to rename "
                  "use --adopt-from %s", s->label, cur.name, since, name,
                  cur.name);
  }
  else if(!err && (!cur.name || strcmp(cur.name, name) ||
                   (adopt_from && !name_in(&cur, adopt_from))))
  {
    /* a first claim, the rename, or one more name adopted (the name
     * stays, and so does its since) */
    bool rename = cur.name && strcmp(cur.name, name);
    err = write_served_by(s, name, cur.name && !rename ? cur.since_ms : 0,
                          cur.name ? &cur : NULL,
                          rename ? cur.name : adopt_from, eb);
  }
  err = sq_tx_end(s, err, what, eb);
  store_served_by_clear(&cur);
  if(!err)
    err = read_served_by(s, out, eb);
  if(!err) {
    free(s->claimed);
    s->claimed = strdup(name);
    if(!s->claimed)
      err = sc_errf(eb, SC_ERR_NOMEM, "out of memory");
  }
  return err;
}

/* A write that changes nothing but goes to disk: BEGIN IMMEDIATE, the
 * meta row's revision moved up and back, COMMIT. Both steps are needed:
 * SQLite does not write a page whose cell is rewritten with the bytes it
 * holds, so "SET revision = revision" alone commits nothing (no WAL
 * frame, no fsync) and works on a full disk. Moved and put back, the
 * page is dirty and the commit appends it to the WAL (one frame, one
 * sync): a full disk, a read-only file or a lost lock fail it. It is
 * smaller than a status write: room a failed write left at the end of
 * the WAL file can hold it when that write does not fit (pump.c waits
 * for a real write). */
sc_err sq_write_probe(store *base, sc_errbuf *eb)
{
  sq_store *s = (sq_store *)base;
  sc_err err;
  sq_group_flush(s);
  err = sq_tx_begin(s, "write probe", eb);
  if(err)
    return err;
  err = sq_run(s, "UPDATE meta SET revision = revision + 1 WHERE id = 1",
               "write probe", eb);
  if(!err)
    err = sq_run(s, "UPDATE meta SET revision = revision - 1 WHERE id = 1",
                 "write probe", eb);
  return sq_tx_end(s, err, "write probe", eb);
}
