// Package reentrant gives lock owners their identity: unguessable owner and
// hold ids, and the context that carries an owner so that a Lock made with
// it re-enters a lock that owner already holds.
package reentrant

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// processID is 128 random bits drawn once per process. Every id this process
// makes starts with it, so ids are unique across processes and cannot be
// guessed by another client (which could otherwise release a lock it does
// not hold).
var processID = newProcessID()

var sequence atomic.Uint64

func newProcessID() string {
	var random [16]byte
	// crypto/rand.Read never returns an error since Go 1.24; it aborts the
	// program if the system's random source fails, which is what we want.
	_, _ = rand.Read(random[:])
	return hex.EncodeToString(random[:])
}

// NewID returns a fresh id: the process's 128 random bits and a sequence
// number. Owner ids and hold ids both come from here.
func NewID() string {
	return processID + ":" + strconv.FormatUint(sequence.Add(1), 10)
}

type ownerKey struct{}

// WithOwner returns a copy of ctx that carries owner. A Lock made with it
// re-enters a lock that owner already holds.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// Owner returns the owner ctx carries, if any.
func Owner(ctx context.Context) (string, bool) {
	owner, ok := ctx.Value(ownerKey{}).(string)
	return owner, ok
}
