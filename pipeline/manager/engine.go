package manager

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"kollect.dev/kollect/actors"
	"kollect.dev/kollect/actors/engine"
	"kollect.dev/kollect/informers"
	"kollect.dev/kollect/model/compile"
	"kollect.dev/kollect/model/endpoint"
	"kollect.dev/kollect/pipeline/backends"
	"kollect.dev/kollect/pipeline/controllers"
	"kollect.dev/kollect/pipeline/controllers/clusterinventory"
	"kollect.dev/kollect/pipeline/controllers/clustertarget"
	"kollect.dev/kollect/pipeline/controllers/connectiontest"
	"kollect.dev/kollect/pipeline/controllers/familysink"
	"kollect.dev/kollect/pipeline/controllers/inventory"
	"kollect.dev/kollect/pipeline/controllers/target"
	"kollect.dev/kollect/pipeline/readapi"
	"kollect.dev/kollect/pipeline/scope"
	"kollect.dev/kollect/pipeline/status"
	"kollect.dev/kollect/sinks/git"
)

// engineRunnable runs the collection engine while this replica leads.
type engineRunnable struct {
	inf *informers.Manager
	eng *engine.Engine
	// read, when the read API is on, learns that this replica's engine
	// runs.
	read *readapi.Store
}

func (r engineRunnable) Start(ctx context.Context) error {
	defer r.eng.Stop()
	if r.read != nil {
		r.read.Lead()
	}
	if err := r.inf.StartNamespaces(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (engineRunnable) NeedLeaderElection() bool { return true }

// setupEngine builds the collection engine and registers the reconcilers
// that drive it.
func setupEngine(ctx context.Context, mgr ctrl.Manager, o Options) error {
	cfg := mgr.GetConfig()
	c := mgr.GetClient()
	if o.TenantMode {
		c = scope.WithoutClusterScopes(c)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	inf := informers.New(dyn, disco, o.InformerResyncPeriod, 30*time.Second, informers.NewMetrics(ctrlmetrics.Registry))
	clk := actors.OrReal(o.Clock)
	cm := controllers.NewMetrics(ctrlmetrics.Registry, clk)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("access reviews client: %w", err)
	}
	// An informer spanning namespaces lists each one the operator may list
	// when it may not list them all (RBAC by Roles): a namespace it may not
	// list holds only the targets that read it (ScopeForbidden).
	reviews := informers.NewReviews(cs.AuthorizationV1().SelfSubjectAccessReviews(), 30*time.Second)
	reviews.Counted = cm.AccessCache
	inf.CheckAccess(reviews)
	var only []string
	if o.TenantMode {
		// Roles only: namespaces are read one by one, never listed.
		only = o.WatchNamespaces
		inf.OnlyNamespaces(only, 30*time.Second)
	}
	writer := status.NewWriter(c, o.StatusFlushInterval, clk)
	writer.Events = mgr.GetEventRecorder("kollect")
	if err := writer.RegisterMetrics(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("register status metrics: %w", err)
	}
	var reporter engine.Reporter = writer
	read, err := setupReadAPI(ctx, mgr, writer, o)
	if err != nil {
		return err
	}
	if read != nil {
		reporter = read
	}
	// The actor system logs through the manager's logger.
	eng := engine.New(inf, actors.NewMetrics(ctrlmetrics.Registry), reporter, o.ExportBatchWindow,
		slog.New(logr.ToSlogHandler(ctrl.LoggerFrom(ctx).WithName("actors"))), clk)
	eng.SeriesEvery = o.MetricsSampleInterval
	eng.Publish = read != nil
	if err := mgr.Add(engineRunnable{inf: inf, eng: eng, read: read}); err != nil {
		return fmt.Errorf("add engine: %w", err)
	}
	resync := o.TargetCountResync
	if resync <= 0 {
		resync = 60 * time.Second
	}
	tr := &target.Reconciler{Client: c, Engine: eng, Status: writer, Namespaces: inf, Resync: resync,
		Tuning: controllers.Tuning{Concurrency: o.ConcurrentTarget, RateLimit: o.ReconcileRateLimit}, Metrics: cm, Defaults: compile.Defaults{IncludedNamespaces: o.DefaultIncludedNamespaces,
			ExcludedNamespaces: o.DefaultExcludedNamespaces, ScrubKeys: o.ScrubKeys}, Only: only,
		AllNamespaces: o.NamespaceCeiling == "all", AttributeLabels: o.MetricsAttributeLabels}
	if err := tr.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("set up target controller: %w", err)
	}
	policy := endpoint.Policy{AllowPrivate: o.AllowPrivateSinks, AllowLoopback: o.DevAllowLoopbackSinks}
	// Git over HTTP(S) dials through the same guard as every other backend.
	git.GuardHTTP(backends.GuardedDial(policy))
	registry := backends.Default(policy)
	registry.AllowAmbient, registry.EventMessages, registry.NATSStreamMaxAge = o.AllowAmbientCredentials, o.EventMessages, o.NATSStreamMaxAge
	registry.ReadBack, registry.Clock = cm.ReadBack, clk
	if registry.Writer, err = writerID(ctx, mgr.GetAPIReader(), o.WriterID); err != nil {
		return err
	}
	resolver := &inventory.Resolver{Client: c, Clock: clk, MaxBytes: o.MaxExportBytes, Timeout: o.ExportTimeout, TimeoutPerRow: o.ExportTimeoutPerRow, Metrics: cm,
		Backends: &backends.Cache{Registry: registry, StateDir: os.Getenv("KOLLECT_GIT_MIRROR_DIR")}}
	ir := &inventory.Reconciler{Client: c, Engine: eng, Status: writer, Metrics: cm,
		Tuning:   controllers.Tuning{Concurrency: o.ConcurrentInventory, RateLimit: o.ReconcileRateLimit},
		Resolver: resolver, Tenant: o.TenantMode}
	if err := ir.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up inventory controller: %w", err)
	}
	// A tenant install has no right to the cluster kinds (and its webhooks
	// refuse them): their controllers do not run.
	if !o.TenantMode {
		ctr := &clustertarget.Reconciler{Client: c, Engine: eng, Status: writer, Namespaces: inf, Resync: resync,
			Metrics: cm, Defaults: tr.Defaults, AttributeLabels: o.MetricsAttributeLabels, Tuning: controllers.Tuning{Concurrency: o.ConcurrentClusterTarget, RateLimit: o.ReconcileRateLimit}}
		if err := ctr.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up cluster target controller: %w", err)
		}
		cir := &clusterinventory.Reconciler{Client: c, Engine: eng, Status: writer, Resolver: resolver,
			Metrics: cm, Resync: resync, Tuning: controllers.Tuning{Concurrency: o.ConcurrentClusterInv, RateLimit: o.ReconcileRateLimit}}
		if err := cir.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up cluster inventory controller: %w", err)
		}
	}
	if err := familysink.Setup(mgr, registry, cm, writer.Events, clk); err != nil {
		return fmt.Errorf("set up sink controllers: %w", err)
	}
	ctt := &connectiontest.Reconciler{Client: c, Prober: registry, Metrics: cm, Now: clk.Now}
	if err := ctt.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up connection test controller: %w", err)
	}
	return nil
}

// setupReadAPI serves the inventory read API when it is enabled, and
// returns the store the engine reports through (nil when it is not).
func setupReadAPI(ctx context.Context, mgr ctrl.Manager, writer *status.Writer, o Options) (*readapi.Store, error) {
	if !o.InventoryHTTPEnabled {
		return nil, nil
	}
	store := readapi.NewStore(writer, "")
	var auth readapi.Authorizer = readapi.Open{}
	if o.InventoryAuthMode == "kubernetes" {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return nil, fmt.Errorf("read API reviews client: %w", err)
		}
		auth = readapi.NewKubernetes(cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews(), o.InventoryAuthCacheTTL)
	} else {
		ctrl.LoggerFrom(ctx).Info("the inventory read API lets anyone read every inventory (--inventory-auth-mode=disabled): development only")
	}
	srv := &readapi.Server{Store: store, Reader: mgr.GetCache(), Auth: auth, Log: ctrl.LoggerFrom(ctx).WithName("read-api")}
	if err := mgr.Add(srv.Runnable(fmt.Sprintf(":%d", o.InventoryHTTPPort))); err != nil {
		return nil, fmt.Errorf("add the read API: %w", err)
	}
	return store, nil
}

// writerID is this operator's name in the sinks' writer records: flag
// unless empty, else the UID of the kube-system namespace, which stays
// the same for the life of a cluster and differs between clusters. An
// install that may not read it (a tenant install) keeps no records, and
// says so.
func writerID(ctx context.Context, c client.Reader, flag string) (string, error) {
	switch flag {
	case "none":
		return "", nil
	case "":
	default:
		return flag, nil
	}
	var ns corev1.Namespace
	err := c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, &ns)
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).Info("cannot read the kube-system namespace, so sinks keep no writer records: two clusters sharing a sink must set distinct spec.cluster values (or pass --writer-id)", "error", err.Error())
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the kube-system namespace for this operator's writer id (or pass --writer-id): %w", err)
	}
	return string(ns.UID), nil
}
