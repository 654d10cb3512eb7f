/*
 * sctext.h - untrusted text stays text.
 *
 * Text from Cube (tags, error bodies), from the API server and from the
 * store's objects ends up in condition messages, logs and on terminals
 * (sessionctl describe, get, error lines). A terminal obeys what it is
 * sent: ESC and the other C0 controls, the C1 controls U+0080-U+009F (CSI,
 * OSC...) and the bidirectional overrides (U+202A-U+202E, U+2066-U+2069,
 * U+200E, U+200F) can retitle the window, clear the screen, fake rows or
 * reorder what is shown. These functions find and escape them.
 *
 *  sc_text_unsafe(p, len, &cp): the length of the unsafe sequence that
 *    starts at p (0 when the byte at p starts safe text): a C0 control or
 *    DEL (1, *cp = the byte), a C1 control or a bidi control (2 or 3
 *    bytes, *cp = the code point), or a byte that does not start valid
 *    UTF-8 (1, *cp = the byte | 0x100, so callers can tell it from a
 *    code point).
 *  sc_text_escape(out, size, in): a copy of in (NUL-terminated) into out
 *    with every unsafe sequence as \xNN (C0, DEL, bad bytes) or \uNNNN;
 *    cut at size - 1 (never inside an escape). Returns out. in NULL: "".
 *  sc_text_sanitize(buf, size): sc_text_escape() of buf into itself.
 *
 * Nothing is allocated; no state.
 */
#ifndef SC_SCTEXT_H
#define SC_SCTEXT_H

#include <stddef.h>

size_t sc_text_unsafe(const char *p, size_t len, unsigned *cp);
/* The length of the character (or bad byte) at p, len >= 1: 1..4; *unsafe
 * says whether it is one to escape (then *cp as above, else its code
 * point). For loops that copy safe text whole and escape the rest. */
size_t sc_text_next(const char *p, size_t len, unsigned *cp, int *unsafe);
char *sc_text_escape(char *out, size_t size, const char *in);
void sc_text_sanitize(char *buf, size_t size);

#endif
