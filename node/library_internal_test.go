package node

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// Every variable the prelude declares outside a function holds one call's
// state: in the library it lives as long as the library, so new_call
// (guard.lua), which each function runs first, must set each back to its
// declared start. A variable missing there would carry one call's state
// into the next.
func TestLibrary_newCallResetsEveryVariable(t *testing.T) {
	decl := regexp.MustCompile(`(?m)^local ([a-z_][a-z_0-9]*)(?: = ([^-\n]+?))?\s*(?:--.*)?$`)
	declared := map[string]string{}
	for _, src := range []string{guardSource, queueSource} {
		for _, m := range decl.FindAllStringSubmatch(src, -1) {
			declared[m[1]] = cmpValue(m[2])
		}
	}
	reset := regexp.MustCompile(`(?m)^local function new_call\(\)\n  ([a-z_, ]+) = ([a-z0-9_, {}'"]+)\nend$`).
		FindStringSubmatch(guardSource)
	if len(declared) == 0 || reset == nil {
		t.Fatalf("declared %v, new_call %q: the patterns no longer match guard.lua", declared, reset)
	}
	names, values := strings.Split(reset[1], ", "), strings.Split(reset[2], ", ")
	if len(names) != len(values) {
		t.Fatalf("new_call assigns %d values to %d variables", len(values), len(names))
	}
	got := map[string]string{}
	for i, name := range names {
		got[name] = cmpValue(values[i])
	}
	for name, start := range declared {
		if keptAcrossCalls[name] {
			continue
		}
		if v, ok := got[name]; !ok || v != start {
			t.Errorf("guard.lua or queue.lua declares %s = %s; new_call sets it to %q (missing: %v)", name, start, v, !ok)
		}
	}
}

// keptAcrossCalls are the variables the library keeps on purpose: a pure
// cache (marker.lua's heads, the count of its entries) and the process's
// run_id (facts.lua's process_run), constant for the library's life.
var keptAcrossCalls = map[string]bool{"heads": true, "heads_kept": true, "process_run": true}

func cmpValue(v string) string {
	if v = strings.TrimSpace(v); v == "" {
		return "nil"
	}
	return v
}

// testRedisError is an error reply, as go-redis makes one.
type testRedisError string

func (e testRedisError) Error() string { return string(e) }
func (testRedisError) RedisError()     {}

// Only a server without Functions, a user refused them, or a library that
// does not compile stops a Client asking; a passing condition does not.
func TestLibrary_onlyLastingRefusalsStopTheAsking(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, libLoaded},
		{testRedisError("ERR Library 'redlock_x' already exists"), libLoaded},
		{testRedisError("ERR unknown command 'FUNCTION', with args beginning with: 'LOAD'"), libRefused},
		{testRedisError("ERR unknown subcommand 'LOAD'. Try FUNCTION HELP."), libRefused},
		{testRedisError("NOPERM this user has no permissions to run the 'function|load' command"), libRefused},
		{testRedisError("ERR Error registering functions: user_function:12: unexpected symbol"), libRefused},
		{testRedisError("BUSY Redis is busy running a script."), libUnknown},
		{testRedisError("LOADING Redis is loading the dataset in memory"), libUnknown},
		{testRedisError("OOM command not allowed when used memory > 'maxmemory'."), libUnknown},
		{testRedisError("READONLY You can't write against a read only replica."), libUnknown},
		{errors.New("i/o timeout"), libUnknown},
	} {
		if got := loaded(c.err); got != c.want {
			t.Errorf("FUNCTION LOAD answered %v: state %d, want %d", c.err, got, c.want)
		}
	}
}
