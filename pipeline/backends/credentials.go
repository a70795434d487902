package backends

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/pipeline/scope"
)

// Credentials are what a sink's Secrets hold, resolved for its backend.
// They live in memory only and are never logged or written to status.
type Credentials struct {
	Data map[string][]byte // the credentials Secret (nil when none)
	CA   []byte            // PEM bundle from tls.caBundle or tls.caSecretRef
	// Version changes when either Secret changes, so a rotated Secret
	// rebuilds the backend.
	Version string
	// Ambient: the sink may use the operator's own cloud identity when it
	// holds no key (the operator and every scope of its namespace allow it).
	Ambient bool
}

// credentials reads the Secrets of sink and decides whether it may use
// ambient credentials.
func (r *Registry) credentials(ctx context.Context, c client.Reader, sink client.Object) (Credentials, error) {
	creds, err := ReadCredentials(ctx, c, sink)
	if err != nil || !r.AllowAmbient {
		return creds, err
	}
	ceiling, err := scope.Namespaced(ctx, c, sink.GetNamespace())
	if err != nil {
		return creds, err
	}
	creds.Ambient = ceiling.AllowsAmbientCredentials()
	return creds, nil
}

// ReadCredentials reads the Secrets a sink names.
func ReadCredentials(ctx context.Context, c client.Reader, sink client.Object) (Credentials, error) {
	var creds Credentials
	ref, tls := credentialRefs(sink)
	data, v1, err := readSecret(ctx, c, ref, sink.GetNamespace())
	if err != nil {
		return creds, err
	}
	creds.Data, creds.Version = data, v1
	if tls == nil {
		return creds, nil
	}
	if len(tls.CABundle) > 0 {
		creds.CA = tls.CABundle
		return creds, nil
	}
	ca, v2, err := readSecret(ctx, c, tls.CASecretRef, sink.GetNamespace())
	if err != nil {
		return creds, err
	}
	for _, k := range []string{"tls.crt", "ca.crt", "ca.pem"} {
		if len(ca[k]) > 0 {
			creds.CA = ca[k]
			break
		}
	}
	if tls.CASecretRef != nil && creds.CA == nil {
		return creds, fmt.Errorf("CA Secret %s has none of the keys tls.crt, ca.crt, ca.pem", tls.CASecretRef.Name)
	}
	creds.Version += "/" + v2
	return creds, nil
}

// SecretRefs lists the Secrets the operator reads for a sink (nil entries
// skipped): its credentials Secret, as the backend names it, and its CA.
func SecretRefs(sink client.Object) []*kollectv1alpha1.SecretReference {
	ref, tls := credentialRefs(sink)
	var out []*kollectv1alpha1.SecretReference
	if ref != nil {
		out = append(out, ref)
	}
	if tls != nil && len(tls.CABundle) == 0 && tls.CASecretRef != nil {
		out = append(out, tls.CASecretRef)
	}
	return out
}

func credentialRefs(sink client.Object) (*kollectv1alpha1.SecretReference, *kollectv1alpha1.TLSSpec) {
	var common *kollectv1alpha1.SinkCommonFields
	switch s := sink.(type) {
	case *kollectv1alpha1.KollectSnapshotSink:
		common = &s.Spec.SinkCommonFields
	case *kollectv1alpha1.KollectDatabaseSink:
		common = &s.Spec.SinkCommonFields
	case *kollectv1alpha1.KollectEventSink:
		common = &s.Spec.SinkCommonFields
	default:
		return nil, nil
	}
	family, typ := Kind(sink)
	for _, t := range Types() {
		if t.Family == family && t.Name == typ {
			if t.Secret == nil {
				return nil, common.TLS
			}
			return t.Secret(sink), common.TLS
		}
	}
	return common.SecretRef, common.TLS
}

// readSecret returns the data and resourceVersion of the Secret ref names;
// its namespace defaults to defaultNamespace. A nil ref gives no data.
func readSecret(ctx context.Context, c client.Reader, ref *kollectv1alpha1.SecretReference, defaultNamespace string) (map[string][]byte, string, error) {
	if ref == nil {
		return nil, "", nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	if ns != defaultNamespace {
		// A sink reads another namespace's Secrets only when the scope of
		// its own namespace says so: a tenant must not be able to send the
		// platform's credentials to an endpoint of its choosing.
		ceiling, err := scope.Namespaced(ctx, c, defaultNamespace)
		if err != nil {
			return nil, "", err
		}
		if !ceiling.AllowsSecretNamespace(defaultNamespace, ns) {
			return nil, "", &SecretNamespaceError{Secret: ns + "/" + ref.Name, Namespace: defaultNamespace}
		}
	}
	var sec corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("credentials Secret %s/%s not found", ns, ref.Name)
		}
		return nil, "", fmt.Errorf("reading credentials Secret %s/%s: %w", ns, ref.Name, err)
	}
	return sec.Data, sec.ResourceVersion, nil
}

// SecretNamespaceError refuses a Secret outside the sink's namespace that
// no scope allows.
type SecretNamespaceError struct {
	Secret    string // namespace/name
	Namespace string // the sink's
}

func (e *SecretNamespaceError) Error() string {
	return fmt.Sprintf("credentials Secret %s is outside namespace %q: a sink reads Secrets of its own namespace only, "+
		"unless the KollectScope of %q lists the other namespace in spec.allowedSecretNamespaces", e.Secret, e.Namespace, e.Namespace)
}
