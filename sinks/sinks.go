package sinks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"kollect.dev/kollect/model/rows"
)

// Ack is what a backend confirms it holds after an export.
type Ack struct {
	Rows     int    // rows the backend now holds for the inventory
	Written  int    // rows (or messages) the backend wrote in this export
	Bytes    int64  // bytes written
	Changed  bool   // false when the backend already held this content
	Revision string // backend-specific: a commit hash, a version
	Parts    int    // parts a snapshot backend wrote the export as (0: not split by design)
	// Conflicts are writes another writer beat that this export redid (a
	// Git push rebuilt on the branch's new tip); set on failure too.
	Conflicts int
	// Rejected are rows the backend refused and set aside (a NUL character
	// PostgreSQL cannot store, a message over the broker's size limit); the
	// rest of the export went through. A rejected row is tried again when
	// it changes.
	Rejected []Rejection
}

// Rejection is one row a backend set aside, and why.
type Rejection struct {
	Key    string // the row's key: targetNamespace/targetName/uid
	Reason string
}

// RejectedKeys lists at most n rejected keys, for status.
func (a Ack) RejectedKeys(n int) []string {
	out := make([]string, 0, min(n, len(a.Rejected)))
	for _, r := range a.Rejected[:min(n, len(a.Rejected))] {
		out = append(out, r.Key)
	}
	return out
}

// Backend is what a binding exports to. It receives the delta between the
// snapshot it last acknowledged and the new one; on success it holds (or,
// for event streams, has published) exactly d.Next.
type Backend interface {
	Export(ctx context.Context, d *rows.Delta) (Ack, error)
}

// The optional capabilities of a Backend. Each backend package asserts
// the ones it has (var _ sinks.Prober = (*Sink)(nil)), and callers ask
// through these names only, so a capability renamed in one place fails
// to compile instead of silently going missing.

// Prober is a backend that can test its connection without writing: the
// probe behind a sink's ConnectionVerified condition.
type Prober interface {
	Probe(ctx context.Context) error
}

// Closer is a backend holding connections (or a shared client's
// reference) that it releases when it is replaced or its inventory goes.
type Closer interface {
	Close()
}

// PartWanter is a backend that says whether the export of snap depends
// on its parts (see Whole); one that does not say takes parts.
type PartWanter interface {
	WantsParts(snap *rows.Snapshot) bool
}

// Keeper is a backend that can export a partial snapshot
// (rows.Snapshot.Keep): it writes the snapshot's rows and leaves the rows
// it holds of the kept targets as they are. A backend that cannot tell a
// kept target's rows from others in what it holds (a document holding
// every row) says false, and its binding waits for every target to list.
type Keeper interface {
	KeepsTargets() bool
}

// WantsParts reports whether b's export of snap depends on its parts
// (PartWanter); a backend that does not say takes them.
func WantsParts(b any, snap *rows.Snapshot) bool {
	if pw, ok := b.(PartWanter); ok {
		return pw.WantsParts(snap)
	}
	return true
}

// KeepsTargets reports whether b (a Backend, or a Snapshot an adapter
// wraps) can export a partial snapshot.
func KeepsTargets(b any) bool {
	k, ok := b.(Keeper)
	return ok && k.KeepsTargets()
}

// Snapshot is a backend that stores an inventory's whole current state
// (Git, object stores).
type Snapshot interface {
	// Export makes the backend hold exactly snap, atomically.
	Export(ctx context.Context, snap *rows.Snapshot) (Ack, error)
}

// Parted is a Snapshot backend that writes an export split into parts,
// all of them as one unit for readers: one commit, or
// the objects of every part before the manifest that names them.
type Parted interface {
	ExportParts(ctx context.Context, snap *rows.Snapshot, parts []*rows.Part) (Ack, error)
}

// Whole adapts a Snapshot backend: it always receives the whole new
// snapshot, and its parts when the binding's ceiling splits it.
func Whole(s Snapshot) Backend { return whole{s} }

type whole struct{ s Snapshot }

// WantsParts reports whether the backend's export of snap depends on how
// the binding's ceiling splits it: not when the backend takes no parts,
// nor when it says it writes snap as a file per row (a tree layout).
// Splitting a snapshot sorts and hashes every row again, each export.
func (w whole) WantsParts(snap *rows.Snapshot) bool {
	if _, ok := w.s.(Parted); !ok {
		return false
	}
	return WantsParts(w.s, snap)
}

// KeepsTargets asks the wrapped backend.
func (w whole) KeepsTargets() bool { return KeepsTargets(w.s) }

// Claims returns the wrapped backend's writer records, or nil.
func (w whole) Claims() Claims {
	c, _ := w.s.(Claims)
	return c
}

func (w whole) Export(ctx context.Context, d *rows.Delta) (Ack, error) {
	if p, ok := w.s.(Parted); ok && len(d.Parts) > 1 {
		ack, err := p.ExportParts(ctx, d.Next, d.Parts)
		ack.Parts = len(d.Parts)
		return ack, err
	}
	ack, err := w.s.Export(ctx, d.Next)
	ack.Parts = 1
	return ack, err
}

// ErrPermanent marks errors that retrying cannot fix (bad credentials, a
// rejected push, an invalid layout). Wrap with Permanent.
var ErrPermanent = errors.New("permanent")

// Permanent marks err as not worth retrying; its message is unchanged.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() []error { return []error{p.error, ErrPermanent} }

// ErrAmbientRefused marks a cloud sink that holds no key and may not use
// the operator's own identity (the SDK's default credential chain). It is
// permanent: only a key, or the platform's consent, can change it.
var ErrAmbientRefused = errors.New("ambient credentials refused")

// AmbientRefused is the refusal of a sink whose Secret holds no keys
// (what names them), saying what would allow it.
func AmbientRefused(what string) error {
	return Permanent(fmt.Errorf("%[1]w: the sink's Secret holds no %[2]s, and this sink may not use the operator's own cloud identity: "+
		"put %[2]s in the Secret, or have the platform allow ambient credentials (operator flag --allow-ambient-credentials and "+
		"spec.allowAmbientCredentials on every KollectScope of the namespace)", ErrAmbientRefused, what))
}

// UntrustedCertificate reports whether err is a failure to verify a
// server's TLS certificate: retrying cannot fix it, a CA bundle can.
func UntrustedCertificate(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalid)
}

// Redact replaces every non-empty secret in msg.
func Redact(msg string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
		}
	}
	return msg
}

// Transport classifies the failures every network client shares: an
// untrusted server certificate (permanent) and a host name that does not
// resolve (retried). what names the host ("the DSN's host", "a broker");
// msg is the redacted error text. It returns nil for other errors.
func Transport(backend, op, what, msg string, err error) error {
	var dnsErr *net.DNSError
	switch {
	case UntrustedCertificate(err):
		return Permanent(fmt.Errorf("%s %s: the server's TLS certificate is not trusted; set tls.caSecretRef or tls.caBundle (%s)", backend, op, msg))
	case errors.As(err, &dnsErr):
		return fmt.Errorf("%s %s: %s name does not resolve (%s)", backend, op, what, msg)
	}
	return nil
}
