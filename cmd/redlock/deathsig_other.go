//go:build !linux

package main

import "os/exec"

// dieWithRedlock: only Linux can tie CMD's life to redlock's; elsewhere a
// CMD whose redlock was killed runs on unsupervised.
func dieWithRedlock(*exec.Cmd) (done func()) { return func() {} }
