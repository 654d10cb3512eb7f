/*
 * kf_crd.h - the CustomResourceDefinition of sessions.lea.io in
 * kube-apiserver-fake (docs/kube-apiserver-fake.md): checking one that is
 * applied, its status, the parts the server uses (schema, printer
 * columns, names) and the OpenAPI v3 documents kubectl reads.
 *
 * The fake serves one custom resource, sessions.lea.io/v1alpha1; a CRD
 * for anything else is refused (kf_crd_check) rather than stored and not
 * served.
 *
 * Ownership: functions returning json_object * return a new reference the
 * caller puts, except kf_crd_schema/kf_crd_columns/kf_crd_names, which
 * borrow from the CRD given.
 */
#ifndef KF_CRD_H
#define KF_CRD_H

#include <json-c/json.h>
#include "cmd/kube-apiserver-fake/kf_schema.h"

#define KF_CRD_NAME "sessions.lea.io"

/* the API server's checks of a CRD object, and the fake's limits; field
 * errors appended to errs */
void kf_crd_check(json_object *crd, kf_errs *errs);
/* the status the API server gives a new CRD: NamesAccepted and
 * Established, acceptedNames, storedVersions (changes crd) */
void kf_crd_set_status(json_object *crd);

/* the v1alpha1 version's openAPIV3Schema / additionalPrinterColumns (NULL
 * when absent), the spec.names object */
json_object *kf_crd_schema(json_object *crd);
json_object *kf_crd_columns(json_object *crd);
json_object *kf_crd_names(json_object *crd);

/* OpenAPI v3 documents: lea.io/v1alpha1 from the CRD (its schema under
 * components, paths with the fieldValidation parameter and the patch
 * types the fake takes), and apiextensions.k8s.io/v1 */
json_object *kf_openapi_sessions(json_object *crd);
json_object *kf_openapi_crds(void);

#endif
