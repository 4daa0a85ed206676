package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// machine is what the table says about where it was measured. Every field
// is one line of the raw output's header, in the key: value form that
// benchstat reads as configuration (and, being the same for the whole
// file, ignores).
type machine struct {
	NProc  string
	CPU    string
	Kernel string
	FS     string // filesystem of the benchmarks' directory
	Go     string
	// Benchtime is the -benchtime of the timed benchmarks.
	Benchtime string
}

func describe(dir string) machine {
	m := machine{NProc: fmt.Sprint(runtime.NumCPU()), Go: runtime.Version()}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	m.FS = describeFS(dir)
	return m
}

// describeFS names the filesystem holding dir, its mount options, and, for
// ext4, whether it has a journal: on this project's reference machine it
// has none, which changes what an fsync and an inode allocation cost.
func describeFS(dir string) string {
	name, err := fsName(dir)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	dev, opts := mountOf(dir)
	s := name
	if dev != "" {
		s += " on " + dev
	}
	if opts != "" {
		s += " (" + opts + ")"
	}
	if name == "ext4" && dev != "" {
		if hasJournal(dev) {
			s += ", journal"
		} else {
			s += ", no journal"
		}
	}
	return s
}

// mountOf finds the /proc/mounts entry whose mount point is the longest
// prefix of dir.
func mountOf(dir string) (dev, opts string) {
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		abs = dir
	}
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	best := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		mp := fields[1]
		if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > best {
			best, dev, opts = len(mp), fields[0], fields[3]
		}
	}
	return dev, opts
}

// hasJournal reports whether the ext4 on dev runs a jbd2 journal: jbd2
// lists every journal it runs under /proc/fs/jbd2 as <dev>-<inode>.
func hasJournal(dev string) bool {
	base := filepath.Base(dev)
	ents, err := os.ReadDir("/proc/fs/jbd2")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base+"-") {
			return true
		}
	}
	return false
}

func (m machine) rawHeader() string {
	return fmt.Sprintf("nproc: %s\ncpu: %s\nkernel: %s\nfs: %s\ngo: %s\nbenchtime: %s\n", m.NProc, m.CPU, m.Kernel, m.FS, m.Go, m.Benchtime)
}

// machineFromRaw reads the header rawHeader wrote.
func machineFromRaw(b []byte) machine {
	var m machine
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		switch k {
		case "nproc":
			m.NProc = v
		case "cpu":
			if m.CPU == "" {
				m.CPU = v
			}
		case "kernel":
			m.Kernel = v
		case "fs":
			m.FS = v
		case "go":
			m.Go = v
		case "benchtime":
			m.Benchtime = v
		}
	}
	return m
}
