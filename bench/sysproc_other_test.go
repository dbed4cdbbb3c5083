//go:build !linux

package bench

import "syscall"

// sysProcAttr: Pdeathsig exists only on Linux; elsewhere a crashed run can
// leave servers behind.
func sysProcAttr() *syscall.SysProcAttr { return nil }
