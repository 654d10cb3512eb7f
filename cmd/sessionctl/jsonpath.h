/*
 * jsonpath.h - kubectl's `-o jsonpath=TEMPLATE` on json-c objects: the
 * subset people use, with kubectl's rules for what is printed.
 *
 * A template is literal text and actions in braces:
 *   text                  copied as is (no escapes outside braces)
 *   {"\n"} {'\t'}         a string literal; escapes \n \t \r \\ \" \' \/
 *   {.a.b} {$.a} {@.a}    the field a, then b; $ and @ both mean the
 *                         current node (the root, or the item of a range),
 *                         as in kubectl; {.} {$} {@} the node itself
 *   {.a\.b} {.a['a.b']}   a field whose name has dots (["a.b"] too)
 *   [N] [-N]              an element of an array (-1 the last)
 *   [S:E] [S:] [:E]       a slice (E excluded)
 *   [*] .*                every element of an array / value of a mapping
 *   [?(@.p OP LITERAL)]   the elements for which the path p (from the
 *                         element) compares true; OP is == != < <= > >=;
 *                         LITERAL a number, 'string', "string", true or
 *                         false; [?(@.p)] the elements that have p
 *   {range EXPR}...{end}  the text between, once per result of EXPR with
 *                         that result as the current node; ranges nest
 * Spaces around an action's content are allowed ({ .a }).
 *
 * Output, as kubectl: the results of one action are separated by one
 * space; strings are printed raw, numbers and booleans as in JSON,
 * mappings and arrays as compact JSON, null as "null". A field, index or
 * match that is missing prints nothing (kubectl's allowMissingKeys), so
 * the only errors are in the template itself.
 *
 * Not supported (a parse error says so): recursive descent (..), unions
 * ([a,b] ['a','b']), slice steps ([0:4:2]), regular expressions (=~),
 * && and || in filters, filters comparing two paths.
 *
 * Ownership: ctl_jsonpath_parse() returns a template for
 * ctl_jsonpath_free() (NULL accepted); ctl_jsonpath_exec() only reads the
 * template and the root and appends to the caller's dynbuf.
 */
#ifndef SC_CTL_JSONPATH_H
#define SC_CTL_JSONPATH_H

#include <stddef.h>
#include <json-c/json.h>
#include "lib/dynbuf.h"

typedef struct ctl_jsonpath ctl_jsonpath;

/* Parse tmpl. On a bad template returns NULL with a one-line message in
 * err ("unclosed action starting at column 1", ...); out of memory also
 * returns NULL, with "out of memory". */
ctl_jsonpath *ctl_jsonpath_parse(const char *tmpl, char *err, size_t errlen);
void ctl_jsonpath_free(ctl_jsonpath *jp);
/* Append the template's output for root (a JSON object) to out;
 * SC_ERR_NOMEM or the dynbuf's SC_ERR_TOO_LARGE. */
sc_err ctl_jsonpath_exec(const ctl_jsonpath *jp, json_object *root,
                         dynbuf *out);

#endif
