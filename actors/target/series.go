package target

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"kollect.dev/kollect/model/rows"
)

// Metric is one profile series (KollectProfile spec.metrics): the sum of a numeric attribute over the target's rows, and, with
// labels, the same sum per tuple of label attributes.
type Metric struct {
	Name   string
	Path   string   // the attribute summed
	Labels []string // attributes whose values label the tuples
}

// MaxTuples bounds the label tuples of one labelled series; the rest are
// dropped and counted.
const MaxTuples = 200

// Series are a target's profile series at one time. Immutable once sent.
type Series struct {
	// Values is series name → value; "object_count" is the row count.
	Values map[string]float64
	// Labeled is series name → its tuples, in a stable order.
	Labeled map[string]*Labeled
}

// Labeled is one labelled series.
type Labeled struct {
	Labels  []string // attribute names, as the profile lists them
	Tuples  []Tuple  // at most MaxTuples, sorted by values
	Dropped int      // tuples beyond MaxTuples
}

// Tuple is one label tuple and its sum.
type Tuple struct {
	Values []string
	Sum    float64
}

// ObjectCount is the series of a target's row count.
const ObjectCount = "object_count"

// computeSeries sums the metrics over rs. With no metrics, every attribute
// holding a number gets a sum named after it.
func computeSeries(rs map[objKey]*rows.Row, metrics []Metric) *Series {
	s := &Series{Values: map[string]float64{ObjectCount: float64(len(rs))}}
	if len(metrics) == 0 {
		for _, r := range rs {
			if !mayHoldNumbers(r.AttributesJSON()) {
				continue // nothing to decode
			}
			for _, a := range r.Attributes() {
				if f, ok := number(a.Value); ok {
					s.Values[a.Name] += f
				}
			}
		}
		return s
	}
	for _, m := range metrics {
		s.Values[m.Name] = 0
	}
	sums := map[string]map[string]*Tuple{}
	for _, r := range rs {
		attrs := r.Attributes()
		for _, m := range metrics {
			f, ok := number(attrs.Get(m.Path))
			if !ok {
				continue
			}
			s.Values[m.Name] += f
			if len(m.Labels) == 0 {
				continue
			}
			values := make([]string, len(m.Labels))
			for i, l := range m.Labels {
				values[i] = labelValue(attrs.Get(l))
			}
			key := strings.Join(values, "\x00")
			byTuple := sums[m.Name]
			if byTuple == nil {
				byTuple = map[string]*Tuple{}
				sums[m.Name] = byTuple
			}
			t := byTuple[key]
			if t == nil {
				t = &Tuple{Values: values}
				byTuple[key] = t
			}
			t.Sum += f
		}
	}
	for _, m := range metrics {
		if len(m.Labels) == 0 {
			continue
		}
		l := &Labeled{Labels: m.Labels}
		for _, t := range sums[m.Name] {
			l.Tuples = append(l.Tuples, *t)
		}
		slices.SortFunc(l.Tuples, func(a, b Tuple) int { return slices.Compare(a.Values, b.Values) })
		if len(l.Tuples) > MaxTuples {
			l.Dropped = len(l.Tuples) - MaxTuples
			l.Tuples = l.Tuples[:MaxTuples]
		}
		if s.Labeled == nil {
			s.Labeled = map[string]*Labeled{}
		}
		s.Labeled[m.Name] = l
	}
	return s
}

// number reads an attribute as a number.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// labelValue is an attribute's string form: strings as they are, numbers
// and booleans formatted, anything else its JSON, absent "".
func labelValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// mayHoldNumbers reports whether compact attributes JSON may hold a number
// as a value: one follows a colon directly. A string holding such a colon
// ("nginx:1.25") is a false yes, never a false no.
func mayHoldNumbers(b string) bool {
	for i := 0; i+1 < len(b); i++ {
		if c := b[i+1]; b[i] == ':' && (c == '-' || c >= '0' && c <= '9') {
			return true
		}
	}
	return false
}
