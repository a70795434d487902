// Package compile turns the specs users write into what the engine runs,
// and says what to fix when it cannot: a target with its profile becomes a
// selection and an extractor (Compile), a profile on Secrets passes the
// opt-in guards (SecretGuard), sink references are checked (CheckRefs). The
// reconcilers, the webhooks, the CLI and `kollect validate` all compile
// through it, so they agree on what is valid.
package compile
