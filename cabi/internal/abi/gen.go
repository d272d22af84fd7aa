// Package abi holds the MPI 5.0 standard ABI as tables (table.go, ext.go)
// and generates from them what shmpi's C interface is made of: the
// headers in include/, the C entry points of the library (every function
// of the ABI: the ones implemented in Go or in C, and the rest answering
// MPI_ERR_UNSUPPORTED_OPERATION) and the constants as Go source.
//
// The generated files are checked in; TestGenerated fails when one is out
// of date, and `go test ./cabi/internal/abi -update` rewrites them.
package abi

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// A type token (in Funcs, Callbacks, ULFMFuncs) is [c]BASE[*...][[]...]:
// c for const, BASE one of void, int, char, double, or an MPI type without
// MPI_ (Comm, Datatype, Aint, Status, User_function...), then pointers,
// then array brackets ([] or [][3]).
type ctype struct {
	konst bool
	base  string // the C base type: int, MPI_Comm, ...
	ptrs  int
	arr   string // "", "[]" or "[][3]"
	mpi   string // base without MPI_ for MPI types, "" otherwise
}

var tokenRE = regexp.MustCompile(`^(c?)([A-Za-z_0-9]+?)(\**)((?:\[\])?(?:\[3\])?)$`)

func parseType(tok string) ctype {
	m := tokenRE.FindStringSubmatch(tok)
	if m == nil {
		panic("abi: bad type token " + tok)
	}
	t := ctype{ptrs: len(m[3]), arr: m[4]}
	base := m[2]
	konst := m[1] == "c"
	if konst && !isCBase(base) && !isUpper(base) {
		// "char" and friends start with c: no const there.
		base, konst = "c"+base, false
	}
	t.konst = konst
	switch {
	case isCBase(base):
		t.base = base
	case isUpper(base):
		t.base, t.mpi = "MPI_"+base, base
	default:
		panic("abi: bad type token " + tok)
	}
	return t
}

func isCBase(s string) bool {
	return s == "void" || s == "int" || s == "char" || s == "double"
}

func isUpper(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }

// decl is the C declaration of name with type t.
func (t ctype) decl(name string) string {
	s := t.base
	if t.konst {
		s = "const " + s
	}
	s += " " + strings.Repeat("*", t.ptrs) + name + t.arr
	return strings.TrimSpace(s)
}

// param is one parameter of a function.
type param struct {
	t    ctype
	name string
	dots bool // the ... of a variadic function
}

func parseParams(s string) []param {
	if s == "" {
		return nil
	}
	var ps []param
	for _, p := range strings.Split(s, ", ") {
		if p == "..." {
			ps = append(ps, param{dots: true})
			continue
		}
		tok, name, ok := strings.Cut(p, " ")
		if !ok {
			panic("abi: bad parameter " + p)
		}
		ps = append(ps, param{t: parseType(tok), name: name})
	}
	return ps
}

func paramList(ps []param) string {
	if len(ps) == 0 {
		return "void"
	}
	var s []string
	for _, p := range ps {
		if p.dots {
			s = append(s, "...")
		} else {
			s = append(s, p.t.decl(p.name))
		}
	}
	return strings.Join(s, ", ")
}

// proto is the prototype of prefix+name (without the semicolon).
func proto(prefix string, f Func) string {
	r := parseType(f.Result)
	return r.decl(prefix+f.Name) + "(" + paramList(parseParams(f.Params)) + ")"
}

// handleKinds are the MPI types whose values are handles.
var handleKinds = map[string]bool{
	"Comm": true, "Datatype": true, "Group": true, "Op": true, "Win": true, "File": true,
	"Session": true, "Message": true, "Info": true, "Errhandler": true, "Request": true,
	"T_enum": true, "T_cvar_handle": true, "T_pvar_handle": true, "T_pvar_session": true,
	"T_event_registration": true, "T_event_instance": true,
}

// goSide is the C type under which the Go export receives a parameter:
// handles as uintptr_t, MPI_Aint, MPI_Count and MPI_Offset as int64_t,
// every other pointer as the pointer of those or void*.
func (t ctype) goSide() string {
	indirect := t.ptrs + strings.Count(t.arr, "[]")
	wide := t.mpi == "Aint" || t.mpi == "Count" || t.mpi == "Offset"
	var base string
	switch {
	case t.mpi == "T_cb_safety" || t.mpi == "T_source_order":
		base = "int"
	case handleKinds[t.mpi]:
		base = "uintptr_t"
	case wide:
		base = "int64_t"
	case t.base == "int" || t.base == "double":
		base = t.base
	case t.base == "char" && indirect == 1:
		return "char*"
	default:
		return "void*"
	}
	switch {
	case indirect == 0:
		return base
	case indirect == 1 && !strings.Contains(t.arr, "[3]"):
		return base + "*"
	case t.base == "int":
		return "int*" // int ranges[][3]
	}
	return "void*"
}

// Implemented says how the library provides each function: in Go (an
// export named shmpi_ + the function's name) or in C (a PMPI_ or PMPIX_
// definition written by hand). The rest are generated as unsupported.
type Implemented struct {
	Go map[string]bool // MPI_Send, MPIX_Comm_revoke...
	C  map[string]bool
}

var (
	exportRE = regexp.MustCompile(`(?m)^//export shmpi_(MPIX?_\w+)$`)
	cdefRE   = regexp.MustCompile(`(?m)^[A-Za-z_][\w \*]*\bP(MPIX?_\w+)\(.*$`)
	toIntRE  = regexp.MustCompile(`(?m)^TOINT\(\w+, (\w+)\)`)
)

// ScanImplemented reads the Go and C sources of the library in dir.
func ScanImplemented(dir string) (Implemented, error) {
	impl := Implemented{Go: map[string]bool{}, C: map[string]bool{}}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return impl, err
	}
	for _, f := range files {
		base := filepath.Base(f)
		isGo := strings.HasSuffix(base, ".go") && !strings.HasSuffix(base, "_test.go")
		isC := strings.HasSuffix(base, ".c") && base != GeneratedC
		if !isGo && !isC {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return impl, err
		}
		if isGo {
			for _, m := range exportRE.FindAllSubmatch(b, -1) {
				impl.Go[string(m[1])] = true
			}
		} else {
			for _, m := range cdefRE.FindAllSubmatch(b, -1) {
				if !bytes.HasSuffix(bytes.TrimSpace(m[0]), []byte(");")) {
					impl.C[string(m[1])] = true
				}
			}
			for _, m := range toIntRE.FindAllSubmatch(b, -1) {
				impl.C["MPI_"+string(m[1])+"_toint"] = true
				impl.C["MPI_"+string(m[1])+"_fromint"] = true
			}
		}
	}
	return impl, nil
}

// Generated file names.
const (
	GeneratedC     = "abi_gen.c"   // in cabi/
	GeneratedGo    = "abi_gen.go"  // in cabi/
	GeneratedAlias = "alias_gen.h" // in cabi/
)

const banner = "Generated by cabi/internal/abi (go test ./cabi/internal/abi -update) from its tables; do not edit."

// MPIHeader is include/mpi.h.
func MPIHeader() []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("/* mpi.h: shmpi's C interface, the MPI 5.0 standard ABI (MPI-5.0 chapter 20).\n")
	p(" * A program compiled against it runs on any library of that ABI, and one\n")
	p(" * compiled against another standard-ABI mpi.h runs on shmpi's libmpi_abi.so.\n")
	p(" * ULFM's MPIX_ calls are declared in mpix.h, which this header includes\n")
	p(" * (define SHMPI_NO_MPIX to leave them out).\n *\n * %s */\n\n", banner)
	p("#ifndef SHMPI_MPI_H\n#define SHMPI_MPI_H\n\n#include <stdint.h>\n\n")
	p("#if defined(__cplusplus)\nextern \"C\" {\n#endif\n\n")
	for _, d := range Versions {
		p("#define %-30s %s\n", d.Name, d.Value)
	}
	p("\n/* Addresses and sizes: 64-bit on every platform shmpi runs on. */\n")
	p("typedef intptr_t MPI_Aint;\ntypedef int64_t MPI_Offset;\ntypedef MPI_Offset MPI_Count;\n\n")
	p("/* MPI_SOURCE, MPI_TAG and MPI_ERROR, then five ints of the library's own:\n")
	p(" * shmpi keeps the received byte count in the first two and the\n * cancelled flag in the third. */\n")
	p("typedef struct {\n    int MPI_SOURCE;\n    int MPI_TAG;\n    int MPI_ERROR;\n    int MPI_internal[5];\n} MPI_Status;\n\n")
	p("/* Handles: pointers to incomplete types; the predefined ones are small\n * integers. */\n")
	seen := map[string]bool{}
	for _, h := range Handles {
		if strings.HasPrefix(h.Type, "T_") {
			continue
		}
		if !seen[h.Type] {
			seen[h.Type] = true
			p("\ntypedef struct MPI_ABI_%s *MPI_%s;\n", h.Type, h.Type)
		}
		p("#define %-30s ((MPI_%s)0x%08x)\n", h.Name, h.Type, h.Value)
		for _, a := range Aliases {
			if a.Of == h.Name {
				p("#define %-30s %s\n", a.Name, a.Of)
			}
		}
	}
	for _, g := range Enums {
		if strings.HasPrefix(g.Doc, "MPI_T") {
			continue
		}
		writeEnum(&b, g)
	}
	p("\n")
	for _, d := range Pointers {
		p("#define %-30s %s\n", d.Name, d.Value)
	}
	p("\n")
	for _, c := range Sizes {
		p("#define %-30s %d\n", c.Name, c.Value)
	}
	p("\n#define %-30s ((MPI_Offset)-1)\n\n", "MPI_DISPLACEMENT_CURRENT")
	p("/* Callbacks. */\n")
	for _, c := range Callbacks {
		if strings.HasPrefix(c.Name, "T_") {
			continue
		}
		writeCallback(&b, c)
	}
	for _, a := range CallbackAliases {
		p("typedef %s %s;\n", a.Of, a.Name)
	}
	p("\n")
	for _, f := range FuncPointers {
		p("#define %-30s ((MPI_%s*)0x%x)\n", f.Name, f.Type, f.Value)
	}
	p("\n/* The tool information interface (MPI_T). */\n")
	for _, t := range ToolHandleTypes {
		p("typedef struct MPI_ABI_%s *MPI_%s;\n", t, t)
	}
	for _, h := range Handles {
		if strings.HasPrefix(h.Type, "T_") {
			p("#define %-30s ((MPI_%s)%d)\n", h.Name, h.Type, h.Value)
		}
	}
	for _, g := range Enums {
		if strings.HasPrefix(g.Doc, "MPI_T") {
			writeEnum(&b, g)
		}
	}
	p("\n")
	for _, c := range Callbacks {
		if strings.HasPrefix(c.Name, "T_") {
			writeCallback(&b, c)
		}
	}
	p("\n/* Functions, and their profiling names. */\n")
	for _, prefix := range []string{"MPI_", "PMPI_"} {
		for _, f := range Funcs {
			p("%s;\n", proto(prefix, f))
		}
		p("\n")
	}
	p("#if defined(__cplusplus)\n}\n#endif\n\n")
	p("#if !defined(SHMPI_NO_MPIX)\n#include \"mpix.h\"\n#endif\n\n#endif /* SHMPI_MPI_H */\n")
	return b.Bytes()
}

func writeEnum(b *bytes.Buffer, g EnumGroup) {
	fmt.Fprintf(b, "\n/* %s */\n", g.Doc)
	if g.Type != "" {
		fmt.Fprintf(b, "typedef enum %s {\n", g.Type)
	} else {
		b.WriteString("enum {\n")
	}
	for i, c := range g.Consts {
		sep := ","
		if i == len(g.Consts)-1 {
			sep = ""
		}
		fmt.Fprintf(b, "    %-34s = %d%s\n", c.Name, c.Value, sep)
	}
	if g.Type != "" {
		fmt.Fprintf(b, "} %s;\n", g.Type)
	} else {
		b.WriteString("};\n")
	}
}

func writeCallback(b *bytes.Buffer, c Callback) {
	r := parseType(c.Result)
	fmt.Fprintf(b, "typedef %s (MPI_%s)(%s);\n", r.decl(""), c.Name, paramList(parseParams(c.Params)))
}

// MPIXHeader is include/mpix.h: ULFM as MPICH declares it, with Open MPI's
// names as aliases.
func MPIXHeader() []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("/* mpix.h: shmpi's extensions to the MPI standard ABI: User-Level Failure\n")
	p(" * Mitigation (ULFM) as MPICH and Open MPI spell it. mpi.h includes it.\n *\n * %s */\n\n", banner)
	p("#ifndef SHMPI_MPIX_H\n#define SHMPI_MPIX_H\n\n#include \"mpi.h\"\n\n")
	p("#if defined(__cplusplus)\nextern \"C\" {\n#endif\n\n")
	p("/* This runtime tolerates failures: MPICH's and Open MPI's feature tests. */\n")
	p("#define SHMPI 1\n#define MPIX_ULFM 1\n#define MPICH_HAS_ULFM 1\n\n")
	p("/* Error classes (MPICH's values) and Open MPI's names for them. */\n")
	for _, c := range ULFMClasses {
		p("#define %-30s %d\n", c.Name, c.Value)
	}
	for _, a := range ULFMAliases {
		p("#define %-30s %s\n", a.Name, a.Of)
	}
	p("\n/* The attribute of MPI_COMM_WORLD that tells whether failures are\n * tolerated (shmrun --ft). */\n")
	p("#define %-30s %d\n#define %-30s MPI_FT\n\n", "MPI_FT", FTKeyval, "MPIX_FT")
	for _, prefix := range []string{"MPIX_", "PMPIX_"} {
		for _, f := range ULFMFuncs {
			p("%s;\n", proto(prefix, f))
		}
		p("\n")
	}
	p("#if defined(__cplusplus)\n}\n#endif\n\n#endif /* SHMPI_MPIX_H */\n")
	return b.Bytes()
}

// MPIExtHeader is include/mpi-ext.h, Open MPI's name for its extensions.
func MPIExtHeader() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "/* mpi-ext.h: Open MPI's name for the header of its extensions; shmpi's\n")
	fmt.Fprintf(&b, " * are in mpix.h (ULFM). The feature macro tells ULFM programs written for\n")
	fmt.Fprintf(&b, " * Open MPI that its fault-tolerance extension is present.\n *\n * %s */\n\n", banner)
	b.WriteString("#ifndef SHMPI_MPI_EXT_H\n#define SHMPI_MPI_EXT_H\n\n#include \"mpi.h\"\n#include \"mpix.h\"\n\n")
	b.WriteString("#define OMPI_HAVE_MPI_EXT_FTMPI 1\n#define OMPI_HAVE_MPI_EXT 1\n\n#endif /* SHMPI_MPI_EXT_H */\n")
	return b.Bytes()
}

// AllFuncs is every function the library provides: the ABI's with prefix
// MPI_ and ULFM's with prefix MPIX_.
func AllFuncs() []struct {
	Prefix string
	Func
} {
	var all []struct {
		Prefix string
		Func
	}
	for _, f := range Funcs {
		all = append(all, struct {
			Prefix string
			Func
		}{"MPI_", f})
	}
	for _, f := range ULFMFuncs {
		all = append(all, struct {
			Prefix string
			Func
		}{"MPIX_", f})
	}
	return all
}

// LibraryC is cabi/abi_gen.c: the PMPI_ entry point of every function
// implemented in Go (a call of its export) or not at all (an answer of
// MPI_ERR_UNSUPPORTED_OPERATION through the error handler), and the MPI_
// name of every function, a weak alias of its PMPI_ name, so that
// profiling tools can interpose.
func LibraryC(impl Implemented) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("/* The C entry points of libmpi_abi.so.\n *\n * %s */\n\n", banner)
	p("#include \"cabi.h\"\n#include \"_cgo_export.h\"\n\n")
	var unsupported []string
	for _, f := range AllFuncs() {
		full := f.Prefix + f.Name
		ps := parseParams(f.Params)
		switch {
		case impl.C[full]:
			continue
		case impl.Go[full]:
			var args []string
			for _, q := range ps {
				args = append(args, "("+q.t.goSide()+")"+q.name)
			}
			p("%s\n{\n    return shmpi_%s(%s);\n}\n\n", proto("P"+f.Prefix, f.Func), full, strings.Join(args, ", "))
		default:
			unsupported = append(unsupported, full)
			p("%s\n{\n", proto("P"+f.Prefix, f.Func))
			kind, h := "SHMPI_ON_NONE", "0"
			for _, q := range ps {
				if q.t.ptrs == 0 && q.t.arr == "" && (q.t.mpi == "Comm" || q.t.mpi == "Win" || q.t.mpi == "File" || q.t.mpi == "Session") {
					kind, h = "SHMPI_ON_"+strings.ToUpper(q.t.mpi), "(uintptr_t)"+q.name
					break
				}
			}
			for _, q := range ps {
				if !q.dots {
					p("    (void)%s;\n", q.name)
				}
			}
			switch {
			case strings.HasPrefix(f.Name, "T_"):
				p("    return MPI_T_ERR_NOT_SUPPORTED;\n}\n\n")
			case f.Result != "int":
				panic("abi: " + full + " returns " + f.Result + " and must be implemented")
			default:
				p("    return shmpi_unsupported(\"%s\", %s, %s);\n}\n\n", full, kind, h)
			}
		}
	}
	p("/* The MPI_ names (those of the functions written in C are in %s). */\n", GeneratedAlias)
	for _, f := range AllFuncs() {
		if impl.C[f.Prefix+f.Name] {
			continue
		}
		p("extern __typeof__(P%s%s) %s%s __attribute__((weak, alias(\"P%s%s\")));\n", f.Prefix, f.Name, f.Prefix, f.Name, f.Prefix, f.Name)
	}
	p("\n/* The functions answered with MPI_ERR_UNSUPPORTED_OPERATION, for\n * MPI_Abi_get_info and the documentation. */\n")
	p("const char *const shmpi_unsupported_names[] = {\n")
	for _, n := range unsupported {
		p("    \"%s\",\n", n)
	}
	p("    0\n};\n")
	return b.Bytes()
}

// AliasC is cabi/alias_gen.h, which fast.c includes: the MPI_ names of
// the functions it defines (an alias must be in its target's file).
func AliasC(impl Implemented) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "/* The MPI_ names of the functions fast.c defines.\n *\n * %s */\n\n", banner)
	for _, f := range AllFuncs() {
		if impl.C[f.Prefix+f.Name] {
			fmt.Fprintf(&b, "extern __typeof__(P%s%s) %s%s __attribute__((weak, alias(\"P%s%s\")));\n", f.Prefix, f.Name, f.Prefix, f.Name, f.Prefix, f.Name)
		}
	}
	return b.Bytes()
}

// LibraryGo is cabi/abi_gen.go: the ABI's constants for the Go side.
func LibraryGo() []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// %s\n\npackage main\n\n", banner)
	p("// Predefined handles.\nconst (\n")
	for _, h := range Handles {
		if !strings.HasPrefix(h.Type, "T_") {
			p("\t%s = 0x%03x\n", h.Name, h.Value)
		}
	}
	p(")\n\n")
	names := map[string]bool{}
	for _, g := range Enums {
		if strings.HasPrefix(g.Doc, "MPI_T") {
			continue
		}
		p("// %s.\nconst (\n", g.Doc)
		for _, c := range g.Consts {
			if !names[c.Name] {
				names[c.Name] = true
				p("\t%s = %d\n", c.Name, c.Value)
			}
		}
		p(")\n\n")
	}
	p("// ULFM's error classes and the FT attribute key.\nconst (\n")
	for _, c := range ULFMClasses {
		p("\t%s = %d\n", c.Name, c.Value)
	}
	p("\tMPI_FT = %d\n)\n\n", FTKeyval)
	p("// String lengths.\nconst (\n")
	for _, c := range Sizes {
		p("\t%s = %d\n", c.Name, c.Value)
	}
	p(")\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		panic("abi: generated Go does not parse: " + err.Error())
	}
	return out
}

// Outputs maps each generated file, relative to the module root, to its
// content.
func Outputs(root string) (map[string][]byte, error) {
	impl, err := ScanImplemented(filepath.Join(root, "cabi"))
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"include/mpi.h":             MPIHeader(),
		"include/mpix.h":            MPIXHeader(),
		"include/mpi-ext.h":         MPIExtHeader(),
		"cabi/" + GeneratedC:        LibraryC(impl),
		"cabi/" + GeneratedGo:       LibraryGo(),
		"cabi/" + GeneratedAlias:    AliasC(impl),
		"cabi/testdata/unsupported": unsupportedList(impl),
	}, nil
}

func unsupportedList(impl Implemented) []byte {
	var names []string
	for _, f := range AllFuncs() {
		full := f.Prefix + f.Name
		if !impl.C[full] && !impl.Go[full] {
			names = append(names, full)
		}
	}
	sort.Strings(names)
	return []byte(strings.Join(names, "\n") + "\n")
}
