package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// scripts/build.sh builds one static binary: no ELF interpreter, no shared library.
func TestBuildScriptMakesStaticBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF checks on Linux only")
	}
	bin := filepath.Join(t.TempDir(), "runnel")
	if out, err := exec.Command("bash", "../../scripts/build.sh", "-o", bin).CombinedOutput(); err != nil {
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
}
