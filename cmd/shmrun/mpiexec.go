package main

import (
	"fmt"
	"os"
	"strings"
)

// mpiexecArgs translates the mpiexec and mpirun flags that test suites'
// run scripts pass (Open MPI's and MPICH's spellings) into shmrun's, so
// that `shmrun` (or a link to it named mpiexec) runs them unchanged:
//
//	-np N, --np N, -c N          -n N
//	--with-ft ulfm, --enable-recovery
//	                             --ft (--with-ft no: without)
//	-initial-errhandler H        the C library's initial error handler
//	-l                           --tag-output
//	-x VAR[=VAL], -genv VAR VAL, -env VAR VAL
//	                             set in the ranks' environment
//	--oversubscribe, --allow-run-as-root, --mca K V, --map-by X,
//	--rank-by X, -H/--host H, --hostfile F, -ppn N ...
//	                             ignored, with a note on stderr
//
// Flags after the program are the program's. It returns the translated
// arguments and the environment settings.
func mpiexecArgs(args []string) ([]string, []string, error) {
	var out, env, ignored []string
	// shmrun's own flags that take a value.
	takesValue := map[string]bool{"n": true, "bind-to": true, "timeout": true, "kill": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			out = append(out, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch name {
		case "np", "c":
			v, err := next()
			if err != nil {
				return nil, nil, err
			}
			out = append(out, "-n", v)
		case "with-ft":
			v, err := next()
			if err != nil {
				return nil, nil, err
			}
			switch v {
			case "ulfm", "mpi":
				out = append(out, "--ft")
			case "no", "none", "disable":
				// Without fault tolerance: shmrun's default.
			default:
				return nil, nil, fmt.Errorf("--with-ft %s: shmpi's fault tolerance is ULFM (--with-ft ulfm, or no)", v)
			}
		case "initial-errhandler":
			// MPI 4.0: the error handler the world and self start with,
			// which the C library reads from the environment.
			v, err := next()
			if err != nil {
				return nil, nil, err
			}
			env = append(env, "SHMPI_INITIAL_ERRHANDLER="+v)
		case "enable-recovery", "disable-auto-cleanup":
			out = append(out, "--ft")
		case "l", "label":
			out = append(out, "--tag-output")
		case "x":
			v, err := next()
			if err != nil {
				return nil, nil, err
			}
			if k, val, ok := strings.Cut(v, "="); ok {
				env = append(env, k+"="+val)
			} // else: exported from shmrun's own environment, as every variable is
		case "genv", "env":
			k, err := next()
			if err != nil {
				return nil, nil, err
			}
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("%s needs a name and a value", a)
			}
			i++
			env = append(env, k+"="+args[i])
		case "oversubscribe", "allow-run-as-root", "use-hwthread-cpus", "report-bindings", "display-map", "verbose", "v":
			ignored = append(ignored, a)
		case "mca", "gmca", "prtemca", "pmixmca":
			if hasVal {
				ignored = append(ignored, a)
				continue
			}
			if i+2 >= len(args) {
				return nil, nil, fmt.Errorf("%s needs a name and a value", a)
			}
			ignored = append(ignored, a+" "+args[i+1]+" "+args[i+2])
			i += 2
		case "map-by", "rank-by", "H", "host", "hosts", "hostfile", "machinefile", "f", "ppn", "npernode", "npersocket", "wdir", "launcher", "bootstrap":
			v, err := next()
			if err != nil {
				return nil, nil, err
			}
			ignored = append(ignored, a+" "+v)
		case "bind-to":
			v, err := next()
			if err != nil {
				return nil, nil, err
			}
			switch v {
			case "hwthread", "cpu", "l3cache", "numa", "socket", "package", "board":
				v = "core" // Open MPI's other levels: shmrun binds to cores
			}
			out = append(out, "--bind-to", v)
		default:
			out = append(out, a)
			if takesValue[name] && !hasVal && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		}
	}
	if len(ignored) > 0 {
		fmt.Fprintf(os.Stderr, "shmrun: ignoring %s (one node, shared memory)\n", strings.Join(ignored, ", "))
	}
	return out, env, nil
}
