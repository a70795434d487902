// Package admission holds the validating webhooks of the eleven Kollect
// kinds: what the CRD schema cannot check
// (expressions that must compile, Secret-extraction guards, endpoints, the
// scopes in force, tenant mode), with warnings returned as admission
// warnings. The controllers enforce the same scope rules at runtime, so a
// cluster without the webhooks is still safe; the webhooks make the
// mistake visible at `kubectl apply` time.
package admission
