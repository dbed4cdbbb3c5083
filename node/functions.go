package node

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The scripts that share guard.lua (and queue.lua) are also one Redis
// Functions library: loaded once per node, its shared definitions run once
// at load instead of at every call, and it outlives restarts (RDB, AOF) and
// failovers (FUNCTION LOAD replicates), where the script cache does not.
// A node without Functions (Redis < 7) or whose user may not load them is
// sent EVALSHA, as before. Why and what it saves: docs/performance.md
// (Script cost).

// libScripts are the scripts of the library, in the order they were made.
var libScripts []*luaScript

// newLibScript is a script of the library named name: prelude (guard.lua,
// queue.lua) then body, as EVAL runs it; in the library, the prelude once
// and body as function name.
func newLibScript(name string, timed bool, body string, prelude ...string) *luaScript {
	s := newScript(strings.Join(prelude, "") + body)
	s.timed, s.body = timed, body
	s.fn = name // made whole (versioned) by functionLib
	libScripts = append(libScripts, s)
	return s
}

// perCall are the prelude's variables that hold one call's state (see the
// top of guard.lua): a function resets them before its body runs, since
// the library's locals live as long as it is loaded.
var perCall = []string{"node_time", "node_ms", "node_longest", "node_facts", "probing"}

type functionLibrary struct {
	name, source string
}

var (
	libOnce sync.Once
	lib     functionLibrary
)

// functionLib builds the library once, after every script was made: its
// name and its functions' names carry a hash of its source, so that
// clients of different versions each call their own.
func functionLib() functionLibrary {
	libOnce.Do(func() {
		slices.SortFunc(libScripts, func(a, b *luaScript) int { return strings.Compare(a.fn, b.fn) })
		var code strings.Builder
		code.WriteString("local KEYS, ARGV\n" + guardSource + queueSource)
		code.WriteString("\nlocal function called(keys, args)\n  KEYS, ARGV = keys, args\n")
		for _, name := range perCall {
			fmt.Fprintf(&code, "  %s = %s\n", name, map[bool]string{true: "false", false: "nil"}[name == "probing"])
		}
		code.WriteString("end\n")
		for _, s := range libScripts {
			fmt.Fprintf(&code, "\nlocal function %s_body()\n%s\nend\n", s.fn, s.body)
		}
		sum := sha1.Sum([]byte(code.String()))
		version := hex.EncodeToString(sum[:])[:12]
		lib.name = "redlock_" + version
		for _, s := range libScripts {
			body := s.fn
			s.fn = "redlock_" + version + "_" + body
			fmt.Fprintf(&code, "redis.register_function('%s', function(keys, args) called(keys, args) return %s_body() end)\n",
				s.fn, body)
		}
		lib.source = "#!lua name=" + lib.name + "\n" + code.String()
	})
	return lib
}

// The library's state on a node (batcher.library).
const (
	libUnknown = iota // not asked yet, or a call found it missing
	libAbsent         // not there: the next pipeline loads it
	libLoaded         // there: FCALL
	libRefused        // no Functions here, or the user may not load them: EVALSHA
)

// functionCaller is what FCALL needs of a client; every go-redis client
// has it, a Client that lacks it gets EVALSHA.
type functionCaller interface {
	FCall(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd
}

// useLibrary reports whether p goes as FCALL.
func (b *batcher) useLibrary(p *pending) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.library == libLoaded && p.script.fn != ""
}

// askLibrary adds to pipe what the node's library state calls for (asking
// whether it is there, or loading it), and returns what to do with the
// answer once pipe is back.
func (b *batcher) askLibrary(ctx context.Context, pipe redis.Pipeliner) func() {
	b.mu.Lock()
	state := b.library
	b.mu.Unlock()
	l := functionLib()
	switch state {
	case libUnknown:
		list := pipe.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: l.name})
		return func() { b.learnLibrary(listed(list, l.name)) }
	case libAbsent:
		load := pipe.FunctionLoad(ctx, l.source)
		return func() { b.learnLibrary(loaded(load.Err())) }
	}
	return func() {}
}

// listed is the state FUNCTION LIST's answer says.
func listed(list *redis.FunctionListCmd, name string) int {
	if err := list.Err(); err != nil {
		if isRedisError(err) {
			return libRefused
		}
		return libUnknown
	}
	for _, l := range list.Val() {
		if l.Name == name {
			return libLoaded
		}
	}
	return libAbsent
}

// loaded is the state FUNCTION LOAD's answer says.
func loaded(err error) int {
	switch {
	case err == nil || (isRedisError(err) && strings.Contains(err.Error(), "already exists")):
		return libLoaded
	case isRedisError(err):
		return libRefused
	}
	return libUnknown
}

func (b *batcher) learnLibrary(state int) {
	b.mu.Lock()
	b.library = state
	b.mu.Unlock()
}

// ensureLibrary, on a Cluster or Ring member, asks every master shard for
// the library and loads it where it is missing, best effort (as
// loadEverywhere): a shard that missed it answers "function not found" and
// gets EVAL, and the next call asks again.
func (b *batcher) ensureLibrary(ctx context.Context) {
	b.mu.Lock()
	state := b.library
	b.mu.Unlock()
	if state == libLoaded || state == libRefused {
		return
	}
	var mu sync.Mutex
	result := libLoaded
	ensure := func(ctx context.Context, shard *redis.Client) error {
		if shardLibrary(ctx, shard) == libRefused {
			mu.Lock()
			result = libRefused
			mu.Unlock()
		}
		return nil
	}
	switch c := b.client.(type) {
	case *redis.ClusterClient:
		_ = c.ForEachMaster(ctx, ensure)
	case *redis.Ring:
		_ = c.ForEachShard(ctx, ensure)
	}
	b.learnLibrary(result)
}

// shardLibrary asks one shard for the library, loads it when it is not
// there, and returns the shard's state.
func shardLibrary(ctx context.Context, shard *redis.Client) int {
	l := functionLib()
	state := listed(shard.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: l.name}), l.name)
	if state == libAbsent {
		state = loaded(shard.FunctionLoad(ctx, l.source).Err())
	}
	return state
}

// functionMissing: an FCALL the node did not run, its library gone
// (FUNCTION FLUSH or DELETE, a restart without persistence, a shard that
// never had it).
func functionMissing(err error) bool {
	return err != nil && isRedisError(err) && strings.Contains(strings.ToLower(err.Error()), "function not found")
}

// uncached: a call that did not run because the node lacks its script or
// its function; it is run again by EVAL.
func uncached(err error) bool {
	return redis.HasErrorPrefix(err, "NOSCRIPT") || functionMissing(err)
}
