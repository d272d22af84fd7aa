package main

import "github.com/shmpi/shmpi/win"

// Windows (one-sided communication) over package win.

type winObj struct {
	w    *win.Win
	errh handle
	eh   *errhObj
}
