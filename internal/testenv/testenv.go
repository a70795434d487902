package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"kollect.dev/kollect/pipeline/admission"
	"kollect.dev/kollect/pipeline/manager"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a controller-runtime client with every Kollect kind registered.
	Client client.Client
	// RepoRoot is the root of the kollect module.
	RepoRoot string

	env *envtest.Environment
	// webhooks is where the API server expects the validating webhooks
	// (nil when the control plane has none).
	webhooks *envtest.WebhookInstallOptions
}

// Start starts kube-apiserver and etcd and installs the CRDs from
// deploy/crds.
func Start() (*Env, error) { return start(false) }

// StartWithWebhooks also installs Kollect's validating webhooks, served by
// the manager StartManager runs: nothing of kollect.dev can be created or
// changed until it runs.
func StartWithWebhooks() (*Env, error) { return start(true) }

func start(webhooks bool) (*Env, error) {
	// A sink with no credentials uses its cloud's default chain, which
	// asks the instance metadata service: tests dial loopback only.
	for k, v := range map[string]string{"AWS_EC2_METADATA_DISABLED": "true", "GCE_METADATA_HOST": "127.0.0.1:9"} {
		if os.Getenv(k) == "" {
			_ = os.Setenv(k, v)
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "envtest")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("control-plane binary %s not found in %s: run `make envtest-assets` (or set KUBEBUILDER_ASSETS): %w", bin, assets, err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(root, "deploy", "crds")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// Tests need no durability; fsync-free etcd is several times faster.
	etcd := &envtest.Etcd{}
	etcd.Configure().Append("unsafe-no-fsync", "true")
	env.ControlPlane.Etcd = etcd
	if webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1",
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{admission.Configuration("kollect-validating-webhooks",
				func(path string) admissionregistrationv1.WebhookClientConfig {
					return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
						Namespace: "kollect-system", Name: "kollect-webhook-service", Path: &path}}
				})}}
	}

	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	scheme, err := manager.NewScheme()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("add CRD kinds: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("create client: %w", err)
	}
	e := &Env{Config: cfg, Client: c, RepoRoot: root, env: env}
	if webhooks {
		e.webhooks = &env.WebhookInstallOptions
	}
	return e, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("stop control plane: %w", err)
	}
	return nil
}

// RepoRoot finds the root of the kollect module from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isKollectModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no go.mod of module kollect.dev/kollect above the working directory")
		}
		dir = parent
	}
}

func isKollectModule(gomod []byte) bool {
	const want = "module kollect.dev/kollect\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}
