// Package manifests reads and applies Kubernetes manifests: YAML or JSON
// streams of objects, given as files or folders. The CLI, the offline
// validator, the demo and the load-test harness share it.
package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Files expands paths: a file stands for itself, a folder for every
// *.yaml, *.yml and *.json directly in it. The result is sorted.
func Files(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("no files: pass -f FILE or -f DIR")
	}
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

// Decode reads every object of a YAML or JSON stream, skipping empty
// documents. On a broken document it returns the objects before it and an
// error naming the document (1-based).
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, fmt.Errorf("document %d: %w", i, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// ReadFile decodes a file.
func ReadFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(bytes.NewReader(data))
}

// Apply server-side applies objs as owner, taking over fields other
// owners hold.
func Apply(ctx context.Context, c client.Client, owner string, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := c.Patch(ctx, o, client.Apply, client.ForceOwnership, client.FieldOwner(owner)); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
