package node

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every variable the prelude declares outside a function holds one call's
// state: in the library it lives as long as the library, so each function
// resets it (perCall) before its body runs. A new one missing there would
// carry one call's state into the next.
func TestLibrary_resetsEveryPreludeVariable(t *testing.T) {
	decl := regexp.MustCompile(`(?m)^local ([a-z_][a-z_0-9, ]*)(=|$| --)`)
	var found []string
	for _, src := range []string{guardSource, queueSource} {
		for _, m := range decl.FindAllStringSubmatch(src, -1) {
			for name := range strings.SplitSeq(m[1], ",") {
				if name = strings.TrimSpace(name); name != "" {
					found = append(found, name)
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("found no variable in the prelude: the pattern is wrong")
	}
	for _, name := range found {
		if !slices.Contains(perCall, name) {
			t.Errorf("guard.lua or queue.lua declares %q, which the library's functions do not reset (perCall)", name)
		}
	}
}
