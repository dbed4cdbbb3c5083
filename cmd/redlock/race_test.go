//go:build race

package main

// The binary under test is built with -race when the tests are, so that a
// data race in the CLI fails its tests too.
func init() { raceEnabled = true }
