package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// churnLife is how long a churned namespace lives before it is deleted.
const churnLife = 5 * time.Second

// churnPrefix starts the name of every churned namespace.
const churnPrefix = "ci-"

// namespaceChurn is CI at work beside the tenants: namespaces created at
// rate per second for churnFor, each deleted churnLife after it appeared.
// A quarter of the way in, one team edits its profile (a new attribute),
// and the result says how long until that team's rows in the table carry
// it. The control plane has no namespace controller, so a deleted
// namespace is finalized here, as kube-controller-manager would once it is
// empty.
type namespaceChurn struct {
	c client.Client
	// dsn is the table's database: the churn reads it on a connection of
	// its own (a pgx.Conn serves one caller at a time).
	dsn      string
	rate     float64
	churnFor time.Duration
	// team is the namespace of the team that edits its profile, owning
	// rows rows.
	team string
	rows int
	// metrics is the operator's metrics address; profile, when set,
	// takes the operator's CPU profile over the duration given.
	metrics string
	profile func(time.Duration) ([]byte, error)
	logf    func(string, ...any)
}

// churnResult is what the churn measured.
type churnResult struct {
	Namespaces int           `json:"namespaces"` // created and deleted
	EditTook   time.Duration `json:"profileEditNs"`
	// StatusBytes is the largest target status during the churn.
	StatusBytes int `json:"targetStatusBytes"`
	// SeriesOfGone counts the series, after the churn, that name a churned
	// (deleted) namespace in a label.
	SeriesOfGone int `json:"seriesOfDeletedNamespaces"`
	// CPUProfile is the operator's over the middle of the churn.
	CPUProfile []byte `json:"-"`
}

func (n namespaceChurn) run(ctx context.Context) (churnResult, error) {
	var res churnResult
	total := int(n.rate * n.churnFor.Seconds())
	every := time.Duration(float64(time.Second) / n.rate)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	edited := make(chan time.Duration, 1)
	profiled := make(chan []byte, 1)
	if n.profile != nil {
		go func() {
			p, err := n.profile(n.churnFor / 2)
			if err != nil {
				n.logf("%v", err)
			}
			profiled <- p
		}()
	}
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := range total {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case err := <-errs:
			return res, err
		case <-tick.C:
		}
		name := fmt.Sprintf("%s%05d", churnPrefix, i)
		if err := createNamespace(ctx, n.c, name, map[string]string{"ci": "yes"}); err != nil {
			return res, err
		}
		wg.Add(1)
		time.AfterFunc(churnLife, func() {
			defer wg.Done()
			if err := deleteNamespace(ctx, n.c, name); err != nil {
				fail(err)
			}
		})
		if i == total/4 {
			go func() {
				took, err := n.editProfile(ctx)
				if err != nil {
					fail(err)
				}
				edited <- took
			}()
		}
		if i%100 == 0 {
			size, err := largestStatus(ctx, n.c, "KollectTargetList")
			if err != nil {
				return res, err
			}
			res.StatusBytes = max(res.StatusBytes, size)
		}
	}
	wg.Wait()
	res.Namespaces = total
	mfs, err := scrape(n.metrics)
	if err != nil {
		return res, fmt.Errorf("scrape the operator: %w", err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); strings.HasPrefix(v, churnPrefix) || strings.Contains(v, "/"+churnPrefix) {
					res.SeriesOfGone++
					break
				}
			}
		}
	}
	n.logf("%d namespaces created and deleted in %v", total, time.Since(start).Round(time.Millisecond))
	select {
	case err := <-errs:
		return res, err
	case res.EditTook = <-edited:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if n.profile != nil {
		res.CPUProfile = <-profiled
	}
	return res, nil
}

// editProfile gives the team's profile a second attribute and returns how
// long until every row of the team's in the table carries it.
func (n namespaceChurn) editProfile(ctx context.Context) (time.Duration, error) {
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(schema.GroupVersionKind{Group: "kollect.dev", Version: "v1alpha1", Kind: "KollectProfile"})
	patch := []byte(`{"spec":{"attributes":[{"name":"version","path":"$.data.version"},{"name":"edited","path":"$.metadata.name"}]}}`)
	p.SetNamespace(n.team)
	p.SetName("configmaps")
	db, err := pgx.Connect(ctx, n.dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close(context.Background())
	at := time.Now()
	if err := n.c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return 0, fmt.Errorf("edit %s's profile: %w", n.team, err)
	}
	for deadline := at.Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var carried int
		err := db.QueryRow(ctx, `SELECT count(*) FROM inventory_items WHERE inventory_namespace = $1 AND payload->'attributes' ? 'edited'`,
			n.team).Scan(&carried)
		if err != nil {
			return 0, err
		}
		if carried == n.rows {
			return time.Since(at), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s's profile edit: %d of %d rows carry it after 2 minutes", n.team, carried, n.rows)
		}
	}
}

// deleteNamespace deletes an empty namespace and finalizes it.
func deleteNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	ns.Spec.Finalizers = nil
	if err := c.SubResource("finalize").Update(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	return nil
}
