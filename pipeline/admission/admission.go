package admission

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/scope"
)

// Options are the operator settings the validators depend on.
type Options struct {
	// TenantMode rejects the cluster kinds outright.
	TenantMode bool
	// Policy is the endpoint guard (private and loopback flags).
	Policy endpoint.Policy
	// MaxExportBytes is the global export ceiling (0: the default).
	MaxExportBytes int64
	// AllNamespaces lifts the default namespace ceiling (--namespace-ceiling
	// all); otherwise a target may list only its own namespace unless a
	// KollectScope of its namespace lists more.
	AllNamespaces bool
	// Backends are the sink types whose own checks run (nil: this build's,
	// backends.Types()).
	Backends []backends.Type

	// policyOnly leaves out what the offline validator checks itself
	// (expressions and references that compile, reference shapes).
	policyOnly bool
}

// Kinds lists the validated kinds.
var Kinds = []string{"KollectProfile", "KollectTarget", "KollectClusterTarget", "KollectInventory", "KollectClusterInventory",
	"KollectSnapshotSink", "KollectDatabaseSink", "KollectEventSink", "KollectScope", "KollectClusterScope", "KollectConnectionTest"}

// Path is where the webhook of a kind is served.
func Path(kind string) string { return "/validate-kollect-dev-v1alpha1-" + strings.ToLower(kind) }

// checker validates one object: warnings, and the problems that refuse it.
type checker[T client.Object] func(ctx context.Context, obj T) (warnings []string, problems []string)

// validator adapts a checker to controller-runtime's Validator.
type validator[T client.Object] struct {
	kind string
	// strictOnDelete keeps validating updates of an object being deleted
	// (targets and scopes); the others accept them, so a finalizer can
	// always be removed.
	strictOnDelete bool
	// plain returns the problems as they are, without the
	// `<Kind> "<name>" is invalid:` prefix (scope errors of targets).
	plain bool
	check checker[T]
}

func (v *validator[T]) validate(ctx context.Context, obj T) (admission.Warnings, error) {
	warnings, problems := v.check(ctx, obj)
	if len(problems) == 0 {
		return warnings, nil
	}
	msg := strings.Join(problems, "; ")
	if !v.plain {
		msg = fmt.Sprintf("%s %q is invalid: %s", v.kind, obj.GetName(), msg)
	}
	return warnings, fmt.Errorf("%s", msg)
}

func (v *validator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	return v.validate(ctx, obj)
}

func (v *validator[T]) ValidateUpdate(ctx context.Context, _, obj T) (admission.Warnings, error) {
	if !v.strictOnDelete && !obj.GetDeletionTimestamp().IsZero() {
		return nil, nil
	}
	return v.validate(ctx, obj)
}

func (v *validator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

func register[T client.Object](mgr ctrl.Manager, obj T, v *validator[T]) error {
	return ctrl.NewWebhookManagedBy(mgr, obj).WithValidator(v).WithValidatorCustomPath(Path(v.kind)).Complete()
}

// Setup registers the eleven validators on the manager's webhook server.
// Validators read live state (scopes, profiles) through c.
func Setup(mgr ctrl.Manager, o Options) error {
	c := mgr.GetClient()
	if o.TenantMode {
		c = scope.WithoutClusterScopes(c)
	}
	for _, err := range []error{
		register(mgr, &kollectv1alpha1.KollectProfile{}, &validator[*kollectv1alpha1.KollectProfile]{kind: "KollectProfile", check: profile}),
		register(mgr, &kollectv1alpha1.KollectTarget{}, &validator[*kollectv1alpha1.KollectTarget]{kind: "KollectTarget", strictOnDelete: true, plain: true,
			check: func(ctx context.Context, t *kollectv1alpha1.KollectTarget) ([]string, []string) {
				return target(ctx, c, o, t)
			}}),
		register(mgr, &kollectv1alpha1.KollectClusterTarget{}, &validator[*kollectv1alpha1.KollectClusterTarget]{kind: "KollectClusterTarget",
			check: func(ctx context.Context, t *kollectv1alpha1.KollectClusterTarget) ([]string, []string) {
				return clusterTarget(ctx, c, o, t)
			}}),
		register(mgr, &kollectv1alpha1.KollectInventory{}, &validator[*kollectv1alpha1.KollectInventory]{kind: "KollectInventory",
			check: func(ctx context.Context, i *kollectv1alpha1.KollectInventory) ([]string, []string) {
				return inventory(ctx, c, o, i)
			}}),
		register(mgr, &kollectv1alpha1.KollectClusterInventory{}, &validator[*kollectv1alpha1.KollectClusterInventory]{kind: "KollectClusterInventory",
			check: func(ctx context.Context, i *kollectv1alpha1.KollectClusterInventory) ([]string, []string) {
				return clusterInventory(ctx, c, o, i)
			}}),
		register(mgr, &kollectv1alpha1.KollectSnapshotSink{}, &validator[*kollectv1alpha1.KollectSnapshotSink]{kind: "KollectSnapshotSink",
			check: func(ctx context.Context, s *kollectv1alpha1.KollectSnapshotSink) ([]string, []string) {
				return snapshotSink(ctx, c, o, s)
			}}),
		register(mgr, &kollectv1alpha1.KollectDatabaseSink{}, &validator[*kollectv1alpha1.KollectDatabaseSink]{kind: "KollectDatabaseSink",
			check: func(ctx context.Context, s *kollectv1alpha1.KollectDatabaseSink) ([]string, []string) {
				return databaseSink(ctx, c, o, s)
			}}),
		register(mgr, &kollectv1alpha1.KollectEventSink{}, &validator[*kollectv1alpha1.KollectEventSink]{kind: "KollectEventSink",
			check: func(ctx context.Context, s *kollectv1alpha1.KollectEventSink) ([]string, []string) {
				return eventSink(ctx, c, o, s)
			}}),
		register(mgr, &kollectv1alpha1.KollectScope{}, &validator[*kollectv1alpha1.KollectScope]{kind: "KollectScope", strictOnDelete: true,
			check: func(_ context.Context, s *kollectv1alpha1.KollectScope) ([]string, []string) {
				return nil, sinkLists(s.Spec.ScopeSinkAllowList)
			}}),
		register(mgr, &kollectv1alpha1.KollectClusterScope{}, &validator[*kollectv1alpha1.KollectClusterScope]{kind: "KollectClusterScope", strictOnDelete: true,
			check: func(_ context.Context, s *kollectv1alpha1.KollectClusterScope) ([]string, []string) {
				return nil, sinkLists(s.Spec.ScopeSinkAllowList)
			}}),
		register(mgr, &kollectv1alpha1.KollectConnectionTest{}, &validator[*kollectv1alpha1.KollectConnectionTest]{kind: "KollectConnectionTest", check: connectionTest}),
	} {
		if err != nil {
			return fmt.Errorf("register webhook: %w", err)
		}
	}
	return nil
}

// Policy runs the rules of the webhooks that depend on policy and on other
// objects (scopes in force, interval floors, endpoints, tenant mode) against
// what c holds: `kollect validate` gives it the objects of the files it
// reads, and checks expressions, references and Secret guards itself. obj
// is a typed Kollect object; other objects pass.
func Policy(ctx context.Context, c client.Reader, o Options, obj client.Object) (warnings, problems []string) {
	o.policyOnly = true
	switch x := obj.(type) {
	case *kollectv1alpha1.KollectTarget:
		return target(ctx, c, o, x)
	case *kollectv1alpha1.KollectClusterTarget:
		return clusterTarget(ctx, c, o, x)
	case *kollectv1alpha1.KollectInventory:
		return inventory(ctx, c, o, x)
	case *kollectv1alpha1.KollectClusterInventory:
		return clusterInventory(ctx, c, o, x)
	case *kollectv1alpha1.KollectSnapshotSink:
		return snapshotSink(ctx, c, o, x)
	case *kollectv1alpha1.KollectDatabaseSink:
		return databaseSink(ctx, c, o, x)
	case *kollectv1alpha1.KollectEventSink:
		return eventSink(ctx, c, o, x)
	}
	return nil, nil
}

// Configuration is the ValidatingWebhookConfiguration of the eleven
// kinds, each webhook reaching the server through clientConfig(path).
// The Helm chart renders the same webhooks; tests install this one.
func Configuration(name string, clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	for _, kind := range Kinds {
		plural := strings.ToLower(kind) + "s"
		if strings.HasSuffix(kind, "y") {
			plural = strings.ToLower(strings.TrimSuffix(kind, "y")) + "ies"
		}
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: "v" + strings.ToLower(kind) + ".kb.io", ClientConfig: clientConfig(Path(kind)),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{kollectv1alpha1.GroupVersion.Group},
					APIVersions: []string{kollectv1alpha1.GroupVersion.Version}, Resources: []string{plural}},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		})
	}
	return cfg
}
