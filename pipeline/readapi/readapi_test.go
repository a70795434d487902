//go:build integration

package readapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/testenv"
	"kollect.dev/kollect/pipeline/readapi"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// api is the read API of a manager, read with a bearer token.
type api struct {
	t    *testing.T
	base string
}

func (a api) get(token, path string, into any) int {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.base+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// A watch answered 200 streams until the timeout: its body is not read.
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode
	}
	body, _ := io.ReadAll(resp.Body)
	if into != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, into); err != nil {
			a.t.Fatalf("%s: %v\n%s", path, err, body)
		}
	}
	return resp.StatusCode
}

type row struct {
	TargetName string         `json:"targetName"`
	Namespace  string         `json:"namespace"`
	Name       string         `json:"name"`
	Kind       string         `json:"kind"`
	Attributes map[string]any `json:"attributes"`
}

type summary struct {
	readapi.Summary
	Items []row `json:"items"`
}

func names(s summary) []string {
	var out []string
	for _, r := range s.Items {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

// team sets up a namespace whose inventory reads its ConfigMaps, with
// cms named in it.
func team(t *testing.T, c client.Client, ns string, cms ...string) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&kollectv1alpha1.KollectProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cms"},
			Spec: kollectv1alpha1.KollectProfileSpec{TargetGVK: kollectv1alpha1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
				Attributes: []kollectv1alpha1.ProfileAttribute{{Name: "colour", Path: "{.data.colour}"}}}},
		&kollectv1alpha1.KollectTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cms"},
			Spec: kollectv1alpha1.KollectTargetSpec{ProfileRef: "cms", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"inventoried": "yes"}}}},
		&kollectv1alpha1.KollectInventory{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"}}}
	for _, name := range cms {
		objs = append(objs, configMap(ns, name, "red"))
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

func configMap(ns, name, colour string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"inventoried": "yes"}},
		Data: map[string]string{"colour": colour}}
}

// account creates a ServiceAccount bound to rules (in ns, or everywhere
// when ns is ""), and returns a token the API server issued it.
func account(t *testing.T, cs kubernetes.Interface, c client.Client, name, ns string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: name}}
	var objs []client.Object
	switch {
	case len(rules) == 0:
	case ns == "":
		objs = []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}}}
	default:
		objs = []client.Object{&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}}
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

var readInventories = rbacv1.PolicyRule{APIGroups: []string{"kollect.dev"}, Resources: []string{"kollectinventories", "kollecttargets"}, Verbs: []string{"get", "list"}}

// The read API serves what each inventory built, to whom RBAC lets read
// it: a real manager, real tokens, real reviews.
func TestTheReadAPIServesEachTeamItsRows(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	team(t, c, "team-a", "a1", "a2", "a3")
	team(t, c, "team-b", "b1")
	admin := account(t, cs, c, "inventory-admin", "", readInventories)
	reader := account(t, cs, c, "reader-a", "team-a", readInventories)
	nobody := account(t, cs, c, "nobody", "")

	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	mgr, err := env.StartManager("--inventory-http-enabled", "--inventory-http-port="+port, "--inventory-auth-cache-ttl=1s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Stop() })
	a := api{t: t, base: "http://" + addr}

	var all summary
	testenv.Eventually(t, 60*time.Second, "both teams' rows are served", func() error {
		if code := a.get(admin, "/v1alpha1/inventory", &all); code != http.StatusOK || all.Pagination.Total != 4 {
			return fmt.Errorf("status %d, rows %v", code, names(all))
		}
		return nil
	})
	if got := names(all); !slices.Equal(got, []string{"team-a/a1", "team-a/a2", "team-a/a3", "team-b/b1"}) {
		t.Errorf("rows %v", got)
	}
	if r := all.Items[0]; r.Kind != "ConfigMap" || r.TargetName != "cms" || r.Attributes["colour"] != "red" {
		t.Errorf("row %+v, want the profile's view of a1", r)
	}

	for _, tc := range []struct {
		who, token, path string
		want             int
	}{
		{"no token", "", "/v1alpha1/inventory?namespace=team-a", http.StatusUnauthorized},
		{"a token the API server never issued", "not-a-token", "/v1alpha1/inventory?namespace=team-a", http.StatusUnauthorized},
		{"no rights", nobody, "/v1alpha1/inventory?namespace=team-a", http.StatusForbidden},
		{"a team reader, every namespace", reader, "/v1alpha1/inventory", http.StatusForbidden},
		{"a team reader, another team", reader, "/v1alpha1/inventory?namespace=team-b", http.StatusForbidden},
		{"a team reader, another team's inventory", reader, "/v1alpha1/inventory/team-b/main", http.StatusForbidden},
		{"a team reader, its watch everywhere", reader, "/v1alpha1/inventory/watch", http.StatusForbidden},
		{"a team reader, every target", reader, "/v1alpha1/status/targets", http.StatusForbidden},
		{"a team reader, its namespace", reader, "/v1alpha1/inventory?namespace=team-a", http.StatusOK},
		{"the legacy path", reader, "/inventory?namespace=team-a", http.StatusOK},
		{"an inventory that does not exist", admin, "/v1alpha1/inventory/team-a/nope", http.StatusNotFound},
		{"a bad page", admin, "/v1alpha1/inventory?limit=-1", http.StatusBadRequest},
		{"the OpenAPI document, for anyone", "", "/v1alpha1/openapi.json", http.StatusOK},
	} {
		if got := a.get(tc.token, tc.path, nil); got != tc.want {
			t.Errorf("%s: GET %s answered %d, want %d", tc.who, tc.path, got, tc.want)
		}
	}

	var one summary
	if code := a.get(reader, "/v1alpha1/inventory/team-a/main", &one); code != http.StatusOK {
		t.Fatalf("team-a/main: %d", code)
	}
	if got := names(one); !slices.Equal(got, []string{"team-a/a1", "team-a/a2", "team-a/a3"}) || one.Checksum == "" || one.Inventory != "main" {
		t.Errorf("team-a/main: rows %v, checksum %q, inventory %q", got, one.Checksum, one.Inventory)
	}
	var inv kollectv1alpha1.KollectInventory
	testenv.Eventually(t, 30*time.Second, "the inventory's status has its checksum", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "main"}, &inv); err != nil {
			return err
		}
		if inv.Status.ItemCount != 3 {
			return fmt.Errorf("itemCount %d", inv.Status.ItemCount)
		}
		return nil
	})

	var page summary
	if code := a.get(admin, "/v1alpha1/inventory?limit=2&offset=1", &page); code != http.StatusOK {
		t.Fatal(code)
	}
	if got := names(page); !slices.Equal(got, []string{"team-a/a2", "team-a/a3"}) || page.ItemCount != 2 || !page.Pagination.HasMore || page.Pagination.Total != 4 {
		t.Errorf("page: rows %v, %+v", got, page.Pagination)
	}
	var named summary
	if code := a.get(admin, "/v1alpha1/inventory?name=b1&kind=ConfigMap", &named); code != http.StatusOK || !slices.Equal(names(named), []string{"team-b/b1"}) {
		t.Errorf("name filter: %d %v", code, names(named))
	}

	var st readapi.StatusList
	if code := a.get(reader, "/v1alpha1/status/inventories?namespace=team-a", &st); code != http.StatusOK || len(st.Items) != 1 ||
		st.Items[0].Name != "main" || st.Items[0].ItemCount != 3 {
		t.Errorf("inventory status: %d %+v", code, st.Items)
	}

	t.Run("Watch", func(t *testing.T) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/v1alpha1/inventory/watch?namespace=team-a", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+reader)
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(wctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("watch: %d %s", resp.StatusCode, ct)
		}
		frames := sse(bufio.NewReader(resp.Body))
		first := <-frames
		if got := names(first); !slices.Equal(got, []string{"team-a/a1", "team-a/a2", "team-a/a3"}) {
			t.Fatalf("first frame: %v", got)
		}
		if err := c.Create(ctx, configMap("team-a", "a4", "blue")); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, configMap("team-b", "b2", "blue")); err != nil { // not watched
			t.Fatal(err)
		}
		for f := range frames {
			if f.Namespace != "team-a" {
				t.Fatalf("a frame of %q reached a watch of team-a", f.Namespace)
			}
			if slices.Contains(names(f), "team-a/a4") {
				if f.Items[3].Attributes["colour"] != "blue" {
					t.Errorf("a4: %+v", f.Items[3])
				}
				return
			}
		}
		t.Fatal("the stream ended before the new ConfigMap's row arrived")
	})
}

// sse reads `inventory` frames until the stream ends.
func sse(r *bufio.Reader) <-chan summary {
	out := make(chan summary)
	go func() {
		defer close(out)
		event := ""
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "inventory":
				var s summary
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s) == nil {
					out <- s
				}
			}
		}
	}()
	return out
}
