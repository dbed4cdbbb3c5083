package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const (
	// readyTimeout bounds how long a start waits for the first PONG.
	readyTimeout = 5 * time.Second
	// probeTimeout bounds one readiness probe (dial plus round trips).
	probeTimeout = 500 * time.Millisecond
	// logTailBytes is how much of each log file an error message quotes.
	logTailBytes = 2048
	// LogFile and StdoutFile are the file names, inside Config.Dir, of the
	// Redis log and of the captured stdout/stderr.
	LogFile    = "redis.log"
	StdoutFile = "redis.stdout"
)

var (
	// ErrNotRunning is returned (wrapped) by operations that need a live process.
	ErrNotRunning = errors.New("server not running")
	// errAddressInUse marks a start that failed because the port was taken.
	errAddressInUse = errors.New("address already in use")
)

// arguments returns the full redis-server command line (without the binary).
func (s *Server) arguments() []string {
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.cfg.Dir,
		"--logfile", filepath.Join(s.cfg.Dir, LogFile),
		"--protected-mode", "no",
		"--daemonize", "no",
	}
	return append(args, s.cfg.Args...)
}

// launch starts a new process for s and waits until it is ready. On failure
// the process is killed and reaped before returning.
func (s *Server) launch() (*process, error) {
	stdoutPath := filepath.Join(s.cfg.Dir, StdoutFile)
	output, err := os.OpenFile(stdoutPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("redisproc: open %s: %w", stdoutPath, err)
	}
	cmd := exec.Command(s.cfg.Binary, s.arguments()...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	// A real file (not a pipe) keeps exec from starting copy goroutines and
	// keeps Wait from blocking on forked children that inherit the descriptor.
	cmd.Stdout = output
	cmd.Stderr = output
	cmd.SysProcAttr = sysProcAttr()
	proc, err := startProcess(cmd)
	closeErr := output.Close()
	if err != nil {
		return nil, fmt.Errorf("redisproc: start %s: %w", s.cfg.Binary, err)
	}
	if closeErr != nil {
		return nil, errors.Join(fmt.Errorf("redisproc: close %s: %w", stdoutPath, closeErr), proc.kill())
	}
	if err := s.waitReady(proc); err != nil {
		return nil, errors.Join(err, proc.kill())
	}
	return proc, nil
}

// waitReady polls the server until it answers PING and reports its own pid.
func (s *Server) waitReady(proc *process) error {
	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for {
		if proc.exited() {
			tail := logTail(s.cfg.Dir)
			err := fmt.Errorf("redisproc: %s on port %d exited during startup (%v)%s", filepath.Base(s.cfg.Binary), s.port, proc.waitErr, tail)
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("%w: %w", err, errAddressInUse)
			}
			return err
		}
		ready, err := probe(s.Addr(), proc.pid())
		if ready {
			return nil
		}
		if errors.Is(err, errAddressInUse) {
			return fmt.Errorf("redisproc: port %d: %w%s", s.port, err, logTail(s.cfg.Dir))
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: %s on port %d not ready after %v: %w%s", filepath.Base(s.cfg.Binary), s.port, readyTimeout, lastErr, logTail(s.cfg.Dir))
		}
		timer := time.NewTimer(20 * time.Millisecond)
		select {
		case <-proc.done:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// probe sends PING and, once PONG arrives, checks via INFO that the answering
// server is the process with pid wantPID (and not a stranger that owns the
// port). A -NOAUTH reply (requirepass set in Args) counts as ready without
// the pid check.
func probe(addr string, wantPID int) (bool, error) {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return false, err
	}
	reader := bufio.NewReader(conn)
	reply, err := roundTrip(conn, reader, "PING")
	if err != nil {
		return false, err
	}
	if strings.HasPrefix(reply, "-NOAUTH") {
		return true, nil
	}
	if reply != "+PONG" {
		return false, fmt.Errorf("PING answered %q", reply)
	}
	header, err := roundTrip(conn, reader, "INFO server")
	if err != nil {
		return false, err
	}
	size, err := strconv.Atoi(strings.TrimPrefix(header, "$"))
	if !strings.HasPrefix(header, "$") || err != nil || size < 0 {
		return false, fmt.Errorf("INFO answered %q", header)
	}
	body := make([]byte, size+2)
	if _, err := io.ReadFull(reader, body); err != nil {
		return false, fmt.Errorf("read INFO: %w", err)
	}
	for line := range strings.SplitSeq(string(body), "\r\n") {
		if value, found := strings.CutPrefix(line, "process_id:"); found {
			if value != strconv.Itoa(wantPID) {
				return false, fmt.Errorf("port served by pid %s, not pid %d: %w", value, wantPID, errAddressInUse)
			}
			return true, nil
		}
	}
	return false, errors.New("INFO server lacks process_id")
}

// roundTrip writes an inline command and returns the first reply line.
func roundTrip(conn net.Conn, reader *bufio.Reader, command string) (string, error) {
	if _, err := io.WriteString(conn, command+"\r\n"); err != nil {
		return "", err
	}
	line, err := reader.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// freePort asks the kernel for a currently free loopback port.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisproc: find free port: %w", err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	if err := listener.Close(); err != nil {
		return 0, fmt.Errorf("redisproc: find free port: %w", err)
	}
	return port, nil
}

// logTail formats the last bytes of the log files in dir for error messages.
func logTail(dir string) string {
	var text strings.Builder
	for _, name := range []string{LogFile, StdoutFile} {
		tail := readTail(filepath.Join(dir, name), logTailBytes)
		if strings.TrimSpace(tail) == "" {
			continue
		}
		fmt.Fprintf(&text, "\n--- %s (tail) ---\n%s", name, strings.TrimRight(tail, "\n"))
	}
	return text.String()
}

// readTail returns up to limit trailing bytes of the file, or "" on error.
func readTail(path string, limit int64) string {
	file, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return ""
	}
	offset := max(info.Size()-limit, 0)
	data := make([]byte, info.Size()-offset)
	if _, err := file.ReadAt(data, offset); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return string(data)
}
