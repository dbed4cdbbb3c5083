package bench

import "syscall"

// sysProcAttr makes the kernel SIGKILL a server when the benchmark binary
// dies, so no redis-server outlives a crashed or interrupted run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
