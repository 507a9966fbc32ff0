package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// scripts/build.sh builds one static binary: no ELF interpreter, no shared library.
func TestBuildScriptMakesStaticBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF checks on Linux only")
	}
	bin := filepath.Join(t.TempDir(), "runnel")
	build := exec.Command("bash", "../../scripts/build.sh", "-o", bin)
	build.Env = append(build.Environ(), "RUNNEL_VERSION=v9.9.9-test")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build.sh: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: dynamically linked", bin, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s links %v", bin, libs)
	}
	checkVersion(t, bin)
}

// checkVersion runs `runnel version` and `runnel --version` of a scripts/build.sh
// binary: the stamped version, the commit Go stamps, the Go version, the build time.
func checkVersion(t *testing.T, bin string) {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("runnel version: %v", err)
	}
	flag, err := exec.Command(bin, "--version").Output()
	if err != nil || string(flag) != string(out) {
		t.Errorf("runnel --version: %v, %q; want what runnel version prints, %q", err, flag, out)
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) != 5 || lines[0] != "runnel v9.9.9-test" {
		t.Fatalf("runnel version printed %q", out)
	}
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		if c := strings.TrimSpace(string(head)); !strings.HasPrefix(lines[1], "  commit:  "+c) {
			t.Errorf("commit line %q, want commit %s", lines[1], c)
		}
	}
	if want := "  go:      " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH; lines[2] != want {
		t.Errorf("go line %q, want %q", lines[2], want)
	}
	built, ok := strings.CutPrefix(lines[3], "  built:   ")
	if _, err := time.Parse(time.RFC3339, built); !ok || err != nil {
		t.Errorf("built line %q: want an RFC 3339 time", lines[3])
	}
}
