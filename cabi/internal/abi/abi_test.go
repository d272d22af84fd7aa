package abi

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated files")

func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	return root
}

// TestGenerated checks that the generated headers and sources are those
// the tables give (run with -update to rewrite them).
func TestGenerated(t *testing.T) {
	root := moduleRoot(t)
	outs, err := Outputs(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range outs {
		path := filepath.Join(root, name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run go test ./cabi/internal/abi -update", name)
		}
	}
}

// stubsHeader returns the MPI Forum's reference mpi.h (mpi-forum/mpi-abi-stubs),
// from $SHMPI_ABI_STUBS (a file) or the mirror's git directory.
func stubsHeader(t *testing.T) []byte {
	if p := os.Getenv("SHMPI_ABI_STUBS"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const mirror = "/work/.mirror/mpi-forum+mpi-abi-stubs/repo"
	if _, err := os.Stat(mirror); err != nil {
		t.Skipf("no copy of mpi-forum/mpi-abi-stubs (%s, or SHMPI_ABI_STUBS=path/to/mpi.h): the cross-check needs one", mirror)
	}
	b, err := exec.Command("git", "-C", mirror, "show", "HEAD:mpi.h").Output()
	if err != nil {
		t.Fatalf("reading mpi.h from %s: %v", mirror, err)
	}
	return b
}

// constNames is every integer-valued name of the ABI the tables hold.
func printProgram() string {
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"mpi.h\"\n#define P(x) printf(\"%s %lld\\n\", #x, (long long)(intptr_t)(x))\nint main(void) {\n")
	for _, h := range Handles {
		fmt.Fprintf(&b, "P(%s);\n", h.Name)
	}
	for _, a := range Aliases {
		fmt.Fprintf(&b, "P(%s);\n", a.Name)
	}
	for _, g := range Enums {
		for _, c := range g.Consts {
			fmt.Fprintf(&b, "P(%s);\n", c.Name)
		}
	}
	for _, d := range append(append([]Define{}, Versions...), Pointers...) {
		fmt.Fprintf(&b, "P(%s);\n", d.Name)
	}
	for _, c := range Sizes {
		fmt.Fprintf(&b, "P(%s);\n", c.Name)
	}
	for _, f := range FuncPointers {
		fmt.Fprintf(&b, "P(%s);\n", f.Name)
	}
	b.WriteString("P(MPI_DISPLACEMENT_CURRENT);\nP(sizeof(MPI_Status)); P(offsetof(MPI_Status, MPI_SOURCE)); P(offsetof(MPI_Status, MPI_TAG)); P(offsetof(MPI_Status, MPI_ERROR));\n")
	b.WriteString("P(sizeof(MPI_Aint)); P(sizeof(MPI_Offset)); P(sizeof(MPI_Count)); P((MPI_Aint)-1 < 0); P((MPI_Count)-1 < 0);\n")
	b.WriteString("return 0;\n}\n")
	return b.String()
}

func compileRun(t *testing.T, dir, incdir, src string) string {
	t.Helper()
	cfile := filepath.Join(dir, "values.c")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "values")
	if out, err := exec.Command("cc", "-std=c99", "-Wall", "-Werror", "-I", incdir, "-o", exe, cfile).CombinedOutput(); err != nil {
		t.Fatalf("compiling against %s: %v\n%s", incdir, err, out)
	}
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestAgainstStubs compiles one program against our mpi.h and against the
// MPI Forum's, and compares every value they print; then it declares our
// prototypes and callback types after the Forum's header, which the C
// compiler accepts only if each type is the same; and it checks that both
// declare the same functions.
func TestAgainstStubs(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatalf("no C compiler (cc) on PATH: the C interface needs one: %v", err)
	}
	root := moduleRoot(t)
	stubs := stubsHeader(t)
	dir := t.TempDir()
	stubDir := filepath.Join(dir, "stubs")
	if err := os.MkdirAll(stubDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stubDir, "mpi.h"), stubs, 0o644); err != nil {
		t.Fatal(err)
	}
	src := printProgram()
	ours := compileRun(t, dir, filepath.Join(root, "include"), src)
	theirs := compileRun(t, dir, stubDir, src)
	if ours != theirs {
		ol, tl := strings.Split(ours, "\n"), strings.Split(theirs, "\n")
		for i := range min(len(ol), len(tl)) {
			if ol[i] != tl[i] {
				t.Errorf("value differs: ours %q, the ABI's %q", ol[i], tl[i])
			}
		}
	}
	if n := strings.Count(ours, "\n"); n < 370 {
		t.Errorf("only %d values compared", n)
	}

	// Our declarations after theirs: a conflicting type is a compile error.
	var b strings.Builder
	b.WriteString("#include \"mpi.h\"\n")
	for _, c := range Callbacks {
		r := parseType(c.Result)
		fmt.Fprintf(&b, "typedef %s (MPI_%s)(%s);\n", r.decl(""), c.Name, paramList(parseParams(c.Params)))
	}
	for _, prefix := range []string{"MPI_", "PMPI_"} {
		for _, f := range Funcs {
			fmt.Fprintf(&b, "%s;\n", proto(prefix, f))
		}
	}
	b.WriteString("int main(void) { return 0; }\n")
	cfile := filepath.Join(dir, "protos.c")
	if err := os.WriteFile(cfile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cc", "-std=c11", "-Wall", "-Werror", "-I", stubDir, "-o", filepath.Join(dir, "protos"), cfile).CombinedOutput(); err != nil {
		t.Fatalf("our prototypes conflict with the ABI's: %v\n%s", err, out)
	}

	re := regexp.MustCompile(`(?m)^[A-Za-z_ ]+?\**\s*\bMPI_(\w+)\(`)
	var want, got []string
	for _, m := range re.FindAllSubmatch(stubs, -1) {
		want = append(want, string(m[1]))
	}
	for _, f := range Funcs {
		got = append(got, f.Name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, " ") != strings.Join(got, " ") {
		t.Errorf("function lists differ: the ABI has %d, we have %d", len(want), len(got))
	}
}
