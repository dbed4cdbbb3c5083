//go:build !linux

package bench

import (
	"syscall"
	"time"
)

// sysProcAttr: Pdeathsig exists only on Linux; elsewhere a crashed run can
// leave servers behind.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// processCPU is not measured outside Linux: the CPU metrics read 0 there.
func processCPU() time.Duration { return 0 }
