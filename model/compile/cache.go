package compile

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/extract"
)

// cacheLimit bounds the profiles a Cache remembers. Past it the cache
// starts again empty: a profile costs one compile more, never a wrong
// extractor.
const cacheLimit = 4096

// Cache compiles targets like Compile and ClusterTarget, reusing what it
// compiled from a profile version: the attributes' CEL and JSONPath
// programs are compiled once per profile version, not at every reconcile
// of every target that reads it (the periodic resync, a namespace that
// moved, a scope edit). An Extractor is safe to share: evaluating keeps no
// state in it. The zero value is ready to use.
type Cache struct {
	mu        sync.Mutex
	byProfile map[types.UID]compiledProfile
}

// compiledProfile is the outcome of compiling one profile version.
type compiledProfile struct {
	version string // the profile's resourceVersion and the defaults' scrub keys
	ex      *extract.Extractor
	err     error
}

// Compile is Compile with the profile's part reused when the profile's
// version was compiled before.
func (c *Cache) Compile(t *kollectv1alpha1.KollectTarget, p *kollectv1alpha1.KollectProfile, d Defaults) (*Compiled, error) {
	return compileWith(t, p, d, c.extractor)
}

// ClusterTarget is ClusterTarget with the profile's part reused likewise.
func (c *Cache) ClusterTarget(ct *kollectv1alpha1.KollectClusterTarget, p *kollectv1alpha1.KollectProfile, d Defaults) (*Compiled, error) {
	return compileWith(asTarget(ct), p, d, c.extractor)
}

func (c *Cache) extractor(p *kollectv1alpha1.KollectProfile, d Defaults) (*extract.Extractor, error) {
	if p.UID == "" || p.ResourceVersion == "" {
		return extractorOf(p, d) // not read from the API server: nothing names its version
	}
	version := p.ResourceVersion + "\x00" + strings.Join(d.ScrubKeys, "\x00")
	c.mu.Lock()
	got, ok := c.byProfile[p.UID]
	c.mu.Unlock()
	if ok && got.version == version {
		return got.ex, got.err
	}
	ex, err := extractorOf(p, d)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byProfile == nil || len(c.byProfile) >= cacheLimit {
		c.byProfile = map[types.UID]compiledProfile{}
	}
	c.byProfile[p.UID] = compiledProfile{version: version, ex: ex, err: err}
	return ex, err
}
