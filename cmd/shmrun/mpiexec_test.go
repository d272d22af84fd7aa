package main

import (
	"reflect"
	"testing"
)

func TestMpiexecArgs(t *testing.T) {
	for _, c := range []struct {
		in, out, env []string
		err          bool
	}{
		{in: []string{"-np", "4", "./a", "-np", "2"}, out: []string{"-n", "4", "./a", "-np", "2"}},
		{in: []string{"--np=3", "--oversubscribe", "./a"}, out: []string{"-n", "3", "./a"}},
		{in: []string{"--with-ft", "ulfm", "-n", "2", "./a"}, out: []string{"--ft", "-n", "2", "./a"}},
		{in: []string{"--with-ft=ulfm", "--mca", "btl", "self,vader", "-x", "A=1", "-genv", "B", "2", "./a"}, out: []string{"--ft", "./a"}, env: []string{"A=1", "B=2"}},
		{in: []string{"--bind-to", "socket", "--map-by", "core", "--timeout", "5s", "./a"}, out: []string{"--bind-to", "core", "--timeout", "5s", "./a"}},
		{in: []string{"--kill", "1@op=3", "--", "./a"}, out: []string{"--kill", "1@op=3", "--", "./a"}},
		{in: []string{"--with-ft", "no", "-np", "2", "./a"}, out: []string{"-n", "2", "./a"}},
		{in: []string{"-np", "4", "--initial-errhandler", "mpi_errors_return", "./a"}, out: []string{"-n", "4", "./a"}, env: []string{"SHMPI_INITIAL_ERRHANDLER=mpi_errors_return"}},
		{in: []string{"--with-ft", "other", "./a"}, err: true},
		{in: []string{"-np"}, err: true},
	} {
		out, env, err := mpiexecArgs(c.in)
		if (err != nil) != c.err {
			t.Errorf("%q: error %v", c.in, err)
			continue
		}
		if c.err {
			continue
		}
		if !reflect.DeepEqual(out, c.out) || !reflect.DeepEqual(env, c.env) {
			t.Errorf("%q: got %q env %q, want %q env %q", c.in, out, env, c.out, c.env)
		}
	}
}
