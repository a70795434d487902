package objectstore

import (
	"context"
	"net/http"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"

	"kollect.dev/kollect/sinks/gcpauth"
)

// gcsKeyKeys hold a service-account key (JSON), first non-empty wins.
var gcsKeyKeys = []string{"credentials.json", "serviceAccountKey", "key.json"}

// OpenGCS opens a bucket through the native GCS JSON API: at e.BaseURL
// when set (an emulator, a private endpoint), else Google's. It
// authenticates with a service-account key from the Secret (no other key
// type: see gcpauth), else, when ambient allows, with Application Default
// Credentials; a custom endpoint without a key is used unauthenticated
// (an emulator). Every request, token requests included, goes through hc.
func OpenGCS(ctx context.Context, e Endpoint, data map[string][]byte, ambient bool, hc *http.Client) (*blob.Bucket, error) {
	var source oauth2.TokenSource
	if key := first(data, gcsKeyKeys...); key != "" || e.BaseURL == "" {
		var err error
		if source, err = gcpauth.TokenSource(ctx, hc, gcpauth.Source{Key: []byte(key), Ambient: ambient}, storage.ScopeReadWrite); err != nil {
			return nil, err
		}
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
