package main

import (
	"testing"

	"github.com/quorumlock/redlock/examples/internal/localnodes"
)

func TestRun_claimsEveryJobOnce(t *testing.T) {
	localnodes.Require(t)
	if err := run("", 4); err != nil {
		t.Fatal(err)
	}
}

func TestStore_refusesStaleToken(t *testing.T) {
	s := &store{}
	if _, err := s.claim(5); err != nil {
		t.Fatal(err)
	}
	if _, err := s.claim(4); err == nil {
		t.Fatal("a claim with an older token was accepted")
	}
}
