package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/model/rows"
)

func printRecords(w io.Writer, format string, records []record) error {
	switch format {
	case "ndjson":
		for _, r := range records {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return err
			}
		}
		return nil
	case "json", "yaml":
		if records == nil {
			records = []record{}
		}
		b, err := json.MarshalIndent(records, "", "  ")
		if err != nil {
			return err
		}
		if format == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
		} else {
			b = append(b, '\n')
		}
		_, err = w.Write(b)
		return err
	}
	return table(w, records, format == "wide")
}

// table prints one line per row with the attributes as columns.
func table(w io.Writer, records []record, wide bool) error {
	names := map[string]bool{}
	for _, r := range records {
		for _, row := range r.snap.Rows {
			for _, a := range row.Attributes() {
				names[a.Name] = true
			}
		}
	}
	cols := make([]string, 0, len(names))
	for k := range names {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := []string{"TARGET", "NAMESPACE", "NAME", "KIND"}
	for _, c := range cols {
		header = append(header, strings.ToUpper(c))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range records {
		for _, row := range r.snap.Rows {
			line := []string{r.TargetNamespace + "/" + r.TargetName, row.Namespace, row.Name, row.Kind}
			as := row.Attributes()
			for _, c := range cols {
				line = append(line, cell(as, c, wide))
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
	}
	return tw.Flush()
}

func cell(attrs rows.Attributes, key string, wide bool) string {
	v, ok := attrs.Lookup(key)
	if !ok {
		return "<none>"
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	default:
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if !wide && len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
