package objectstore_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"kollect.dev/kollect/sinks"
	"kollect.dev/kollect/sinks/objectstore"
	"kollect.dev/kollect/sinks/objectstore/azuretest"
	"kollect.dev/kollect/sinks/sinktest"
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
