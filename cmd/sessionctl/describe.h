/*
 * describe.h - the text of `sessionctl describe session NAME`.
 * Ownership: the output is appended to the caller's dynbuf.
 */
#ifndef SC_CTL_DESCRIBE_H
#define SC_CTL_DESCRIBE_H

#include "api/session.h"
#include "lib/dynbuf.h"
#include "cmd/sessionctl/ctl.h"

/* Append the kubectl-describe-like layout of s (Name, Namespace, Labels,
 * ..., Spec:, Status:, Conditions:) to b. */
sc_err ctl_describe(const session *s, dynbuf *b);

#endif
