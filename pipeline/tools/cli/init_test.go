//go:build integration

package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/internal/eventually"
	"kollect.dev/kollect/pipeline/tools/cli"
)

// terminal runs `kollect init` on a pseudo-terminal and lets a test type
// into it and read its screen, as a person would.
type terminal struct {
	t    *testing.T
	ptmx *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan error
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]`)

func startInit(t *testing.T, kubeconfig, dir string) *terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 160}); err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, ptmx: ptmx, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	go func() {
		var stderr bytes.Buffer
		term.done <- cli.RunInit(ctx, cli.InitOptions{Kubeconfig: kubeconfig, OutputDir: dir, In: tty, Out: tty}, &stderr)
		tty.Close()
	}()
	t.Cleanup(func() { cancel(); ptmx.Close() })
	return term
}

// screen is what the terminal has shown so far, escape sequences removed.
func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return ansi.ReplaceAllString(term.out.String(), "")
}

// waitFor waits until the screen shows text.
func (term *terminal) waitFor(text string) {
	term.t.Helper()
	eventually.Check(term.t, 30*time.Second, fmt.Sprintf("the wizard shows %q", text), func() error {
		if s := term.screen(); !strings.Contains(s, text) {
			return fmt.Errorf("its screen ends:\n%s", s[max(0, len(s)-3000):])
		}
		return nil
	})
}

// keys types into the terminal, one key at a time with a pause after
// each escape so it is not read as the start of a sequence.
func (term *terminal) keys(ks ...string) {
	term.t.Helper()
	for _, k := range ks {
		if _, err := term.ptmx.Write([]byte(k)); err != nil {
			term.t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func (term *terminal) result() error {
	term.t.Helper()
	select {
	case err := <-term.done:
		return err
	case <-time.After(30 * time.Second):
		s := term.screen()
		term.t.Fatalf("the wizard did not finish; its screen ends:\n%s", s[max(0, len(s)-3000):])
		return nil
	}
}

const (
	enter     = "\r"
	clearLine = "\x15" // ctrl+u: the line so far
)

func TestInitWritesAProfileAndTargetThatCollect(t *testing.T) {
	kubeconfig, _ := setup(t)
	dir := filepath.Join(t.TempDir(), "collect-config")
	term := startInit(t, kubeconfig, dir)
	term.waitFor("Which kind should the inventory collect?")
	term.keys("/", "Deployment (apps/v1)", enter)
	term.waitFor("Attributes to keep (sampled from")
	term.keys("/", "$.spec.replicas", enter, "x", "/", clearLine, "containers[0].image", enter, "x", enter)
	term.waitFor("Name of the profile and target")
	term.keys(clearLine, "shop-images", enter, clearLine, "ops", enter, "cli-a, cli-b", enter)
	if err := term.result(); err != nil {
		t.Fatalf("init: %v\n%s", err, term.screen())
	}
	var p kollectv1alpha1.KollectProfile
	readYAML(t, filepath.Join(dir, "profile.yaml"), &p)
	var tg kollectv1alpha1.KollectTarget
	readYAML(t, filepath.Join(dir, "target.yaml"), &tg)
	got := map[string]string{}
	for _, a := range p.Spec.Attributes {
		got[a.Name] = a.Path
	}
	if p.Spec.TargetGVK.Kind != "Deployment" || p.Spec.TargetGVK.Group != "apps" || len(got) != 2 ||
		got["replicas"] != "$.spec.replicas" || got["image"] != "$.spec.template.spec.containers[0].image" {
		t.Fatalf("profile: %+v, attributes %v", p.Spec.TargetGVK, got)
	}
	if tg.Name != "shop-images" || tg.Namespace != "ops" || tg.Spec.ProfileRef != "shop-images" || strings.Join(tg.Spec.IncludedNamespaces, ",") != "cli-a,cli-b" {
		t.Fatalf("target: %s/%s profileRef %q namespaces %v", tg.Namespace, tg.Name, tg.Spec.ProfileRef, tg.Spec.IncludedNamespaces)
	}
	// What it wrote is what collect reads: the rows hold the picked values.
	out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "-o", "ndjson")
	if err != nil || !strings.Contains(out, `"image":"web:1"`) || !strings.Contains(out, `"replicas":2`) || !strings.Contains(out, `"image":"cart:2"`) {
		t.Fatalf("collect -f %s: %v\n%s\n%s", dir, err, out, stderr)
	}
}

func TestInitSamplesSecretsOnlyAfterAConfirmation(t *testing.T) {
	kubeconfig, _ := setup(t)
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cli-a", Name: "db"}, Data: map[string][]byte{"password": []byte("s3cret")}}
	if err := env.Client.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sec) })
	t.Run("declined", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		term := startInit(t, kubeconfig, dir)
		term.waitFor("Which kind should the inventory collect?")
		term.keys("/", "Secret (v1)", enter)
		term.waitFor("Sample Secret objects and allow exporting their data?")
		term.keys("n")
		err := term.result()
		if exitCode(err) != 1 || !strings.Contains(err.Error(), "nothing written") {
			t.Fatalf("declined: want exit 1 and nothing written, got %v", err)
		}
		if strings.Contains(term.screen(), "czNjcmV0") {
			t.Fatal("the declined wizard showed the Secret's data")
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("declined, yet %s exists", dir)
		}
	})
	t.Run("confirmed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		term := startInit(t, kubeconfig, dir)
		term.waitFor("Which kind should the inventory collect?")
		term.keys("/", "Secret (v1)", enter)
		term.waitFor("Sample Secret objects and allow exporting their data?")
		term.keys("y")
		term.waitFor("Attributes to keep")
		term.keys("/", "data.password", enter, "x", enter)
		term.waitFor("Name of the profile and target")
		term.keys(clearLine, "db-secrets", enter, clearLine, "ops", enter, "cli-a", enter)
		if err := term.result(); err != nil {
			t.Fatalf("init: %v\n%s", err, term.screen())
		}
		var p kollectv1alpha1.KollectProfile
		readYAML(t, filepath.Join(dir, "profile.yaml"), &p)
		if p.Annotations["kollect.dev/allow-secret-extraction"] != "true" || len(p.Spec.Attributes) != 1 || p.Spec.Attributes[0].Path != "$.data.password" {
			t.Fatalf("profile: annotations %v attributes %+v", p.Annotations, p.Spec.Attributes)
		}
		out, stderr, err := run("--kubeconfig", kubeconfig, "-f", dir, "-o", "ndjson")
		if err != nil || !strings.Contains(out, `"password":"czNjcmV0"`) {
			t.Fatalf("collect: %v\n%s\n%s", err, out, stderr)
		}
	})
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
}

func TestInitNeedsATerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	err = cli.RunInit(context.Background(), cli.InitOptions{OutputDir: t.TempDir(), In: null, Out: null}, &bytes.Buffer{})
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "interactive") {
		t.Fatalf("init without a terminal: want exit 2 saying it is interactive, got %v", err)
	}
}
