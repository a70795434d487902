package testenv

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WriteKubeconfig writes a kubeconfig for the control plane, with one
// context named context.
func (e *Env) WriteKubeconfig(path, context string) error {
	c := e.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	cfg.Contexts[context] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	cfg.CurrentContext = context
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// WriteUserKubeconfig writes a kubeconfig for a new user with no
// permissions beyond what RBAC grants it (none unless the test binds some).
func (e *Env) WriteUserKubeconfig(path, user string) error {
	u, err := e.env.AddUser(envtest.User{Name: user}, nil)
	if err != nil {
		return fmt.Errorf("add user %s: %w", user, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig for %s: %w", user, err)
	}
	return os.WriteFile(path, data, 0o600)
}
