package informers

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"strings"
	"sync"
)

// dictMax is flate's window: a longer dictionary is never referenced.
const dictMax = 32 << 10

// codec compresses the cached JSON of one informer generation with a
// preset dictionary: the JSON of the first object it encodes. Objects of
// one kind share their field names and most of their metadata, so each
// compresses to what makes it differ (its name, UID, resourceVersion and
// values): a projected ConfigMap of 227 bytes to about 70. It is safe for
// concurrent use.
//
// Compressors (about a megabyte each) and decompressors are pooled, so an
// informer that is quiet holds none of them after two garbage collections.
type codec struct {
	mu   sync.Mutex
	dict []byte // set by the first encode, then never changed

	writers sync.Pool // of *writer
	readers sync.Pool // of *reader
}

// writer is a compressor and the buffer it writes to, reused.
type writer struct {
	w   *flate.Writer
	out bytes.Buffer
}

// reader is a decompressor and the buffer it decodes into, reused.
type reader struct {
	r   io.ReadCloser
	buf bytes.Buffer
}

// dictionary returns the dictionary, raw's first bytes when there is none
// yet.
func (c *codec) dictionary(raw []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dict == nil {
		c.dict = bytes.Clone(raw[:min(len(raw), dictMax)])
	}
	return c.dict
}

// encode returns raw compressed, in a string of its own (16 bytes of
// header, not a slice's 24).
func (c *codec) encode(raw []byte) (string, error) {
	dict := c.dictionary(raw)
	wr, _ := c.writers.Get().(*writer)
	if wr == nil {
		wr = &writer{}
		w, err := flate.NewWriterDict(&wr.out, flate.DefaultCompression, dict)
		if err != nil {
			return "", fmt.Errorf("start the cache's compressor: %w", err)
		}
		wr.w = w
	} else {
		wr.out.Reset()
		wr.w.Reset(&wr.out) // keeps the dictionary
	}
	defer c.writers.Put(wr)
	if _, err := wr.w.Write(raw); err != nil {
		return "", fmt.Errorf("compress: %w", err)
	}
	if err := wr.w.Close(); err != nil {
		return "", fmt.Errorf("compress: %w", err)
	}
	return wr.out.String(), nil
}

// decode decompresses z and hands the JSON to use, which must not keep it.
func (c *codec) decode(z string, use func([]byte) error) error {
	dict := c.dictionary(nil)
	rd, _ := c.readers.Get().(*reader)
	if rd == nil {
		rd = &reader{r: flate.NewReaderDict(strings.NewReader(z), dict)}
	} else if err := rd.r.(flate.Resetter).Reset(strings.NewReader(z), dict); err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	defer c.readers.Put(rd)
	rd.buf.Reset()
	if _, err := rd.buf.ReadFrom(rd.r); err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	return use(rd.buf.Bytes())
}
