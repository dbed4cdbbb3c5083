package node

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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

// newCrossSlotScript is newLibScript whose function may touch keys of
// several slots of the shard it runs on (allow-cross-slot-keys, Redis 7+);
// as EVAL, a script without flags may already.
func newCrossSlotScript(name string, timed bool, body string, prelude ...string) *luaScript {
	s := newLibScript(name, timed, body, prelude...)
	s.crossSlot = true
	return s
}

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
		code.WriteString("\nheads = {} -- marker.lua's parses, kept while the library is loaded\n")
		// Each call starts as an EVAL script does: its keys and arguments,
		// and the prelude's state reset (new_call in guard.lua).
		code.WriteString("\nlocal function called(keys, args)\n  KEYS, ARGV = keys, args\n  new_call()\nend\n")
		for _, s := range libScripts {
			fmt.Fprintf(&code, "\nlocal function %s_body()\n%s\nend\n", s.fn, s.body)
		}
		sum := sha1.Sum([]byte(code.String()))
		version := hex.EncodeToString(sum[:])[:12]
		lib.name = "redlock_" + version
		for _, s := range libScripts {
			body := s.fn
			s.fn = "redlock_" + version + "_" + body
			flags := ""
			if s.crossSlot {
				flags = ", flags = {'allow-cross-slot-keys'}"
			}
			fmt.Fprintf(&code, "redis.register_function{function_name = '%s', callback = function(keys, args) called(keys, args) return %s_body() end%s}\n",
				s.fn, body, flags)
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
	state, later := b.library, time.Now().Before(b.askAfter)
	b.mu.Unlock()
	if later {
		return func() {}
	}
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
		return refusal(err)
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
	if err == nil || (isRedisError(err) && strings.Contains(err.Error(), "already exists")) {
		return libLoaded
	}
	return refusal(err)
}

// refusal is libRefused for an error that lasts: no Functions here (Redis <
// 7, a proxy), a user refused them, a library that does not compile; and
// libUnknown, asked again later, for any other (BUSY, LOADING, OOM,
// READONLY, a timeout).
func refusal(err error) int {
	if !isRedisError(err) {
		return libUnknown
	}
	msg := err.Error()
	for _, lasting := range []string{"ERR unknown command", "ERR unknown subcommand", "NOPERM", "ERR Error compiling", "ERR Error registering"} {
		if strings.HasPrefix(msg, lasting) {
			return libRefused
		}
	}
	return libUnknown
}

// askAgain is how long a Client waits to ask a node for the library again
// after the node could not say (BUSY, LOADING, OOM, no answer).
const askAgain = 30 * time.Second

// learnLibrary records the node's state; an answer that could not tell
// (libUnknown from an error) is asked again only after askAgain.
func (b *batcher) learnLibrary(state int) {
	b.mu.Lock()
	b.library = state
	if state == libUnknown {
		b.askAfter = time.Now().Add(askAgain)
	}
	b.mu.Unlock()
}

// ensureLibrary, on a Cluster or Ring member, asks every master shard for
// the library and loads it where it is missing. It is loaded only when
// every shard says so; a shard that could not tell makes it unknown (asked
// again after askAgain), one that refuses makes it refused. A shard that
// loses it later answers "function not found" and gets EVAL.
func (b *batcher) ensureLibrary(ctx context.Context) {
	b.mu.Lock()
	state, later := b.library, time.Now().Before(b.askAfter)
	b.mu.Unlock()
	if state == libLoaded || state == libRefused || later {
		return
	}
	var mu sync.Mutex
	result := libLoaded
	ensure := func(ctx context.Context, shard *redis.Client) error {
		got := shardLibrary(ctx, shard)
		mu.Lock()
		if got == libRefused || (got == libUnknown && result == libLoaded) {
			result = got
		}
		mu.Unlock()
		return nil
	}
	if _, err := b.eachShard(ctx, ensure); err != nil && result == libLoaded {
		result = libUnknown // the shards were not all asked
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
	return redis.HasErrorPrefix(err, "Function not found") // after "ERR "
}

// fcallRefused: an FCALL the user may not send; the scripts then go by
// EVAL and EVALSHA. (A command a script is refused inside fails as ERR.)
func fcallRefused(err error) bool {
	return redis.HasErrorPrefix(err, "NOPERM") && strings.Contains(err.Error(), "'fcall' command")
}

// notRun: the node answered p without running it, and EVAL runs it: a
// NOSCRIPT to an EVALSHA; to an FCALL, its function missing, FCALL refused
// to the user, or a refusal that a function which may write gets before it
// starts where an EVAL script runs and is refused only its writes (OOM
// under maxmemory, a read-only replica, too few replicas, a failed save).
func notRun(p *pending, err error) bool {
	if !p.fcall {
		return redis.HasErrorPrefix(err, "NOSCRIPT")
	}
	if functionMissing(err) || fcallRefused(err) {
		return true
	}
	for _, before := range []string{"OOM", "READONLY", "NOREPLICAS", "MISCONF"} {
		if redis.HasErrorPrefix(err, before) {
			return true
		}
	}
	return false
}

// learnNotRun records what a call that did not run says of the node: the
// script or the library is gone (load it again), or FCALL is refused.
func (b *batcher) learnNotRun(p *pending, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !p.fcall:
		b.loaded[p.script] = false
	case functionMissing(err):
		b.library, b.askAfter = libUnknown, time.Time{}
	case fcallRefused(err):
		b.library = libRefused
	}
}
