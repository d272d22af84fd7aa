// Package readme holds the test that keeps the Go code of README.md and
// docs/*.md compiling (readme_test.go); it has no code of its own.
//
// Every ```go block of those files is either a whole file, which the test
// type-checks and vets as it stands (a program, a package's file or a test
// file), or an excerpt, whose first line names the file that holds the
// whole program:
//
//	// (excerpt of the program in docs/fault-tolerance.md)
//
// An excerpt must appear in one of that file's whole-file blocks, line
// for line (its indentation may be shallower), so that what a reader
// copies from it compiles in its place.
package readme
