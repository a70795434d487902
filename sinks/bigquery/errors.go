package bigquery

import (
	"errors"
	"fmt"
	"net/http"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"

	"kollect.dev/kollect/sinks"
)

// classify turns a client error into a message that says what to fix,
// marked permanent when retrying cannot help.
func (s *Sink) classify(op string, err error) error { return classify(s.cfg, op, err) }

// classify is Sink.classify for any sink of cfg's table.
func classify(cfg Config, op string, err error) error {
	if errors.Is(err, sinks.ErrPermanent) {
		return err
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusUnauthorized:
			return sinks.Permanent(fmt.Errorf("bigquery %s: the credentials were refused; check credentials.json in the Secret (or the workload identity) (%s)", op, shorten(ge.Message)))
		case http.StatusForbidden:
			if reason(ge) == "rateLimitExceeded" || reason(ge) == "quotaExceeded" {
				return fmt.Errorf("bigquery %s: over quota, retried later (%s)", op, ge.Message)
			}
			return sinks.Permanent(fmt.Errorf("bigquery %s: permission denied; grant the service account roles/bigquery.dataEditor on dataset %s and roles/bigquery.jobUser on project %s (%s)",
				op, cfg.Dataset, cfg.Project, ge.Message))
		}
	}
	var be *bigquery.Error
	if errors.As(err, &be) && (be.Reason == "invalidQuery" || be.Reason == "invalid") {
		return sinks.Permanent(fmt.Errorf("bigquery %s: %s (does the table have the columns docs/sinks.md lists for the BigQuery sink?)", op, be.Message))
	}
	if terr := sinks.Transport("bigquery", op, "the API host", err.Error(), err); terr != nil {
		return terr
	}
	return fmt.Errorf("bigquery %s: %w", op, err)
}

func reason(ge *googleapi.Error) string {
	if len(ge.Errors) > 0 {
		return ge.Errors[0].Reason
	}
	return ""
}

// shorten keeps a server's message from filling a condition.
func shorten(msg string) string {
	if len(msg) > 120 {
		return msg[:120] + "…"
	}
	return msg
}
