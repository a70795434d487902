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

	"kollect.dev/kollect/internal/servers/kafkatest"
	"kollect.dev/kollect/internal/servers/natstest"
)

// state is object name → the version its row holds. A name a sink holds
// twice is kept a second time under dupPrefix (see add).
type state map[string]string

const dupPrefix = "\x00dup:"

// add records that a sink holds object n at version v; a second row of
// one object is a duplicate, which tally counts.
func (s state) add(n, v string) {
	if _, seen := s[n]; seen {
		s[dupPrefix+n] = v
		return
	}
	s[n] = v
}

// tally counts how got differs from want: rows of live objects missing
// (lost), at another version (wrong), rows of no object (orphans), and
// objects held twice (duplicates).
type tally struct {
	lost, wrong, orphans, dups []string
}

func (s state) tally(got state) tally {
	var t tally
	for n, v := range s {
		switch g, ok := got[n]; {
		case !ok:
			t.lost = append(t.lost, n)
		case g != v:
			t.wrong = append(t.wrong, n+"="+g)
		}
	}
	for n := range got {
		if d, ok := strings.CutPrefix(n, dupPrefix); ok {
			t.dups = append(t.dups, d)
		} else if _, live := s[n]; !live {
			t.orphans = append(t.orphans, n)
		}
	}
	return t
}

func (t tally) zero() bool { return len(t.lost)+len(t.wrong)+len(t.orphans)+len(t.dups) == 0 }

// diff describes how got differs from s, the state wanted ("" when equal).
func (s state) diff(got state) string {
	t := s.tally(got)
	if t.zero() {
		return ""
	}
	first := func(s []string) []string { return s[:min(len(s), 3)] }
	return fmt.Sprintf("%d missing %v, %d stale %v, %d extra %v, %d duplicated %v", len(t.lost), first(t.lost), len(t.wrong), first(t.wrong),
		len(t.orphans), first(t.orphans), len(t.dups), first(t.dups))
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
		got.add(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), attrs.Version)
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
		got.add(n, v)
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

// fold replays a stream: the live rows, key by key. Two live keys of one
// object are a duplicate.
func fold(ms []message) state {
	type row struct{ name, version string }
	live := map[string]row{}
	for _, m := range ms {
		switch m.Change {
		case "upsert":
			live[m.Key] = row{m.Row.Name, m.Row.Attributes["version"]}
		case "delete":
			delete(live, m.Key)
		}
	}
	st := state{}
	for _, r := range live {
		st.add(r.name, r.version)
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
	gcs, azure     state
	gitlab, mongo  state
	bigquery       state
	// versions changes, per backend of the five above, whenever it writes
	// anything for the inventory.
	versions map[string]string
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
	if err := r.readFive(ctx, h); err != nil {
		return nil, err
	}
	return h, nil
}

// states is what each sink holds, by sink.
func (h *history) states() map[string]state {
	return map[string]state{"git": h.git, "gitlab": h.gitlab, "s3": h.s3, "gcs": h.gcs, "azure": h.azure,
		"postgres": h.pg, "mongodb": h.mongo, "bigquery": h.bigquery, "nats": h.natsSt, "kafka": h.kafkSt}
}

// converged reports whether every sink holds exactly want.
func (h *history) converged(want state) error {
	for _, name := range sinkNames {
		if d := want.diff(h.states()[name]); d != "" {
			return fmt.Errorf("%s: %s", name, d)
		}
	}
	return nil
}

// sinkNames are the rig's sinks, in report order.
var sinkNames = []string{"git", "gitlab", "s3", "gcs", "azure", "postgres", "mongodb", "bigquery", "nats", "kafka"}

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
			got.add(row.Name, row.Attributes.Version)
		}
	}
	return got, nil
}
