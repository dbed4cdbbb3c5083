package localnodes

import (
	"os"
	"testing"

	"github.com/quorumlock/redlock/redlocktest/redisproc"
)

// Require skips t without redis-server, or fails it when
// REDLOCK_REQUIRE_REDIS=1 (as in CI), where a skip would hide a missing
// install.
func Require(t testing.TB) {
	t.Helper()
	if _, err := redisproc.LookPath(""); err != nil {
		if os.Getenv("REDLOCK_REQUIRE_REDIS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}
