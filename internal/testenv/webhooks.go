package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"kollect.dev/kollect/pipeline/admission"
	"kollect.dev/kollect/pipeline/manager"
)

// ServeWebhooks serves Kollect's validating webhooks for a control plane
// started with StartWithWebhooks, without the controllers: for suites that
// check admission of objects a running operator would act on (probing the
// endpoints they name). The returned function stops it.
func (e *Env) ServeWebhooks(o admission.Options) (stop func(), err error) {
	w := e.webhooks
	if w == nil {
		return nil, errors.New("the control plane has no webhooks installed: start it with StartWithWebhooks")
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir})})
	if err != nil {
		return nil, fmt.Errorf("webhook manager: %w", err)
	}
	if err := admission.Setup(mgr, o); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if err := waitForTLS(net.JoinHostPort(w.LocalServingHost, fmt.Sprint(w.LocalServingPort)), done); err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); _ = <-done }, nil
}

// WebhookFlags are the manager flags that serve the webhooks of a
// control plane started with StartWithWebhooks, for a manager run as a
// process (StartProcess's Args; they override its preset that turns them
// off). Nil without webhooks.
func (e *Env) WebhookFlags() []string {
	w := e.webhooks
	if w == nil {
		return nil
	}
	return []string{"--validating-webhooks-enabled=true", "--webhook-host=" + w.LocalServingHost,
		fmt.Sprintf("--webhook-port=%d", w.LocalServingPort), "--webhook-cert-path=" + w.LocalServingCertDir}
}
