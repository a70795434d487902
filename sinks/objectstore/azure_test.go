//go:build integration

package objectstore_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"kollect.dev/kollect/internal/servers/azuretest"
	"kollect.dev/kollect/internal/sinktest"
	"kollect.dev/kollect/model/rows"
	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/objectstore"
)

// TestAzureConformance runs the sink conformance suite against Azurite
// (the Azure Blob API) with the account key, for JSON documents and
// Parquet.
func TestAzureConformance(t *testing.T) {
	srv := azuretest.Start(t)
	client, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []config{configs[0], configs[3]} {
		t.Run(c.name, func(t *testing.T) {
			ctr := "az-" + sanitize(c.name)
			if err := srv.CreateContainer(context.Background(), ctr); err != nil {
				t.Fatal(err)
			}
			get := func(t *testing.T, key string) ([]byte, string, bool) {
				resp, err := client.DownloadStream(context.Background(), ctr, key, nil)
				if err != nil {
					if strings.Contains(err.Error(), "BlobNotFound") {
						return nil, "", false
					}
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				enc := ""
				if resp.ContentEncoding != nil {
					enc = *resp.ContentEncoding
				}
				return b, enc, true
			}
			creds := map[string][]byte{"accountName": []byte(azuretest.Account), "accountKey": []byte(azuretest.Key)}
			sinktest.Run(t, harness(c, get, func(t *testing.T) *objectstore.Config {
				target, err := objectstore.ParseAzure(srv.URL+"/"+azuretest.Account+"/"+ctr, creds)
				if err != nil {
					t.Fatal(err)
				}
				hc, err := sinks.HTTPClient(nil, nil, false)
				if err != nil {
					t.Fatal(err)
				}
				b, redact, err := objectstore.OpenAzure(context.Background(), target, creds, hc)
				if err != nil {
					t.Fatal(err)
				}
				return &objectstore.Config{Bucket: b, Name: target.ContainerURL, Redact: redact}
			}, srv))
		})
	}
}

func TestParseAzure(t *testing.T) {
	key := map[string][]byte{"accountName": []byte("acme")}
	cs := map[string][]byte{"connectionString": []byte("DefaultEndpointsProtocol=https;AccountName=fromcs;AccountKey=x;EndpointSuffix=core.windows.net")}
	cases := []struct {
		raw                     string
		data                    map[string][]byte
		url, ctr, prefix, words string
	}{
		{"azblob://inventory/fleet/a", key, "https://acme.blob.core.windows.net/inventory", "inventory", "fleet/a", ""},
		{"azblob://inventory", cs, "https://fromcs.blob.core.windows.net/inventory", "inventory", "", ""},
		{"https://acme.blob.core.windows.net/inv/p", nil, "https://acme.blob.core.windows.net/inv", "inv", "p", ""},
		{"http://127.0.0.1:10000/devstoreaccount1/inv/p/q", nil, "http://127.0.0.1:10000/devstoreaccount1/inv", "inv", "p/q", ""},
		{"azblob://inventory", nil, "", "", "", "needs the account"},
		{"https://acme.blob.core.windows.net/inv?sv=2020&sig=x", nil, "", "", "", "a SAS goes in the Secret"},
		{"s3://bucket", nil, "", "", "", "scheme s3://"},
	}
	for _, c := range cases {
		got, err := objectstore.ParseAzure(c.raw, c.data)
		if c.words != "" {
			if err == nil || !strings.Contains(err.Error(), c.words) {
				t.Errorf("%s: error %v, want %q", c.raw, err, c.words)
			}
			continue
		}
		if err != nil || got.ContainerURL != c.url || got.Container != c.ctr || got.Prefix != c.prefix {
			t.Errorf("%s: %+v %v", c.raw, got, err)
		}
	}
}

// The other two credential forms: a connection string (Azurite's, with
// its BlobEndpoint) and a SAS for the container. Each exports and reads
// back.
func TestAzureConnectionStringAndSAS(t *testing.T) {
	srv := azuretest.Start(t)
	ctx := context.Background()
	if err := srv.CreateContainer(ctx, "forms"); err != nil {
		t.Fatal(err)
	}
	cs := "DefaultEndpointsProtocol=http;AccountName=" + azuretest.Account + ";AccountKey=" + azuretest.Key +
		";BlobEndpoint=" + srv.URL + "/" + azuretest.Account + ";"
	cred, err := azblob.NewSharedKeyCredential(azuretest.Account, azuretest.Key)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := container.NewClientWithSharedKeyCredential(srv.URL+"/"+azuretest.Account+"/forms", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	sasURL, err := cc.GetSASURL(sas.ContainerPermissions{Read: true, Write: true, Delete: true, List: true, Create: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, query, _ := strings.Cut(sasURL, "?")
	for name, creds := range map[string]map[string][]byte{
		"connection-string": {"connectionString": []byte(cs)},
		"sas":               {"sasToken": []byte(query)},
	} {
		t.Run(name, func(t *testing.T) {
			target, err := objectstore.ParseAzure(srv.URL+"/"+azuretest.Account+"/forms/"+name, creds)
			if err != nil {
				t.Fatal(err)
			}
			hc, _ := sinks.HTTPClient(nil, nil, false)
			b, redact, err := objectstore.OpenAzure(ctx, target, creds, hc)
			if err != nil {
				t.Fatal(err)
			}
			st, err := objectstore.New(objectstore.Config{Bucket: b, Prefix: target.Prefix, Redact: redact})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Probe(ctx); err != nil {
				t.Fatalf("probe: %v", err)
			}
			id := rows.Identity{Namespace: "ops", Name: "inv"}
			if _, err := st.Export(ctx, sinktest.Snap(id, sinktest.Rows(3, "1"))); err != nil {
				t.Fatal(err)
			}
			resp, err := cc.NewBlobClient(name+"/inventory/ops/inv.json").DownloadStream(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"itemCount":3`) {
				t.Fatalf("object: %s", body)
			}
		})
	}
}
