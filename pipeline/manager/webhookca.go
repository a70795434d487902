package manager

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// caStore keeps the self-issued webhook CA in a Secret of the operator's
// namespace, so replicas share one CA and a restart reuses it instead of
// adding another to the webhook configuration.
type caStore struct {
	c   client.Client
	key types.NamespacedName
}

// authority returns the CA to sign with: the stored one while it has a
// third of its life left, else a new one, stored with optimistic locking
// (when another replica stored one first, that one is used). Without a
// store, or when the Secret cannot be read or written, it is a new CA in
// memory, and the reason is logged.
func (s *selfSignedCert) authority(ctx context.Context) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	if s.store == nil {
		return newCA(s)
	}
	ca, key, caPEM, rv, err := s.store.load(ctx)
	if err == nil && ca != nil && s.now().Before(ca.NotAfter.Add(-certValidity/3)) {
		return ca, key, caPEM, nil
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "webhook CA Secret unreadable; this replica uses a CA of its own", "secret", s.store.key)
		return newCA(s)
	}
	ca, key, caPEM, err = newCA(s)
	if err != nil {
		return nil, nil, nil, err
	}
	switch werr := s.store.save(ctx, caPEM, key, rv); {
	case werr == nil:
		return ca, key, caPEM, nil
	case apierrors.IsConflict(werr) || apierrors.IsAlreadyExists(werr):
		// Another replica stored its CA first: use that one.
		if other, okey, opem, _, lerr := s.store.load(ctx); lerr == nil && other != nil {
			return other, okey, opem, nil
		}
	default:
		log.FromContext(ctx).Error(werr, "cannot store the webhook CA; this replica uses a CA of its own", "secret", s.store.key)
	}
	return ca, key, caPEM, nil
}

// newCA makes a CA valid for certValidity.
func newCA(s *selfSignedCert) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := s.now()
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "kollect-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("issue the webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return ca, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// load reads the stored CA: nil when there is none (or it does not
// parse, so it is replaced), with the Secret's resourceVersion.
func (st *caStore) load(ctx context.Context) (*x509.Certificate, *ecdsa.PrivateKey, []byte, string, error) {
	var sec corev1.Secret
	if err := st.c.Get(ctx, st.key, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil, "", nil
		}
		return nil, nil, nil, "", err
	}
	certBlock, _ := pem.Decode(sec.Data["ca.crt"])
	keyBlock, _ := pem.Decode(sec.Data["ca.key"])
	if certBlock == nil || keyBlock == nil {
		return nil, nil, nil, sec.ResourceVersion, nil
	}
	ca, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, nil, sec.ResourceVersion, nil
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil || !key.PublicKey.Equal(ca.PublicKey) {
		return nil, nil, nil, sec.ResourceVersion, nil
	}
	return ca, key, sec.Data["ca.crt"], sec.ResourceVersion, nil
}

// save creates the Secret (rv "") or replaces the one at rv; a concurrent
// writer makes it fail with a conflict.
func (st *caStore) save(ctx context.Context, caPEM []byte, key *ecdsa.PrivateKey, rv string) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: st.key.Name, Namespace: st.key.Namespace, ResourceVersion: rv,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "kollect"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"ca.crt": caPEM, "ca.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})}}
	if rv == "" {
		return st.c.Create(ctx, sec)
	}
	return st.c.Update(ctx, sec)
}
