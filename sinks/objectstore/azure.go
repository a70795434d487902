package objectstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
)

// Azure credential keys, first non-empty wins.
var (
	azureConnKeys    = []string{"connectionString", "AZURE_STORAGE_CONNECTION_STRING"}
	azureAccountKeys = []string{"accountName", "AZURE_STORAGE_ACCOUNT"}
	azureKeyKeys     = []string{"accountKey", "AZURE_STORAGE_KEY"}
	azureSASKeys     = []string{"sasToken", "AZURE_STORAGE_SAS_TOKEN"}
)

// AzureTarget is where an azureblob sink writes.
type AzureTarget struct {
	// ContainerURL is the container's URL (without a SAS).
	ContainerURL string
	Container    string
	Prefix       string
	Account      string
}

// ParseAzure reads the azureblob endpoint forms:
// azblob://container[/prefix] (the account's public endpoint, the account
// named by the Secret), https://<account>.blob.core.windows.net/container[/prefix],
// or a path-style endpoint such as Azurite's
// http://127.0.0.1:10000/<account>/container[/prefix].
func ParseAzure(raw string, data map[string][]byte) (AzureTarget, error) {
	account := first(data, azureAccountKeys...)
	if cs := first(data, azureConnKeys...); cs != "" && account == "" {
		account = connField(cs, "AccountName")
	}
	var t AzureTarget
	scheme, rest, ok := strings.Cut(strings.TrimSpace(raw), "://")
	switch {
	case !ok:
		return t, fmt.Errorf("spec.endpoint %q: want azblob://container/prefix or https://<account>.blob.core.windows.net/container/prefix", raw)
	case scheme == "azblob":
		if account == "" {
			return t, errors.New("an azblob:// endpoint needs the account: set accountName (or a connection string) in the Secret")
		}
		t.Account = account
		t.Container, t.Prefix, _ = strings.Cut(strings.Trim(rest, "/"), "/")
		t.ContainerURL = "https://" + account + ".blob.core.windows.net/" + t.Container
	case scheme == "https" || scheme == "http":
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" {
			return t, fmt.Errorf("spec.endpoint %q: want https://<account>.blob.core.windows.net/container/prefix (a SAS goes in the Secret)", raw)
		}
		segs := strings.Split(strings.Trim(u.Path, "/"), "/")
		host := u.Hostname()
		if label, _, _ := strings.Cut(host, "."); strings.Contains(host, ".blob.") && label != "" {
			t.Account = label // virtual-host style: the account is the host's first label
		} else {
			if len(segs) < 2 {
				return t, fmt.Errorf("spec.endpoint %q: a path-style endpoint names the account, then the container", raw)
			}
			t.Account, segs = segs[0], segs[1:] // path-style (Azurite, private endpoints by IP)
		}
		t.Container = segs[0]
		t.Prefix = strings.Join(segs[1:], "/")
		base := u.Scheme + "://" + u.Host
		if !strings.Contains(host, ".blob.") {
			base += "/" + t.Account
		}
		t.ContainerURL = base + "/" + t.Container
	default:
		return t, fmt.Errorf("spec.endpoint %q: scheme %s:// is not one an azureblob sink reads (azblob://, https://)", raw, scheme)
	}
	if t.Container == "" {
		return t, fmt.Errorf("spec.endpoint %q names no container", raw)
	}
	return t, nil
}

// connField reads one field of an Azure connection string.
func connField(cs, name string) string {
	for _, part := range strings.Split(cs, ";") {
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// OpenAzure opens a container with an account key, a SAS or a connection
// string from the Secret; every request goes through hc. It returns the
// credential values to redact from errors.
func OpenAzure(ctx context.Context, t AzureTarget, data map[string][]byte, hc *http.Client) (*blob.Bucket, []string, error) {
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: hc, Retry: policy.RetryOptions{MaxRetries: 2}}}
	var c *container.Client
	var err error
	var redact []string
	switch {
	case first(data, azureKeyKeys...) != "":
		key := first(data, azureKeyKeys...)
		cred, cerr := azblob.NewSharedKeyCredential(t.Account, key)
		if cerr != nil {
			return nil, nil, fmt.Errorf("the Secret's accountKey is not a storage account key: %w", cerr)
		}
		c, err = container.NewClientWithSharedKeyCredential(t.ContainerURL, cred, opts)
		redact = []string{key}
	case first(data, azureSASKeys...) != "":
		sas := strings.TrimPrefix(first(data, azureSASKeys...), "?")
		c, err = container.NewClientWithNoCredential(t.ContainerURL+"?"+sas, opts)
		redact = []string{sas}
	case first(data, azureConnKeys...) != "":
		cs := first(data, azureConnKeys...)
		c, err = container.NewClientFromConnectionString(cs, t.Container, opts)
		redact = []string{connField(cs, "AccountKey"), connField(cs, "SharedAccessSignature")}
	default:
		return nil, nil, errors.New("an azureblob sink needs credentials in its Secret: accountKey (with accountName), sasToken, or connectionString")
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := azureblob.OpenBucket(ctx, c, nil)
	return b, redact, err
}
