package engine

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ClusterScheme marks a URL of a Redis Cluster member: redis+cluster://
// or rediss+cluster:// (then as go-redis's ParseClusterURL reads it).
const ClusterScheme = "+cluster"

// DialNode makes the client of one of Dial's URLs: a Redis Cluster client
// for redis+cluster:// or rediss+cluster:// (seed nodes: the host and each
// addr=), a Sentinel failover client when the query names a master
// (master_name=, the form of go-redis's ParseFailoverURL), else a client
// of that one node. Each gets dialOptions.
func DialNode(raw string, resolved core.Settings) (redis.UniversalClient, error) {
	parsed, err := url.Parse(raw)
	if err == nil && strings.HasSuffix(parsed.Scheme, ClusterScheme) {
		return dialCluster(parsed, resolved)
	}
	if err != nil || !parsed.Query().Has("master_name") {
		options, err := redis.ParseURL(raw)
		if err != nil {
			return nil, err
		}
		dialOptions(options, resolved)
		return redis.NewClient(options), nil
	}
	f, err := redis.ParseFailoverURL(raw)
	if err != nil {
		return nil, err
	}
	if f.MasterName == "" {
		return nil, fmt.Errorf("master_name is empty")
	}
	// The same choices as a node's client, made in one place: dialOptions.
	o := &redis.Options{TLSConfig: f.TLSConfig, PoolSize: f.PoolSize, PipelinePoolSize: f.PipelinePoolSize,
		DialTimeout: f.DialTimeout, ReadTimeout: f.ReadTimeout, WriteTimeout: f.WriteTimeout}
	dialOptions(o, resolved)
	f.TLSConfig, f.PoolSize, f.PipelinePoolSize = o.TLSConfig, o.PoolSize, o.PipelinePoolSize
	f.DialTimeout, f.ReadTimeout, f.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
	f.ContextTimeoutEnabled, f.DialerRetries, f.MaxRetries = o.ContextTimeoutEnabled, o.DialerRetries, o.MaxRetries
	return redis.NewFailoverClient(f), nil
}

// dialCluster makes the client of a redis+cluster:// URL.
func dialCluster(parsed *url.URL, resolved core.Settings) (redis.UniversalClient, error) {
	plain := *parsed
	plain.Scheme = strings.TrimSuffix(parsed.Scheme, ClusterScheme)
	c, err := redis.ParseClusterURL(plain.String())
	if err != nil {
		return nil, err
	}
	o := &redis.Options{TLSConfig: c.TLSConfig, PoolSize: c.PoolSize, PipelinePoolSize: c.PipelinePoolSize,
		DialTimeout: c.DialTimeout, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout}
	dialOptions(o, resolved)
	c.TLSConfig, c.PoolSize, c.PipelinePoolSize = o.TLSConfig, o.PoolSize, o.PipelinePoolSize
	c.DialTimeout, c.ReadTimeout, c.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
	c.ContextTimeoutEnabled, c.DialerRetries, c.MaxRetries = o.ContextTimeoutEnabled, o.DialerRetries, o.MaxRetries
	return redis.NewClusterClient(c), nil
}

// dialOptions sets what Dial decides for every client it makes, over what
// the URL said.
func dialOptions(options *redis.Options, resolved core.Settings) {
	if options.TLSConfig != nil && resolved.TLS != nil {
		serverName := options.TLSConfig.ServerName
		options.TLSConfig = resolved.TLS.Clone()
		if options.TLSConfig.ServerName == "" {
			options.TLSConfig.ServerName = serverName
		}
	}
	options.ContextTimeoutEnabled = true
	if options.MaintNotificationsConfig == nil {
		// Probing for them (Redis 8) only adds noise on servers without them.
		options.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	}
	// One dial per call: the lock retries on its own schedule, and a
	// dead node must fail its call at once, not after go-redis's
	// dial backoff has eaten the node timeout.
	options.DialerRetries = 1
	// No command retries either: a retried acquire is a second copy
	// on another connection, and the first may still arrive after the
	// release (see release.lua's tombstones); the lock retries itself.
	options.MaxRetries = -1
	if options.PoolSize == 0 { // no pool_size in the URL
		options.PoolSize = dialPoolSize
		options.PipelinePoolSize = -1 // pipelines share that pool
	}
	if timeout := resolved.NodeTimeout; timeout > 0 {
		options.DialTimeout = timeout
		options.ReadTimeout = timeout
		options.WriteTimeout = timeout
	}
}

// dialPoolSize is the connection pool of each client Dial makes. The Client
// pipelines its calls to a node (one pipeline in flight at a time), so a
// few connections serve it; and go-redis logs each failed dial until as
// many dials as the pool size have failed, then probes the node quietly
// once a second: a small pool keeps a dead node to a few lines of log.
const dialPoolSize = 4
