package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/kafka"
)

// selfSigned returns a server certificate for 127.0.0.1 and its PEM.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafka.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestTLSAndSASL: a broker that requires TLS and SCRAM-SHA-256 takes the
// sink's records with the right CA and password; a wrong password fails
// without showing the password, and an untrusted certificate fails.
func TestTLSAndSASL(t *testing.T) {
	cert, caPEM := selfSigned(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "kollect", "s3cret-pass"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap := sinktest.Snap(rows.Identity{Namespace: "default", Name: "inv"}, sinktest.Rows(5, "1"))
	export := func(cfg kafka.Config) (sinks.Ack, error) {
		cfg.Brokers, cfg.Topic, cfg.TLS, cfg.DeliveryTimeout = c.ListenAddrs(), "secure", true, 3*time.Second
		s, err := kafka.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return s.Export(ctx, rows.Diff(nil, snap))
	}
	if ack, err := export(kafka.Config{Username: "kollect", Password: "s3cret-pass", CA: caPEM}); err != nil || ack.Written != 5 {
		t.Fatalf("TLS + SASL export: %d records, %v", ack.Written, err)
	}
	// kfake drops the connection on bad credentials where Kafka answers
	// SASL_AUTHENTICATION_FAILED (classified permanent), so only the
	// failure and the redaction are checked here.
	_, err = export(kafka.Config{Username: "kollect", Password: "wrong-pass", CA: caPEM})
	if err == nil || strings.Contains(err.Error(), "wrong-pass") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := export(kafka.Config{Username: "kollect", Password: "s3cret-pass"}); !errors.Is(err, sinks.ErrPermanent) ||
		!strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("a certificate from an unknown CA: %v", err)
	}
}
