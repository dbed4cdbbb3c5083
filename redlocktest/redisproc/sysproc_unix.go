//go:build unix && !linux

package redisproc

import "syscall"

// sysProcAttr puts the server in its own process group so Kill can reach
// forked BGSAVE children. Pdeathsig is unavailable outside Linux.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
