// Package localpg starts a throwaway PostgreSQL server for the examples
// and their tests (initdb and pg_ctl from Debian's postgresql package), on
// a free loopback port under a temporary directory.
package localpg

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// Server is a running throwaway PostgreSQL server.
type Server struct {
	dir  string
	bin  string
	port int
}

// Bin finds the directory of initdb and pg_ctl, or says how to install them.
func Bin() (string, error) {
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(path), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		return "", errors.New("PostgreSQL's pg_ctl not found (apt-get install -y postgresql)")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Start makes a new database cluster and starts its server. As root it runs
// them as the postgres user, since PostgreSQL refuses to run as root.
func Start() (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redlock-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if err := s.start(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	if err := s.ownDir(); err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, s.dir)
	if out, err := s.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pg_ctl start: %w: %s %s", err, out, log)
	}
	return nil
}

// ownDir gives the directory to the postgres user when running as root.
func (s *Server) ownDir() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, and no postgres user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(s.dir, uid, gid)
}

// run runs one of PostgreSQL's programs, as postgres when root.
func (s *Server) run(program string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, program)
	cmd := exec.Command(path, args...)
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return cmd.CombinedOutput()
}

// DSN is the URL to connect to the server's postgres database.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Stop stops the server at once and removes its files.
func (s *Server) Stop() {
	if s.port != 0 {
		_, _ = s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	}
	_ = os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr := l.Addr().String()
	return strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
}
