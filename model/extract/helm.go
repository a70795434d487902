package extract

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

var helmAliases = map[string]string{
	"releaseName":  "name",
	"chartName":    "chart.metadata.name",
	"chartVersion": "chart.metadata.version",
	"appVersion":   "chart.metadata.appVersion",
	"revision":     "version",
	"status":       "info.status",
	"lastDeployed": "info.last_deployed",
}

var helmDenied = []string{"manifest", "hooks", "chart.templates", "chart.files", "chart.values", "chart.raw"}

// helmPath reads a field of the Helm release stored in a helm.sh/release.v1
// Secret.
type helmPath struct{ fields []string }

func compileHelm(field string) (evaluator, error) {
	if field == "" {
		return nil, fmt.Errorf("helm:release. needs a field, such as helm:release.chartVersion")
	}
	head, rest, _ := strings.Cut(field, ".")
	if alias, ok := helmAliases[head]; ok {
		field = alias
		if rest != "" {
			field += "." + rest
		}
	}
	for _, d := range helmDenied {
		if field == d || strings.HasPrefix(field, d+".") {
			return nil, fmt.Errorf("helm release field %q is not exportable", field)
		}
	}
	return &helmPath{fields: strings.Split(field, ".")}, nil
}

func (h *helmPath) eval(obj map[string]any) (any, bool, error) {
	data, _ := obj["data"].(map[string]any)
	enc, _ := data["release"].(string)
	if enc == "" {
		return nil, false, nil
	}
	release, err := decodeRelease(enc)
	if err != nil {
		return nil, false, fmt.Errorf("decode helm release: %w", err)
	}
	var cur any = release
	for _, f := range h.fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		if cur, ok = m[f]; !ok {
			return nil, false, nil
		}
	}
	return cur, true, nil
}

func decodeRelease(enc string) (map[string]any, error) {
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, err
	}
	if inner, err := base64.StdEncoding.DecodeString(string(raw)); err == nil {
		raw = inner
	}
	if len(raw) > 3 && bytes.Equal(raw[:3], []byte{0x1f, 0x8b, 0x08}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, 64<<20)); err != nil {
			return nil, err
		}
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}
