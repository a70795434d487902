// Package gcpauth turns the credentials a Google Cloud sink (GCS,
// BigQuery) holds into an OAuth token source, and is the one place that
// decides which credentials such a sink may use.
//
// A tenant's Secret may hold a service-account key and nothing else: the
// other credential types Google's libraries accept (external_account,
// impersonated_service_account, authorized_user, gdch_service_account)
// name files on the operator's disk, commands to run or token endpoints
// to post to, so a key of those types would make the operator read its
// own files (its service-account token, the webhook key) and send them
// where the tenant says. Application Default Credentials, the pod's own
// identity, are used only when the caller says the sink may (ambient
// credentials are opt-in, see docs/security.md).
//
// It imports no Kubernetes package: credentials arrive as plain bytes.
package gcpauth
