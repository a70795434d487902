package objectstore

import (
	"context"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
)

// gcsKeyKeys hold a service-account key (JSON), first non-empty wins.
var gcsKeyKeys = []string{"credentials.json", "serviceAccountKey", "key.json"}

// OpenGCS opens a bucket through the native GCS JSON API: at e.BaseURL
// when set (an emulator, a private endpoint), else Google's. It
// authenticates with a service-account key from the Secret, else with
// Application Default Credentials; a custom endpoint without a key is
// used unauthenticated (an emulator). Every request, token requests
// included, goes through hc.
func OpenGCS(ctx context.Context, e Endpoint, data map[string][]byte, hc *http.Client) (*blob.Bucket, error) {
	tokenCtx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	var source oauth2.TokenSource
	switch key := first(data, gcsKeyKeys...); {
	case key != "":
		creds, err := google.CredentialsFromJSON(tokenCtx, []byte(key), storage.ScopeReadWrite) //nolint:staticcheck // the key is the sink's own
		if err != nil {
			return nil, fmt.Errorf("the Secret's service-account key does not parse: %v", redactKey(err))
		}
		source = creds.TokenSource
	case e.BaseURL == "":
		creds, err := google.FindDefaultCredentials(tokenCtx, storage.ScopeReadWrite)
		if err != nil {
			return nil, fmt.Errorf("no service-account key in the Secret (credentials.json) and no Application Default Credentials: %w", err)
		}
		source = creds.TokenSource
	}
	client := hc
	if source != nil {
		client = &http.Client{Transport: &oauth2.Transport{Source: source, Base: hc.Transport}, Timeout: hc.Timeout}
	}
	opts := []option.ClientOption{option.WithHTTPClient(client)}
	if e.BaseURL != "" {
		opts = append(opts, option.WithEndpoint(e.BaseURL+"/storage/v1/"))
	}
	sc, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, err
	}
	// The sink's binding retries with its own back-off and circuit
	// breaker: a few quick attempts here, not a wait until the deadline.
	sc.SetRetry(storage.WithMaxAttempts(3))
	return gcsblob.OpenBucket(ctx, nil, e.Bucket, &gcsblob.Options{Client: sc})
}

// redactKey keeps a key parse error from quoting the key.
func redactKey(err error) string {
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return msg
}
