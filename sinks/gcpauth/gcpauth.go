package gcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"kollect.dev/kollect/sinks"
)

// Source is where a sink's token source comes from.
type Source struct {
	// Key is the JSON of a service-account key (the Secret's
	// credentials.json), or nil.
	Key []byte
	// Ambient allows Application Default Credentials when Key is nil.
	Ambient bool
}

// TokenSource returns a token source for scopes. Every token request goes
// through hc (the caller's guarded client). A key that is not a
// service-account key is refused before anything is read or sent; so is a
// missing key unless src.Ambient.
func TokenSource(ctx context.Context, hc *http.Client, src Source, scopes ...string) (oauth2.TokenSource, error) {
	tokenCtx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, hc)
	if len(src.Key) > 0 {
		if err := CheckKey(src.Key); err != nil {
			return nil, err
		}
		creds, err := google.CredentialsFromJSONWithType(tokenCtx, src.Key, google.ServiceAccount, scopes...)
		if err != nil {
			return nil, fmt.Errorf("credentials.json is not a usable service-account key: %s", shorten(err.Error()))
		}
		return creds.TokenSource, nil
	}
	if !src.Ambient {
		return nil, sinks.AmbientRefused("service-account key (credentials.json)")
	}
	creds, err := google.FindDefaultCredentials(tokenCtx, scopes...)
	if err != nil {
		return nil, fmt.Errorf("no service-account key in the Secret (credentials.json) and no Application Default Credentials: %w", err)
	}
	return creds.TokenSource, nil
}

// CheckKey refuses any JSON key whose type is not service_account, naming
// the type it found but quoting nothing else of the key.
func CheckKey(key []byte) error {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(key, &head); err != nil {
		return errors.New("credentials.json is not JSON: put a service-account key (type service_account) in the Secret")
	}
	if head.Type != string(google.ServiceAccount) {
		return fmt.Errorf("credentials.json holds a key of type %q: a sink accepts only a service-account key (type %q); "+
			"external_account, impersonated and user credentials are refused because they make the operator read local files or call endpoints the key names",
			shorten(head.Type), google.ServiceAccount)
	}
	return nil
}

// shorten keeps an error from quoting much of a key.
func shorten(msg string) string {
	if len(msg) > 120 {
		return msg[:120] + "…"
	}
	return msg
}
