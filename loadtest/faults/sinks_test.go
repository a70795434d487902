package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"sigs.k8s.io/yaml"

	"kollect.dev/kollect/sinks/kafka/kafkatest"
	"kollect.dev/kollect/sinks/nats/natstest"
)

// state is object name → the version its row holds.
type state map[string]string

// diff describes how got differs from want ("" when equal).
func (want state) diff(got state) string {
	var missing, stale, extra []string
	for n, v := range want {
		switch g, ok := got[n]; {
		case !ok:
			missing = append(missing, n)
		case g != v:
			stale = append(stale, n+"="+g)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			extra = append(extra, n)
		}
	}
	if len(missing)+len(stale)+len(extra) == 0 {
		return ""
	}
	first := func(s []string) []string { return s[:min(len(s), 3)] }
	return fmt.Sprintf("%d missing %v, %d stale %v, %d extra %v", len(missing), first(missing), len(stale), first(stale), len(extra), first(extra))
}

func git(bare string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"--git-dir", bare}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

// gitCommits lists main's commits, oldest first ("" when it has none).
func gitCommits(bare string) []string {
	out, err := git(bare, "rev-list", "--reverse", "main")
	if err != nil || out == "" {
		return nil
	}
	return strings.Fields(out)
}

// gitFiles counts the files of one commit.
func gitFiles(bare, commit string) (int, error) {
	out, err := git(bare, "ls-tree", "-r", "--name-only", commit)
	if err != nil {
		return 0, err
	}
	return len(strings.Fields(out)), nil
}

// gitState reads every file at the tip of main with one cat-file --batch.
func gitState(bare string) (state, error) {
	out, err := git(bare, "ls-tree", "-r", "--name-only", "main")
	if err != nil {
		return nil, err
	}
	files := strings.Fields(out)
	var in bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&in, "main:%s\n", f)
	}
	cmd := exec.Command("git", "--git-dir", bare, "cat-file", "--batch")
	cmd.Stdin = &in
	raw, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	got := state{}
	rd := bufio.NewReader(bytes.NewReader(raw))
	for _, f := range files {
		header, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		var sha, typ string
		var size int
		if _, err := fmt.Sscan(header, &sha, &typ, &size); err != nil {
			return nil, err
		}
		body := make([]byte, size+1)
		if _, err := io.ReadFull(rd, body); err != nil {
			return nil, err
		}
		var attrs struct{ Version string }
		if err := yaml.Unmarshal(body[:size], &attrs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		got[strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))] = attrs.Version
	}
	return got, nil
}

// pgState reads name → version of the inventory's rows; it fails when an
// object has two rows.
func (r *rig) pgState(ctx context.Context) (state, error) {
	rs, err := r.db.Query(ctx, `SELECT payload->>'name', coalesce(payload->'attributes'->>'version', '') FROM inventory_items
WHERE inventory_namespace = $1 AND inventory_name = 'inventory'`, r.ns)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	got := state{}
	for rs.Next() {
		var n, v string
		if err := rs.Scan(&n, &v); err != nil {
			return nil, err
		}
		if _, dup := got[n]; dup {
			return nil, fmt.Errorf("two rows for %s", n)
		}
		got[n] = v
	}
	return got, rs.Err()
}

// auditPostgres records every DELETE and every UPDATE of the sink's table
// from now on, with the row's name, so a test sees what happened in
// between and not only the end.
func (r *rig) auditPostgres(ctx context.Context) error {
	_, err := r.db.Exec(ctx, `
CREATE TABLE IF NOT EXISTS kollect_audit (op text NOT NULL, name text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE OR REPLACE FUNCTION kollect_audit() RETURNS trigger AS $$
BEGIN
  INSERT INTO kollect_audit(op, name) VALUES (TG_OP, OLD.payload->>'name');
  RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS kollect_audit ON inventory_items;
CREATE TRIGGER kollect_audit AFTER DELETE OR UPDATE ON inventory_items FOR EACH ROW EXECUTE FUNCTION kollect_audit();
TRUNCATE kollect_audit;`)
	return err
}

// audited counts the recorded operations by kind.
func (r *rig) audited(ctx context.Context) (map[string]int, error) {
	rs, err := r.db.Query(ctx, `SELECT op, count(*) FROM kollect_audit GROUP BY op`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]int{}
	for rs.Next() {
		var op string
		var n int
		if err := rs.Scan(&op, &n); err != nil {
			return nil, err
		}
		out[op] = n
	}
	return out, rs.Err()
}

// message is one event read back from a stream.
type message struct {
	Change string `json:"change"`
	Key    string `json:"key"`
	Row    struct {
		Name       string            `json:"name"`
		Attributes map[string]string `json:"attributes"`
	} `json:"row"`
}

func fold(ms []message) state {
	st := state{}
	names := map[string]string{} // key → name
	for _, m := range ms {
		switch m.Change {
		case "upsert":
			names[m.Key] = m.Row.Name
			st[m.Row.Name] = m.Row.Attributes["version"]
		case "delete":
			delete(st, names[m.Key])
		}
	}
	return st
}

func (r *rig) natsMessages(ctx context.Context) ([]message, error) {
	ms, err := natstest.ReadAll(ctx, r.nats.URL(), stream)
	if err != nil {
		return nil, err
	}
	out := make([]message, 0, len(ms))
	for _, m := range ms {
		var e message
		if err := json.Unmarshal(m.Data, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func (r *rig) kafkaMessages(ctx context.Context) ([]message, error) {
	recs, err := kafkatest.ReadAll(ctx, r.kafka.Brokers(), topic)
	if err != nil {
		return nil, err
	}
	out := make([]message, 0, len(recs))
	for _, rec := range recs {
		if rec.Value == nil { // a tombstone: the delete
			out = append(out, message{Change: "delete", Key: string(rec.Key)})
			continue
		}
		var e message
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// history is what every sink holds, and how much of it there is.
type history struct {
	commits        []string
	pg, git        state
	nats, kafka    []message
	natsSt, kafkSt state
	s3             state
}

func (r *rig) read(ctx context.Context) (*history, error) {
	h := &history{commits: gitCommits(r.bare)}
	var err error
	if len(h.commits) > 0 {
		if h.git, err = gitState(r.bare); err != nil {
			return nil, fmt.Errorf("git: %w", err)
		}
	}
	if h.pg, err = r.pgState(ctx); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if h.nats, err = r.natsMessages(ctx); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	if h.kafka, err = r.kafkaMessages(ctx); err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	h.natsSt, h.kafkSt = fold(h.nats), fold(h.kafka)
	if h.s3, err = r.s3State(ctx); err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	return h, nil
}

// converged reports whether every sink holds exactly want.
func (h *history) converged(want state) error {
	for _, s := range []struct {
		name string
		got  state
	}{{"git", h.git}, {"postgres", h.pg}, {"nats", h.natsSt}, {"kafka", h.kafkSt}, {"s3", h.s3}} {
		if d := want.diff(s.got); d != "" {
			return fmt.Errorf("%s: %s", s.name, d)
		}
	}
	return nil
}

// bucket is the S3 sink's bucket.
const bucket = "faults"

// s3State reads name → version from every row object in the bucket under
// the inventory's prefix, whatever its manifest says, as a reader of the
// prefix would: an object left by a row that went is an extra row, two
// objects of one object an error.
func (r *rig) s3State(ctx context.Context) (state, error) {
	cl := r.s3.Client()
	got := state{}
	pages := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("inventory/" + r.ns + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				return nil, err
			}
			body, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				return nil, err
			}
			var row struct {
				Name       string
				Attributes struct{ Version string }
			}
			if err := json.Unmarshal(body, &row); err != nil {
				return nil, fmt.Errorf("%s: %w", aws.ToString(o.Key), err)
			}
			if _, dup := got[row.Name]; dup {
				return nil, fmt.Errorf("two objects for %s", row.Name)
			}
			got[row.Name] = row.Attributes.Version
		}
	}
	return got, nil
}
