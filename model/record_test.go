// Package model holds the tests of the model check's tooling: the record
// that lets CI skip a full tier already passed on the same inputs
// (record.sh, README.md "The record").
package model

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tree copies model/'s scripts and models into a new directory.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob("*.pml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no models in model/: %v", err)
	}
	for _, f := range append(files, "check.sh", "record.sh") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// script runs `bash dir/NAME args` with PATH prefixed by path (if set) and
// returns its exit code and output.
func script(t *testing.T, dir, path, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(dir, name)}, args...)...)
	cmd.Env = append(os.Environ(), "MODEL_RECORD=")
	if path != "" {
		cmd.Env = append(cmd.Env, "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("%s: %v", name, err)
	return 0, ""
}

// fakeTool puts on a new PATH directory an executable NAME printing line.
func fakeTool(t *testing.T, name, line string) string {
	t.Helper()
	dir := t.TempDir()
	body := "#!/bin/sh\necho '" + line + "'\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recorded writes a record of the inputs in dir as they are now, as a
// passing full run would.
func recorded(t *testing.T, dir string) { recordedWith(t, dir, "") }

// recordedWith is recorded with path before PATH.
func recordedWith(t *testing.T, dir, path string) {
	t.Helper()
	code, key := script(t, dir, path, "record.sh", "key")
	if code != 0 {
		t.Fatalf("record.sh key: exit %d: %s", code, key)
	}
	log := filepath.Join(t.TempDir(), "report")
	line := "model: lock ok: holds 1 states 1 MB 1s\n"
	if err := os.WriteFile(log, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := script(t, dir, path, "record.sh", "write", strings.TrimSpace(key), log); code != 0 {
		t.Fatalf("record.sh write: exit %d: %s", code, out)
	}
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestVerify_unchangedInputsTrusted(t *testing.T) {
	t.Parallel()
	dir := tree(t)
	recorded(t, dir)
	code, out := script(t, dir, "", "record.sh", "verify")
	if code != 0 || !strings.Contains(out, "the record is current") || !strings.Contains(out, "model: lock ok: holds") {
		t.Fatalf("verify on the recorded inputs: exit %d, want 0 and the record:\n%s", code, out)
	}
}

func TestVerify_noRecord(t *testing.T) {
	t.Parallel()
	dir := tree(t)
	if code, out := script(t, dir, "", "record.sh", "verify"); code != 2 {
		t.Fatalf("verify without a record: exit %d, want 2:\n%s", code, out)
	}
	// A record cut short (no key line) is no record.
	if err := os.WriteFile(filepath.Join(dir, "verified"), []byte("# cut\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := script(t, dir, "", "record.sh", "verify"); code != 2 {
		t.Fatalf("verify with a record that has no key: exit %d, want 2:\n%s", code, out)
	}
}

// One byte changed in any model or in check.sh makes verify say "run" and
// name that file.
func TestVerify_changedFileRuns(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("*.pml")
	for _, f := range append(files, "check.sh") {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			dir := tree(t)
			recorded(t, dir)
			flipByte(t, filepath.Join(dir, f))
			code, out := script(t, dir, "", "record.sh", "verify")
			if code != 1 || !strings.Contains(out, "run:") || !strings.Contains(out, "now:    model/"+f+" ") {
				t.Fatalf("verify after a byte of %s changed: exit %d, want 1 naming it:\n%s", f, code, out)
			}
		})
	}
}

func TestVerify_modelAddedOrRemovedRuns(t *testing.T) {
	t.Parallel()
	dir := tree(t)
	recorded(t, dir)
	extra := filepath.Join(dir, "extra.pml")
	if err := os.WriteFile(extra, []byte("init { skip }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := script(t, dir, "", "record.sh", "verify"); code != 1 || !strings.Contains(out, "now:    model/extra.pml") {
		t.Fatalf("verify with a model added: exit %d, want 1 naming it:\n%s", code, out)
	}
	if err := os.Remove(extra); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "lock.pml")); err != nil {
		t.Fatal(err)
	}
	if code, out := script(t, dir, "", "record.sh", "verify"); code != 1 || !strings.Contains(out, "record: model/lock.pml") {
		t.Fatalf("verify with a model removed: exit %d, want 1 naming it:\n%s", code, out)
	}
}

// Another spin or gcc (another version string) makes verify say "run".
func TestVerify_otherToolVersionRuns(t *testing.T) {
	t.Parallel()
	for tool, line := range map[string]string{
		"spin": "Spin Version 6.5.3 -- 1 January 2030",
		"gcc":  "gcc (Debian 13.0.0-1) 13.0.0",
	} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			dir := tree(t)
			recorded(t, dir)
			code, out := script(t, dir, fakeTool(t, tool, line), "record.sh", "verify")
			if code != 1 || !strings.Contains(out, "now:    "+tool+" "+line) {
				t.Fatalf("verify with %s %q: exit %d, want 1 naming it:\n%s", tool, line, code, out)
			}
		})
	}
}

// A record whose key was edited is not trusted.
func TestVerify_editedRecordRuns(t *testing.T) {
	t.Parallel()
	dir := tree(t)
	recorded(t, dir)
	path := filepath.Join(dir, "verified")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`(?m)^key [0-9a-f]{64}$`).ReplaceAll(b, []byte("key "+strings.Repeat("0", 64)))
	if bytes.Equal(edited, b) {
		t.Fatalf("the record has no key line:\n%s", b)
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := script(t, dir, "", "record.sh", "verify"); code != 1 {
		t.Fatalf("verify with the key edited: exit %d, want 1:\n%s", code, out)
	}
}

// withChecks replaces check.sh's check lines in dir by lines.
func withChecks(t *testing.T, dir string, lines ...string) {
	t.Helper()
	path := filepath.Join(dir, "check.sh")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "check ") {
			out, lines = append(out, lines...), nil
			continue
		}
		out = append(out, l)
	}
	if lines != nil {
		t.Fatal("check.sh has no check lines")
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o755); err != nil {
		t.Fatal(err)
	}
}

// requireSpin skips without spin and gcc, or fails under
// REDLOCK_REQUIRE_REDIS=1 (CI), where make test needs them anyway.
func requireSpin(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("REDLOCK_REQUIRE_REDIS") == "1" {
				t.Fatalf("%s not found (apt-get install -y spin gcc)", tool)
			}
			t.Skipf("%s not found (apt-get install -y spin gcc)", tool)
		}
	}
}

// Only a full run of every check that passes writes a record.
func TestRecord_writtenByPassingFullRunOnly(t *testing.T) {
	t.Parallel()
	requireSpin(t)
	const pass = "check lock lock.pml pass -DTTL=1 -DDRIFT=0 -DMAXCLOCK=0"
	const fails = "check neg-quorum lock.pml fail -DQ=1 -DTTL=1 -DDRIFT=0 -DMAXCLOCK=1"
	const wrong = "check neg-wrong lock.pml fail -DTTL=1 -DDRIFT=0 -DMAXCLOCK=0"
	for _, c := range []struct {
		name   string
		lines  []string
		args   []string
		record bool
	}{
		{"full, passing", []string{pass, fails}, []string{"full"}, true},
		{"full, one check not as required", []string{wrong}, []string{"full"}, false},
		{"full, a pattern", []string{pass, fails}, []string{"full", "lock"}, false},
		{"small", []string{fails}, []string{"small"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := tree(t)
			withChecks(t, dir, c.lines...)
			code, out := script(t, dir, "", "check.sh", c.args...)
			if (code == 0) != (c.name != "full, one check not as required") {
				t.Fatalf("check.sh %v: exit %d:\n%s", c.args, code, out)
			}
			vcode, vout := script(t, dir, "", "record.sh", "verify")
			if c.record && (vcode != 0 || !strings.Contains(vout, "model: neg-quorum")) {
				t.Fatalf("after a passing full run: verify exit %d, want 0 with its checks:\n%s\n%s", vcode, out, vout)
			}
			if !c.record && vcode != 2 {
				t.Fatalf("after check.sh %v: verify exit %d, want 2 (no record):\n%s\n%s", c.args, vcode, out, vout)
			}
		})
	}
}

// A record whose input lines were edited to match today's inputs keeps
// the key of the inputs it was written for: not trusted.
func TestVerify_editedInputLinesRun(t *testing.T) {
	t.Parallel()
	dir := tree(t)
	recorded(t, dir)
	flipByte(t, filepath.Join(dir, "lock.pml"))
	_, now := script(t, dir, "", "record.sh", "inputs")
	path := filepath.Join(dir, "verified")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "input ") {
			lines = append(lines, l)
		}
	}
	edited := strings.Replace(strings.Join(lines, "\n"), "\ndate ", "\n"+strings.TrimSpace(now)+"\ndate ", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := script(t, dir, "", "record.sh", "verify"); code != 1 {
		t.Fatalf("verify with the input lines edited to today's: exit %d, want 1:\n%s", code, out)
	}
}

// A record is not written for inputs other than those a run began with.
func TestRecord_refusedWhenInputsChangedDuringTheRun(t *testing.T) {
	t.Parallel()
	dir := tree(t)
	_, key := script(t, dir, "", "record.sh", "key")
	flipByte(t, filepath.Join(dir, "adopt.pml"))
	log := filepath.Join(t.TempDir(), "report")
	if err := os.WriteFile(log, []byte("model: x ok: holds\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := script(t, dir, "", "record.sh", "write", strings.TrimSpace(key), log); code == 0 {
		t.Fatalf("write with the key of other inputs: exit 0, want a refusal:\n%s", out)
	}
	if code, out := script(t, dir, "", "record.sh", "verify"); code != 2 {
		t.Fatalf("verify after a refused write: exit %d, want 2:\n%s", code, out)
	}
}

// fakeSpinGCC puts on a new PATH directory a spin that makes nothing and a
// gcc whose "pan" prints panOutput, so check.sh's verdicts can be driven
// by any pan output.
func fakeSpinGCC(t *testing.T, panOutput string) string {
	t.Helper()
	dir := t.TempDir()
	spin := "#!/bin/sh\n[ \"$1\" = -V ] && echo 'Spin Version 0.0 -- fake'\nexit 0\n"
	pan := filepath.Join(dir, "pan.out")
	gcc := "#!/bin/sh\nout=pan\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n" +
		"printf '#!/bin/sh\\ncat %s\\n' '" + pan + "' >\"$out\"; chmod +x \"$out\"\n"
	for name, body := range map[string]string{"spin": spin, "gcc": gcc, "pan.out": panOutput} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pan's own words when it runs out of memory: "errors: 0" and a search
// not completed. Such a check never holds, and a full run with it drops
// the record it had.
func TestCheck_searchCutShortNeverHolds(t *testing.T) {
	t.Parallel()
	const outOfMemory = "pan: out of memory\n" +
		"State-vector 60 byte, depth reached 41, errors: 0\n" +
		"  1000000 states, stored\n" +
		"(Spin Version 6.5.2 -- 6 December 2019)\nWarning: Search not completed\n"
	const holds = "State-vector 60 byte, depth reached 41, errors: 0\n  1000 states, stored\n"
	for _, c := range []struct {
		name, pan, want string
		code            int
	}{
		{"out of memory", outOfMemory, "INCOMPLETE search", 1},
		{"complete", holds, "ok: holds", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := tree(t)
			withChecks(t, dir, "check lock lock.pml pass")
			path := fakeSpinGCC(t, c.pan)
			recordedWith(t, dir, path)
			code, out := script(t, dir, path, "check.sh", "full")
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("check.sh full with pan printing %q: exit %d, want %d and %q:\n%s", c.pan, code, c.code, c.want, out)
			}
			vcode, vout := script(t, dir, path, "record.sh", "verify")
			if want := map[int]int{0: 0, 1: 2}[c.code]; vcode != want {
				t.Fatalf("verify after that run: exit %d, want %d:\n%s", vcode, want, vout)
			}
		})
	}
}
