package redisproc

import "syscall"

// sysProcAttr puts the server in its own process group (so Kill can reach
// forked BGSAVE children) and asks the kernel to SIGKILL it when the parent
// dies, so servers never outlive a crashed test binary. (Linux delivers
// Pdeathsig when the creating OS thread exits; the Go runtime keeps threads
// alive unless a locked goroutine exits, which this package never does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
