package manager

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"kollect.dev/kollect/actors"
)

// LeaderElectionID is the Lease name shared with upstream deployments, so a
// rolling replacement never runs two leaders.
const LeaderElectionID = "3274ac8a.kollect.dev"

// DefaultMaxExportBytes is the global export ceiling (1.5 MiB).
const DefaultMaxExportBytes = 1572864

// Options are the manager's settings. Flag names and defaults follow the
// upstream operator, so existing Deployments and Helm values keep working;
// where Kollect differs the flag's help says so.
type Options struct {
	// Clock is the time the engine's actors and the reconcilers read and
	// set their timers by (nil: the real clock); not a flag.
	Clock actors.Clock

	MetricsBindAddress string
	MetricsSecure      bool
	MetricsCertPath    string
	MetricsCertName    string
	MetricsCertKey     string
	ProbeBindAddress   string
	EnableHTTP2        bool

	LeaderElect              bool
	LeaderElectionNamespace  string
	LeaderElectLeaseDuration time.Duration
	LeaderElectRenewDeadline time.Duration
	LeaderElectRetryPeriod   time.Duration
	GracefulShutdownTimeout  time.Duration
	WebhooksEnabled          bool
	WebhookCertPath          string
	WebhookCertName          string
	WebhookCertKey           string
	WebhookPort              int
	WebhookHost              string
	WebhookService           string
	WebhookConfiguration     string
	WebhookCASecret          string
	TenantMode               bool
	AllowPrivateSinks        bool
	InventoryHTTPEnabled     bool
	InventoryHTTPPort        int
	InventoryAuthMode        string
	InventoryAuthCacheTTL    time.Duration
	MaxExportBytes           int64
	ExportTimeout            time.Duration
	ExportTimeoutPerRow      time.Duration
	WriterID                 string
	EventMessages            string
	NATSStreamMaxAge         time.Duration
	ConcurrentTarget         int
	ConcurrentInventory      int
	// APIQPS and APIBurst bound the operator's requests to the API server
	// (client-go's token bucket).
	APIQPS                    float64
	APIBurst                  int
	ConcurrentClusterTarget   int
	ConcurrentClusterInv      int
	ReconcileRateLimit        time.Duration
	TargetCountResync         time.Duration
	EnablePprof               bool
	PprofBindAddress          string
	WatchNamespaces           []string
	DefaultIncludedNamespaces []string
	DefaultExcludedNamespaces []string
	ScrubKeys                 []string
	DispatchWorkers           int
	DispatchQueueSize         int
	DispatchEnqueueWait       time.Duration
	InformerResyncPeriod      time.Duration
	MetricsSampleInterval     time.Duration
	StatusFlushInterval       time.Duration
	ExportBatchWindow         time.Duration
	DevAllowLoopbackSinks     bool
	// NamespaceCeiling is what a namespaced target may read when no
	// KollectScope of its namespace lists allowedNamespaces: "own" (its
	// own namespace) or "all" (every namespace, as upstream).
	NamespaceCeiling string
	// AllowAmbientCredentials lets cloud sinks without a key use the
	// operator's own identity, where the namespace's scopes allow it too.
	AllowAmbientCredentials bool
	// MetricsAttributeLabels lets profile metrics carry attribute values as
	// labels (spec.metrics labels from row attributes).
	MetricsAttributeLabels bool

	Zap zap.Options
}

// BindFlags registers every manager flag on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8443", "Address of the /metrics endpoint; 0 disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, answering only callers the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview); false serves plain, anonymous HTTP.")
	fs.StringVar(&o.MetricsCertPath, "metrics-cert-path", "", "Directory of the metrics serving certificate (self-signed when empty).")
	fs.StringVar(&o.MetricsCertName, "metrics-cert-name", "tls.crt", "Metrics certificate file name.")
	fs.StringVar(&o.MetricsCertKey, "metrics-cert-key", "tls.key", "Metrics key file name.")
	fs.StringVar(&o.ProbeBindAddress, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz probes.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics and webhook servers.")

	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so that only one replica collects and exports.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader Lease (default: the pod's namespace).")
	fs.DurationVar(&o.LeaderElectLeaseDuration, "leader-elect-lease-duration", 60*time.Second, "Leader lease duration; must exceed the renew deadline.")
	fs.DurationVar(&o.LeaderElectRenewDeadline, "leader-elect-renew-deadline", 40*time.Second, "Leader renew deadline.")
	fs.DurationVar(&o.LeaderElectRetryPeriod, "leader-elect-retry-period", 5*time.Second, "Leader retry period; must be below the renew deadline.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", 10*time.Second, "How long runnables get to stop after SIGTERM.")

	fs.BoolVar(&o.WebhooksEnabled, "validating-webhooks-enabled", true, "Serve the validating admission webhooks.")
	fs.StringVar(&o.WebhookCertPath, "webhook-cert-path", "", "Directory of the webhook serving certificate.")
	fs.StringVar(&o.WebhookCertName, "webhook-cert-name", "tls.crt", "Webhook certificate file name.")
	fs.StringVar(&o.WebhookCertKey, "webhook-cert-key", "tls.key", "Webhook key file name.")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&o.WebhookHost, "webhook-host", "", "Address the webhook server listens on (default: all).")
	fs.StringVar(&o.WebhookService, "webhook-service-name", "", "Service in front of the webhook server: the DNS names of a self-issued certificate.")
	fs.StringVar(&o.WebhookConfiguration, "webhook-configuration-name", "",
		"ValidatingWebhookConfiguration to publish a self-issued certificate's CA into, when --webhook-cert-path holds no certificate.")
	fs.StringVar(&o.WebhookCASecret, "webhook-ca-secret-name", "kollect-webhook-ca",
		"Secret, in the pod's namespace, that keeps a self-issued webhook CA across replicas and restarts, so the CA bundle does not grow with every start; empty keeps the CA in memory.")
	fs.BoolVar(&o.TenantMode, "tenant-mode", false, "Reject cluster-scoped targets and inventories (team installs).")
	fs.BoolVar(&o.AllowPrivateSinks, "allow-private-sinks", false, "Allow sink endpoints in private address ranges (RFC 1918, IPv6 ULA).")

	fs.BoolVar(&o.InventoryHTTPEnabled, "inventory-http-enabled", false, "Serve the inventory read API (docs/observability.md): each inventory's rows, a watch of their changes, and inventory and target status.")
	fs.IntVar(&o.InventoryHTTPPort, "inventory-http-port", 8082, "Port of the inventory read API (plain HTTP).")
	fs.StringVar(&o.InventoryAuthMode, "inventory-auth-mode", "kubernetes", "Who may read the inventory read API: kubernetes (a bearer token, TokenReview, then a SubjectAccessReview per route) or disabled (anyone: development only).")
	fs.DurationVar(&o.InventoryAuthCacheTTL, "inventory-auth-cache-ttl", 30*time.Second, "How long the read API keeps a TokenReview's or SubjectAccessReview's answer.")

	fs.DurationVar(&o.ExportTimeout, "export-timeout", 2*time.Minute, "How long one export may take, before --export-timeout-per-row adds to it; an export cut by it is retried (object stores resume where it stopped).")
	fs.DurationVar(&o.ExportTimeoutPerRow, "export-timeout-per-row", 10*time.Millisecond, "What each row of the snapshot adds to --export-timeout (20,000 rows: 200 s more), so a large first export or deletion can finish; the sum is capped at one hour.")
	fs.StringVar(&o.WriterID, "writer-id", "", "This operator's name in the writer record each sink keeps per inventory, which stops two clusters that share a sink and an inventory name "+
		"without distinct spec.cluster values from deleting each other's rows (the second is refused, with a condition): empty reads the UID of the kube-system namespace; none keeps no records. Letters, digits, '.', '_' and '-'.")
	fs.StringVar(&o.EventMessages, "event-messages", "perRow", "What the messages of an event sink without spec.messages carry: perRow (one per row change) or envelope "+
		"(upstream's format: one per export carrying the whole envelope, keyed <cluster>/<namespace>), for consumers written for upstream.")
	fs.DurationVar(&o.NATSStreamMaxAge, "nats-stream-max-age", 7*24*time.Hour, "Maximum age of the messages of a JetStream stream a NATS sink creates (0: no limit); a stream the sink finds keeps its own limits. "+
		"Checkpoints are renewed at a quarter of a stream's maximum age, so a restart stays exact unless the operator was down for more than two thirds of it.")
	fs.Int64Var(&o.MaxExportBytes, "max-export-bytes", DefaultMaxExportBytes, "Export ceiling of a binding whose reference and inventory set no maxExportBytes, and their upper bound (checked at admission): a larger snapshot export is split into parts, a row larger than it is set aside (status rejectedKeys) and the rest exported.")
	fs.IntVar(&o.ConcurrentTarget, "max-concurrent-reconciles-target", 5, "Concurrent KollectTarget reconciles.")
	fs.IntVar(&o.ConcurrentInventory, "max-concurrent-reconciles-inventory", 3, "Concurrent KollectInventory reconciles.")
	fs.IntVar(&o.ConcurrentClusterTarget, "max-concurrent-reconciles-cluster-target", 2, "Concurrent KollectClusterTarget reconciles.")
	fs.Float64Var(&o.APIQPS, "kube-api-qps", 50, "Requests per second the operator may send the API server (status patches of every inventory and target, finalizers, Secret reads); client-go's default of 20 queues the status of a few hundred busy inventories for minutes.")
	fs.IntVar(&o.APIBurst, "kube-api-burst", 100, "Requests the operator may send the API server at once, above --kube-api-qps.")
	fs.IntVar(&o.ConcurrentClusterInv, "max-concurrent-reconciles-cluster-inventory", 2, "Concurrent KollectClusterInventory reconciles.")
	fs.DurationVar(&o.ReconcileRateLimit, "reconcile-rate-limit", 0, "Base delay of the per-object failure back-off (0: controller-runtime default).")
	fs.DurationVar(&o.TargetCountResync, "target-count-resync", 60*time.Second, "Periodic re-reconcile of Ready targets, a safety net: counts and namespace changes arrive as events.")
	fs.BoolVar(&o.EnablePprof, "enable-pprof", false, "Serve pprof on --pprof-bind-address.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", ":6060", "Address of the pprof listener.")

	fs.StringSliceVar(&o.WatchNamespaces, "watch-namespaces", nil, "Restrict the manager cache (Kollect objects, Secrets) to these namespaces; empty watches all.")
	fs.StringSliceVar(&o.DefaultIncludedNamespaces, "default-included-namespaces", nil, "Include list for targets whose includedNamespaces is empty.")
	fs.StringSliceVar(&o.DefaultExcludedNamespaces, "default-excluded-namespaces", nil, "Namespaces excluded from every target.")
	fs.StringSliceVar(&o.ScrubKeys, "scrub-keys", nil, "Extra keys whose values are redacted from rows.")
	fs.IntVar(&o.DispatchWorkers, "collect-dispatch-workers", 4, "Accepted for compatibility; the actor engine sizes itself.")
	fs.IntVar(&o.DispatchQueueSize, "collect-dispatch-queue-size", 512, "Accepted for compatibility; the actor engine coalesces by object instead of queueing.")
	fs.DurationVar(&o.DispatchEnqueueWait, "collect-dispatch-enqueue-wait", 25*time.Millisecond, "Accepted for compatibility; informer goroutines never block.")
	fs.DurationVar(&o.InformerResyncPeriod, "informer-resync-period", 12*time.Hour, "Resync period of the collection informers.")
	fs.DurationVar(&o.MetricsSampleInterval, "collect-metrics-sample-interval", 30*time.Second, "Minimum spacing of a target's profile-derived series (kollect_custom_resource_series) after its rows change.")

	fs.DurationVar(&o.StatusFlushInterval, "status-flush-interval", time.Second, "Minimum spacing of the status writes an engine report triggers, per object.")
	fs.DurationVar(&o.ExportBatchWindow, "export-batch-window", 200*time.Millisecond, "How long an inventory gathers row changes before it builds a snapshot.")
	fs.StringVar(&o.NamespaceCeiling, "namespace-ceiling", "own", "What a namespaced KollectTarget may read when no KollectScope of its namespace lists allowedNamespaces: own (its own namespace) or all (every namespace, upstream's behaviour; single-tenant installs only).")
	fs.BoolVar(&o.AllowAmbientCredentials, "allow-ambient-credentials", false, "Let s3, gcs and bigquery sinks without a key use the operator's own cloud identity (IRSA, Workload Identity, the node role), in namespaces whose KollectScopes all set allowAmbientCredentials.")
	fs.BoolVar(&o.MetricsAttributeLabels, "metrics-attribute-labels", false, "Let profile metrics (spec.metrics) put row attribute values into series labels; off, such labels are dropped, since /metrics readers may not read the rows.")
	fs.BoolVar(&o.DevAllowLoopbackSinks, "dev-allow-loopback-sinks", false, "DEVELOPMENT ONLY: allow sink endpoints on loopback addresses (local test servers). Never set this in a cluster.")
	_ = fs.MarkHidden("dev-allow-loopback-sinks")

	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.Zap.Development = true
	o.Zap.BindFlags(zfs)
	fs.AddGoFlagSet(zfs)
}

// Validate reports settings that cannot work together.
func (o *Options) Validate() error {
	var errs []error
	if o.LeaderElectLeaseDuration <= o.LeaderElectRenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must exceed --leader-elect-renew-deadline (%s)", o.LeaderElectLeaseDuration, o.LeaderElectRenewDeadline))
	}
	if o.LeaderElectRetryPeriod >= o.LeaderElectRenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period (%s) must be below --leader-elect-renew-deadline (%s)", o.LeaderElectRetryPeriod, o.LeaderElectRenewDeadline))
	}
	switch o.InventoryAuthMode {
	case "kubernetes", "disabled":
	default:
		errs = append(errs, fmt.Errorf("--inventory-auth-mode must be kubernetes or disabled, not %q", o.InventoryAuthMode))
	}
	if o.InventoryHTTPEnabled && (o.InventoryHTTPPort < 1 || o.InventoryHTTPPort > 65535) {
		errs = append(errs, fmt.Errorf("--inventory-http-port must be a port (1 to 65535), not %d", o.InventoryHTTPPort))
	}
	if o.ExportTimeout <= 0 || o.ExportTimeoutPerRow < 0 {
		errs = append(errs, fmt.Errorf("--export-timeout must be positive and --export-timeout-per-row not negative, not %s and %s", o.ExportTimeout, o.ExportTimeoutPerRow))
	}
	if o.WriterID != "" && !writerIDPattern.MatchString(o.WriterID) {
		errs = append(errs, fmt.Errorf("--writer-id must be 1 to 128 letters, digits, '.', '_' or '-', not %q", o.WriterID))
	}
	if o.EventMessages != "perRow" && o.EventMessages != "envelope" {
		errs = append(errs, fmt.Errorf("--event-messages must be perRow or envelope, not %q", o.EventMessages))
	}
	if o.MaxExportBytes <= 0 {
		errs = append(errs, fmt.Errorf("--max-export-bytes must be positive, not %d", o.MaxExportBytes))
	}
	switch o.NamespaceCeiling {
	case "own", "all":
	default:
		errs = append(errs, fmt.Errorf("--namespace-ceiling must be own or all, not %q", o.NamespaceCeiling))
	}
	if o.TenantMode && len(o.WatchNamespaces) == 0 {
		errs = append(errs, errors.New("--tenant-mode needs --watch-namespaces: a tenant install reads only the namespaces its Roles cover"))
	}
	for _, n := range o.WatchNamespaces {
		if strings.TrimSpace(n) == "" {
			errs = append(errs, errors.New("--watch-namespaces must not contain empty names"))
			break
		}
	}
	return errors.Join(errs...)
}

var writerIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// noEffect are the flags accepted for compatibility with upstream that do
// nothing in this version, with the reason.
var noEffect = map[string]string{
	"collect-dispatch-workers":      "the actor engine sizes itself",
	"collect-dispatch-queue-size":   "the actor engine coalesces by object instead of queueing",
	"collect-dispatch-enqueue-wait": "informer goroutines never block",
}

// Ignored lists the flags set on fs that have no effect, each with why, so
// the manager can say so at start.
func Ignored(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if why, ok := noEffect[f.Name]; ok {
			out = append(out, "--"+f.Name+": "+why)
		}
	})
	return out
}
