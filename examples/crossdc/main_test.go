package main

import (
	"testing"

	"github.com/quorumlock/redlock/examples/internal/localnodes"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun_locksBothDatacenters(t *testing.T) {
	localnodes.Require(t)
	if err := run("", ""); err != nil {
		t.Fatal(err)
	}
}
