package manager

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"kollect.dev/kollect/actors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// certValidity is how long a self-issued webhook certificate lasts; it is
// renewed when two thirds of it have passed.
const certValidity = 90 * 24 * time.Hour

// selfSignedCert issues the webhook server's certificate when no
// cert-manager (or other) certificate is mounted, so `helm install` works
// on a bare cluster: a private CA and a serving certificate for the
// service's DNS names are written to dir, and the CA is patched into the
// ValidatingWebhookConfiguration so the API server trusts it. It runs as a
// manager runnable on every replica (each serves webhooks) and renews the
// certificate before it expires; the webhook server reloads the files.
type selfSignedCert struct {
	dir           string
	dnsNames      []string
	configuration string // ValidatingWebhookConfiguration name, or ""
	c             client.Client
	now           func() time.Time
	notAfter      time.Time
	caPEM         []byte
	// store keeps the CA where every replica and restart finds it; nil
	// keeps it in memory (each start then makes its own).
	store *caStore
}

// issue writes a serving certificate signed by the shared CA (made when
// there is none or it nears its end) and publishes the CA.
func (s *selfSignedCert) issue(ctx context.Context) error {
	ca, caKey, caPEM, err := s.authority(ctx)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := s.now()
	notAfter := now.Add(certValidity)
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	leaf := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: s.dnsNames[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: notAfter, DNSNames: s.dnsNames,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("issue the webhook certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	// The CA is published before the server presents a certificate it signs.
	if err := s.publishCA(ctx, caPEM); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
	} {
		if err := os.WriteFile(filepath.Join(s.dir, name), data, 0o600); err != nil {
			return fmt.Errorf("write the webhook certificate: %w", err)
		}
	}
	s.notAfter, s.caPEM = leaf.NotAfter, caPEM
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// maxBundle bounds the CAs a webhook's bundle holds: the shared CA and
// the one before it (trusted while replicas move to a rotated CA). A
// crash-looping pod can therefore never grow the configuration toward
// etcd's object limit.
const maxBundle = 2

// publishCA puts the CA into every webhook of the configuration, keeping
// at most maxBundle-1 other unexpired CAs (the newest), with optimistic
// locking: a concurrent writer makes the patch fail and the next tick
// retry on what it wrote.
func (s *selfSignedCert) publishCA(ctx context.Context, caPEM []byte) error {
	if s.configuration == "" || s.c == nil {
		return nil
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := s.c.Get(ctx, types.NamespacedName{Name: s.configuration}, &cfg); err != nil {
		return fmt.Errorf("read ValidatingWebhookConfiguration %s to publish the webhook CA: %w", s.configuration, err)
	}
	base := cfg.DeepCopy()
	changed := false
	for i := range cfg.Webhooks {
		bundle := cfg.Webhooks[i].ClientConfig.CABundle
		next := bounded(bundle, caPEM, s.now())
		if !bytes.Equal(bundle, next) {
			cfg.Webhooks[i].ClientConfig.CABundle = next
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.c.Patch(ctx, &cfg, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// bounded is bundle with caPEM last, expired certificates dropped, and at
// most maxBundle-1 of the others (the last ones, the newest) kept.
func bounded(bundle, caPEM []byte, now time.Time) []byte {
	var others [][]byte
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			break
		}
		block := pem.EncodeToMemory(b)
		if bytes.Equal(block, caPEM) {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && now.Before(c.NotAfter) {
			others = append(others, block)
		}
	}
	if len(others) > maxBundle-1 {
		others = others[len(others)-(maxBundle-1):]
	}
	return append(bytes.Join(others, nil), caPEM...)
}

// Start renews the certificate until ctx ends, and puts the CA back when
// the configuration lost it (a `helm upgrade` re-applies it without one).
func (s *selfSignedCert) Start(ctx context.Context) error {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			var err error
			if s.now().After(s.notAfter.Add(-certValidity / 3)) {
				err = s.issue(ctx)
			} else {
				err = s.publishCA(ctx, s.caPEM)
			}
			if err != nil {
				log.FromContext(ctx).Error(err, "webhook certificate; will retry")
			}
		}
	}
}

// NeedLeaderElection: every replica serves webhooks with its own
// certificate.
func (s *selfSignedCert) NeedLeaderElection() bool { return false }

// mounted reports whether dir holds a certificate and its key.
func mounted(dir, cert, key string) bool {
	if dir == "" {
		return false
	}
	for _, f := range []string{cert, key} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// newSelfSigned issues the first self-signed certificate, in the mounted
// directory when there is one (a writable emptyDir), else in a temporary
// directory.
func newSelfSigned(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, o Options) (*selfSignedCert, error) {
	dir := o.WebhookCertPath
	if dir == "" {
		d, err := os.MkdirTemp("", "kollect-webhook-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	names := []string{"localhost"}
	if o.WebhookService != "" {
		ns := podNamespace(o)
		names = []string{o.WebhookService + "." + ns + ".svc", o.WebhookService + "." + ns + ".svc.cluster.local", "localhost"}
	}
	s := &selfSignedCert{dir: dir, dnsNames: names, configuration: o.WebhookConfiguration, c: c, now: actors.OrReal(o.Clock).Now}
	if ns := podNamespace(o); ns != "" && o.WebhookCASecret != "" {
		s.store = &caStore{c: c, key: types.NamespacedName{Namespace: ns, Name: o.WebhookCASecret}}
	}
	if err := s.issue(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// podNamespace is the namespace the operator runs in, or "" when unknown.
func podNamespace(o Options) string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return o.LeaderElectionNamespace
}
