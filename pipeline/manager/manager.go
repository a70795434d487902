package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/admission"
)

// NewScheme returns a scheme with the built-in kinds and every Kollect kind.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add client-go kinds: %w", err)
	}
	if err := kollectv1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add kollect kinds: %w", err)
	}
	return s, nil
}

// New builds the controller-runtime manager described by o, with the
// collection engine and its reconcilers.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if o.APIQPS > 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = float32(o.APIQPS), max(o.APIBurst, 1)
	}

	var tlsOpts []func(*tls.Config)
	if !o.EnableHTTP2 {
		// HTTP/2 stays off unless asked for (rapid-reset class of attacks).
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metrics := metricsserver.Options{
		BindAddress:   o.MetricsBindAddress,
		SecureServing: o.MetricsSecure,
		TLSOpts:       tlsOpts,
		CertDir:       o.MetricsCertPath,
		CertName:      o.MetricsCertName,
		KeyName:       o.MetricsCertKey,
	}
	if o.MetricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	pprofAddr := ""
	if o.EnablePprof {
		pprofAddr = o.PprofBindAddress
	}

	var cacheOpts cache.Options
	if len(o.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}

	var hooks webhook.Server
	var selfSigned *selfSignedCert
	if o.WebhooksEnabled {
		certDir := o.WebhookCertPath
		if !mounted(certDir, o.WebhookCertName, o.WebhookCertKey) {
			// No certificate mounted (no cert-manager): issue our own.
			if selfSigned, err = newSelfSigned(ctx, cfg, scheme, o); err != nil {
				return nil, err
			}
			certDir = selfSigned.dir
		}
		hooks = webhook.NewServer(webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: certDir,
			CertName: o.WebhookCertName, KeyName: o.WebhookCertKey, TLSOpts: tlsOpts})
	}

	lease, renew, retry := o.LeaderElectLeaseDuration, o.LeaderElectRenewDeadline, o.LeaderElectRetryPeriod
	shutdown := o.GracefulShutdownTimeout
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: o.ProbeBindAddress,
		PprofBindAddress:       pprofAddr,
		Cache:                  cacheOpts,
		WebhookServer:          hooks,
		// Secrets are read when a sink is resolved, straight from the API
		// server: no cluster-wide Secret cache in memory, and a Role that
		// grants get in the sinks' namespaces is enough.
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
		GracefulShutdownTimeout:       &shutdown,
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add ready check: %w", err)
	}
	if err := setupEngine(ctx, mgr, o); err != nil {
		return nil, err
	}
	if o.WebhooksEnabled {
		if err := admission.Setup(mgr, admission.Options{TenantMode: o.TenantMode, MaxExportBytes: o.MaxExportBytes, AllNamespaces: o.NamespaceCeiling == "all",
			Policy: endpoint.Policy{AllowPrivate: o.AllowPrivateSinks, AllowLoopback: o.DevAllowLoopbackSinks}}); err != nil {
			return nil, err
		}
		if selfSigned != nil {
			if err := mgr.Add(selfSigned); err != nil {
				return nil, fmt.Errorf("add webhook certificate renewal: %w", err)
			}
		}
	}
	return mgr, nil
}

// Run builds the manager and runs it until ctx is cancelled.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	stopTracing, err := setupTracing(ctx)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(sctx) // flush what was traced; never delays shutdown past 5 s
	}()
	mgr, err := New(ctx, cfg, o)
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("starting manager",
		"metrics", o.MetricsBindAddress, "probes", o.ProbeBindAddress, "leaderElection", o.LeaderElect,
		"goMemoryLimitBytes", applyMemoryLimit())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case err := <-done:
		return wrapRun(err)
	case <-ctx.Done():
	}
	// controller-runtime waits for its caches to sync without heeding the
	// context: a manager that cannot list what it watches (missing RBAC)
	// would never return. Past the graceful period, give up on it.
	select {
	case err := <-done:
		return wrapRun(err)
	case <-time.After(o.GracefulShutdownTimeout + 5*time.Second):
		return fmt.Errorf("run manager: did not stop within %s (caches that never synced? check the operator's RBAC)", o.GracefulShutdownTimeout+5*time.Second)
	}
}

func wrapRun(err error) error {
	if err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
