package main

import (
	"bytes"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readme is the repository's README, from this package's directory.
const readme = "../../README.md"

// TestQuickstart: the README's quick start, as a new user takes it. Its
// program, pasted into a module of its own, builds; on brand-new nodes
// (declared by nobody), its `redlock init` line run as written declares
// them, and the program then holds the lock at once and exits 0.
func TestQuickstart(t *testing.T) {
	t.Parallel()
	program, shell := quickstart(t)
	if formatted, err := format.Source([]byte(program)); err != nil || string(formatted) != program {
		t.Errorf("the quick start's program is not gofmt'd (%v):\n%s", err, formatted)
	}
	if !strings.Contains(shell, "go install github.com/quorumlock/redlock/cmd/redlock@latest\n") {
		t.Errorf("the quick start does not say how to install the CLI:\n%s", shell)
	}
	cluster := freshNodes(t, 3) // first: it skips without redis-server
	env := nodesEnvFor(cluster.URLs())
	built := buildQuickstart(t, program)

	initLine := commandLine(t, shell, "redlock init")
	runCLI(t, env, initLine[1:]...).expect(t, exitOK)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, built)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the quick start's program: %v after %v:\n%s", err, took.Round(time.Millisecond), out.String())
	}
	if took > 2*time.Second {
		t.Errorf("the quick start's program took %v: its Lock waited", took)
	}
	t.Logf("program ran in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out.String()))
}

// quickstart returns the README's quick start: its Go program and its
// shell lines (every other code block, joined).
func quickstart(t *testing.T) (program, shell string) {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Quickstart\n")
	if !ok {
		t.Fatal("README has no Quickstart section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := strings.Split(section, "```")
	for i := 1; i < len(blocks); i += 2 { // the odd parts are inside fences
		lang, body, _ := strings.Cut(blocks[i], "\n")
		if lang == "go" && program == "" {
			program = body
		} else {
			shell += body
		}
	}
	if program == "" {
		t.Fatal("the Quickstart has no Go block")
	}
	return program, shell
}

// commandLine finds the shell line that starts with prefix and returns
// its words, the comment dropped.
func commandLine(t *testing.T, shell, prefix string) []string {
	t.Helper()
	for line := range strings.Lines(shell) {
		if strings.HasPrefix(line, prefix) {
			line, _, _ = strings.Cut(line, "#")
			return strings.Fields(line)
		}
	}
	t.Fatalf("the quick start has no %q line:\n%s", prefix, shell)
	return nil
}

// buildQuickstart builds program as a user's main.go in a module of its
// own that requires this repository (a replace stands in for the module
// proxy; GOPROXY=off: everything comes from the module cache).
func buildQuickstart(t *testing.T, program string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module quickstart\n\ngo 1.26.0\n\nrequire github.com/quorumlock/redlock v0.0.0\n\nreplace github.com/quorumlock/redlock => " + root + "\n"
	for name, content := range map[string]string{"main.go": program, "go.mod": mod, "go.sum": string(sum)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	built := filepath.Join(dir, "quickstart")
	build := exec.Command("go", "build", "-o", built, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS="+os.Getenv("GOFLAGS")+" -mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the quick start: %v\n%s\n%s", err, out, program)
	}
	return built
}
